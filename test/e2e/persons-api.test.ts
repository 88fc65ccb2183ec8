/**
 * The persons API (SPEC §3) as a user meets it, on the embedded store and on a ClickHouse server (the test
 * front over chDB): persons made by capture — identified, merged, anonymous, in two projects — listed by
 * distinct id, email, search and property filters, a page at a time, one by uuid, and scoped keys refused.
 */
import t, { type Test } from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { startServerWeir } from '../helpers/server-weir.ts';
import { bearer, capture, personPage, persons, type PersonJson } from '../helpers/persons.ts';
import { rows as queryRows } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, request, startTestWeir, type TestWeir } from '../helpers/weir.ts';

const ch = await clickHouseForTest();
t.teardown(() => ch.stop());

async function scenario(t: Test, w: TestWeir): Promise<void> {
  // Project 2 with a person of the same distinct id as one of project 1's.
  const made = await request(`${w.url}/api/projects/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ name: 'other' }),
  });
  t.equal(made.status, 201, made.text);
  const other = made.json as { id: number; api_token: string };

  await capture(w, PROJECT_API_KEY, [
    { event: '$pageview', distinct_id: 'anon1', timestamp: '2026-11-01T10:00:00Z', properties: {} },
    {
      event: '$identify',
      distinct_id: 'u1',
      timestamp: '2026-11-01T10:01:00Z',
      properties: {
        $anon_distinct_id: 'anon1',
        $set: { email: 'ann@example.com', name: 'Ann', plan: 'pro', age: 31, beta: true },
      },
    },
  ]);
  await capture(w, PROJECT_API_KEY, [
    {
      event: 'signed_up',
      distinct_id: 'u2',
      timestamp: '2026-11-02T10:00:00Z',
      properties: { $set: { email: 'bob@example.org', plan: 'free' } },
    },
    { event: '$pageview', distinct_id: 'anon3', timestamp: '2026-11-03T10:00:00Z', properties: {} },
  ]);
  await capture(w, other.api_token, [
    {
      event: 'x',
      distinct_id: 'u1',
      timestamp: '2026-11-04T10:00:00Z',
      properties: { $set: { email: 'z@z' } },
    },
  ]);

  const all = await personPage(w);
  t.same(
    all.results.map((p) => p.distinct_ids),
    [['anon3'], ['u2'], ['anon1', 'u1']],
    "project 1's persons, newest first, each with every distinct id",
  );
  t.equal(all.next, null);
  t.equal(all.previous, null);
  const ann = all.results[2]!;
  t.match(ann, {
    uuid: ann.id,
    name: 'ann@example.com',
    properties: { email: 'ann@example.com', name: 'Ann', plan: 'pro', age: 31, beta: true },
    is_identified: true,
  });
  t.match(ann.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  t.ok(Number.isFinite(Date.parse(ann.created_at)), 'created_at is a date');
  t.equal(all.results[0]!.name, 'anon3', "an anonymous person's name is its distinct id");

  const only = async (query: string): Promise<string[][]> =>
    (await personPage(w, query)).results.map((p: PersonJson) => p.distinct_ids);
  t.same(await only('distinct_id=anon1'), [['anon1', 'u1']], 'by a merged distinct id');
  t.same(await only('distinct_id=nobody'), [], 'by a distinct id nobody has');
  t.same(await only('email=bob%40example.org'), [['u2']], 'by email');
  t.same(await only('search=EXAMPLE.COM'), [['anon1', 'u1']], 'search: part of an email, any case');
  t.same(await only('search=ann'), [['anon1', 'u1']], 'search: part of a name');
  t.same(await only('search=u2'), [['u2']], 'search: a distinct id');
  t.same(await only(`search=${ann.id}`), [['anon1', 'u1']], 'search: a uuid');
  const filter = (f: unknown): string => `properties=${encodeURIComponent(JSON.stringify(f))}`;
  t.same(await only(filter([{ key: 'plan', value: 'pro' }])), [['anon1', 'u1']], 'a property equal');
  t.same(await only(filter([{ key: 'age', value: 31 }])), [['anon1', 'u1']], 'a number property');
  t.same(await only(filter([{ key: 'beta', value: true, operator: 'exact' }])), [['anon1', 'u1']]);
  t.same(await only(filter([{ key: 'plan', value: ['pro', 'free'] }])), [['u2'], ['anon1', 'u1']]);
  t.same(await only(filter([{ key: 'plan', value: 'pro', operator: 'is_not' }])), [['anon3'], ['u2']]);
  t.same(await only(filter([{ key: 'email', operator: 'is_not_set' }])), [['anon3']]);
  t.same(await only(filter([{ key: 'email', value: 'EXAMPLE', operator: 'icontains' }])), [
    ['u2'],
    ['anon1', 'u1'],
  ]);
  t.same(
    await only(
      filter([
        { key: 'email', operator: 'is_set' },
        { key: 'plan', value: 'free' },
      ]),
    ),
    [['u2']],
    'filters are ANDed',
  );
  const bad = await persons(w, `?${filter([{ key: 'plan', operator: 'gt', value: 1 }])}`);
  t.equal(bad.status, 400, 'an operator the persons API does not take');
  t.match(bad.json, { code: 'invalid_input', attr: 'properties' });

  const first = await personPage(w, 'limit=2');
  t.same(
    first.results.map((p) => p.distinct_ids),
    [['anon3'], ['u2']],
    'a page of two',
  );
  t.ok(first.next, 'with a next page');
  const next = await request(first.next!, { headers: bearer() });
  t.equal(next.status, 200, 'next is a URL that answers');
  const second = next.json as { results: PersonJson[]; next: string | null; previous: string | null };
  t.same(
    second.results.map((p) => p.distinct_ids),
    [['anon1', 'u1']],
  );
  t.equal(second.next, null, 'the last page has no next');
  t.ok(second.previous, 'and a previous page');

  const one = await persons(w, `${ann.id}/`);
  t.equal(one.status, 200, one.text);
  t.same(one.json, ann, 'one person by uuid, as the listing shows it');
  t.equal((await persons(w, `${ann.id.toUpperCase()}/`)).status, 200, 'a uuid in capitals');
  t.match(await persons(w, '00000000-0000-4000-8000-000000000000/').then((r) => r.json), {
    code: 'not_found',
  });
  t.equal((await persons(w, 'not-a-uuid/')).status, 404);
  t.equal((await persons(w, `${ann.id}/`, { project: other.id })).status, 404, 'not in another project');

  const theirs = await personPage(w, '', other.id);
  t.same(
    theirs.results.map((p) => [p.distinct_ids, p.properties]),
    [[['u1'], { email: 'z@z' }]],
  );

  // A person's events are read through the query API.
  t.same(await queryRows(w, `SELECT count() FROM events WHERE person_id = '${ann.id}'`), [[2]]);

  const key = await request(`${w.url}/api/personal_api_keys/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ label: 'queries', scopes: ['query:read'], projects: [1] }),
  });
  const narrow = (key.json as { value: string }).value;
  const refused = await persons(w, '', { key: narrow });
  t.equal(refused.status, 403, 'a key without person:read');
  t.match(refused.json, { code: 'missing_scope' });
  t.equal((await persons(w, '', { key: narrow, project: other.id })).status, 403, 'a project the key lacks');
  t.equal((await persons(w, '', { key: '' })).status, 401);
}

t.test('on the embedded store', async (t) => {
  const w = await startTestWeir();
  t.teardown(() => w.close());
  await scenario(t, w);
});

t.test('on a ClickHouse server', async (t) => {
  await scenario(t, await startServerWeir(t, ch, 'persons_api'));
});
