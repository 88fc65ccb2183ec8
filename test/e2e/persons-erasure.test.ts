/**
 * Erasure (SPEC §3, issue 43) as a user meets it, on the embedded store and on a ClickHouse server (the test
 * front): a person deleted with its events and suppressed, persons deleted in bulk by distinct id, and what
 * each reaches — events, the person and its distinct ids, rows set aside, ingestion warnings, a cached
 * answer — with its state readable while it runs and after. Crashes are in persons-erasure-crash.test.ts.
 */
import t, { type Test } from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { createEndpoint, hogql, runOk } from '../helpers/endpoints.ts';
import { startServerWeir } from '../helpers/server-weir.ts';
import { bearer, capture, deletionWhen, personPage, persons, type DeletionJson } from '../helpers/persons.ts';
import { rows as queryRows } from '../helpers/query-api.ts';
import { metricValue } from '../helpers/roles.ts';
import { PROJECT_API_KEY, request, startTestWeir, type TestWeir } from '../helpers/weir.ts';

const ch = await clickHouseForTest();
t.teardown(() => ch.stop());

const count = async (w: TestWeir, where: string): Promise<number> =>
  Number((await queryRows(w, `SELECT count() FROM events WHERE ${where}`))[0]![0]);

async function scenario(t: Test, w: TestWeir): Promise<void> {
  await capture(w, PROJECT_API_KEY, [
    { event: '$pageview', distinct_id: 'anon1', properties: {} },
    {
      event: '$identify',
      distinct_id: 'u1',
      properties: { $anon_distinct_id: 'anon1', $set: { email: 'ann@example.com' } },
    },
    { event: 'bought', distinct_id: 'u1', properties: { price: 10 } },
    { event: 'signed_up', distinct_id: 'u2', properties: { $set: { email: 'bob@example.org' } } },
    { event: 'x', distinct_id: 'u3', properties: {} },
  ]);
  // A merge PostHog refuses (an illegal id) leaves a warning naming u1.
  await capture(w, PROJECT_API_KEY, [
    { event: '$identify', distinct_id: 'u1', properties: { $anon_distinct_id: 'anonymous' } },
  ]);
  // A row of ann's the engine refuses is set aside in the quarantine.
  await w.weir.store.command("ALTER TABLE events ADD CONSTRAINT no_poison CHECK event != 'poison'");
  await capture(w, PROJECT_API_KEY, [{ event: 'poison', distinct_id: 'u1', properties: {} }]);
  await w.weir.store.visible();
  await w.weir.store.command('ALTER TABLE events DROP CONSTRAINT no_poison');
  const held = await request(`${w.url}/api/projects/1/quarantine/`, { headers: bearer() });
  t.equal((held.json as { results: unknown[] }).results.length, 1, 'one row set aside');

  const ann = (await personPage(w, 'distinct_id=u1')).results[0]!;
  t.same(ann.distinct_ids, ['anon1', 'u1']);
  const annEvents = await count(w, "distinct_id IN ('u1', 'anon1')");
  t.equal(annEvents, 4, "ann's events");
  const warned = Number(
    (await queryRows(w, "SELECT count() FROM ingestion_warnings WHERE details LIKE '%u1%'"))[0]![0],
  );
  t.ok(warned >= 1, 'a warning names u1');

  await createEndpoint(w, {
    name: 'ann_events',
    query: hogql("SELECT count() FROM events WHERE distinct_id = 'u1'"),
  });
  const before = await runOk(w, 'ann_events');
  t.same(before.results, [[3]]);
  t.equal((await runOk(w, 'ann_events')).is_cached, true, 'the answer is cached');

  const narrow = (
    (await request(`${w.url}/api/personal_api_keys/`, {
      method: 'POST',
      headers: bearer(),
      body: JSON.stringify({ label: 'reader', scopes: ['person:read'], projects: [1] }),
    }).then((r) => r.json)) as { value: string }
  ).value;
  const denied = await request(`${w.url}/api/projects/1/persons/${ann.id}/`, {
    method: 'DELETE',
    headers: bearer(narrow),
  });
  t.equal(denied.status, 403, 'deleting needs person:write');

  const res = await request(`${w.url}/api/projects/1/persons/${ann.id}/?delete_events=true&suppress=true`, {
    method: 'DELETE',
    headers: bearer(),
  });
  t.equal(res.status, 202, res.text);
  const accepted = res.json as DeletionJson;
  t.match(accepted, { kind: 'persons', person_ids: [ann.id], delete_events: true, suppress: true });
  t.ok(['queued', 'running', 'done'].includes(accepted.status));
  t.equal(res.headers.get('location'), accepted.url, 'Location names its state');

  // Suppressed at once: a new event of u1 is answered 200 and never stored.
  await capture(w, PROJECT_API_KEY, [{ event: 'after', distinct_id: 'u1', properties: {} }]);

  const done = await deletionWhen(w, accepted.id, (d) => d.status === 'done');
  t.match(done.counts, { persons: 1, distinct_ids: 2, events: annEvents, quarantined: 1 });
  t.ok(done.counts!['warnings']! >= 1, 'the warnings that named the person');
  t.equal(done.distinct_id_count, 0);
  t.notMatch(JSON.stringify(done), /anon1|"u1"/, 'the record keeps no erased distinct id');

  t.equal(await count(w, "distinct_id IN ('u1', 'anon1')"), 0, 'its events are gone');
  const [stored] = await w.rows<{ n: string }>(
    "SELECT count() AS n FROM events WHERE distinct_id IN ('u1', 'anon1') SETTINGS apply_deleted_mask = 0",
  );
  t.equal(Number(stored?.n), 0, 'and gone from the parts on disk, not only masked');
  t.equal(await count(w, `person_id = '${ann.id}'`), 0);
  t.equal(await count(w, "distinct_id = 'u2'"), 1, "others' events stay");
  t.same((await personPage(w, 'distinct_id=u1')).results, [], 'the person is gone');
  t.equal((await persons(w, `${ann.id}/`)).status, 404);
  t.same(
    (await personPage(w)).results.map((p) => p.distinct_ids).sort(),
    [['u2'], ['u3']],
    'the others remain',
  );
  const quarantine = await request(`${w.url}/api/projects/1/quarantine/`, { headers: bearer() });
  t.same((quarantine.json as { results: unknown[] }).results, [], 'the row set aside is gone');
  t.same(
    await queryRows(w, 'SELECT count() FROM ingestion_warnings WHERE details LIKE \'%"u1"%\''),
    [[0]],
    'no warning names u1',
  );
  const after = await runOk(w, 'ann_events');
  t.same(after.results, [[0]], 'the cached answer is not served again');
  t.equal(after.is_cached, false);
  const metrics = await request(`${w.url}/metrics`);
  t.equal(
    metricValue(metrics.text, 'weir_capture_events_dropped_total', 'reason="suppressed"'),
    1,
    'the suppressed event is counted',
  );

  // Suppression undone: u1's events are taken again (as a new person's).
  const undo = await request(`${w.url}/api/projects/1/persons/unsuppress/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ distinct_ids: ['u1', 'anon1', 'never'] }),
  });
  t.equal(undo.status, 200, undo.text);
  t.same(undo.json, { unsuppressed: 2 }, 'the two suppressed ids');
  await capture(w, PROJECT_API_KEY, [{ event: 'returned', distinct_id: 'u1', properties: {} }]);
  t.equal(await count(w, "distinct_id = 'u1'"), 1, 'an unsuppressed id captures again');

  // Bulk, by distinct id, keeping the events: bob goes, his events stay, and his id gets a new person later.
  const bulk = await request(`${w.url}/api/projects/1/persons/bulk_delete/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ distinct_ids: ['u2', 'nobody'] }),
  });
  t.equal(bulk.status, 202, bulk.text);
  const bobDone = await deletionWhen(w, (bulk.json as DeletionJson).id, (d) => d.status === 'done');
  t.match(bobDone.counts, { persons: 1, distinct_ids: 1, events: 0 });
  t.equal(await count(w, "distinct_id = 'u2'"), 1, "without delete_events the person's events stay");
  t.same((await personPage(w, 'distinct_id=u2')).results, []);
  await capture(w, PROJECT_API_KEY, [
    { event: 'back', distinct_id: 'u2', properties: { $set: { plan: 'new' } } },
  ]);
  const again = (await personPage(w, 'distinct_id=u2')).results;
  t.equal(again.length, 1, 'a later event of the id makes a new person');
  t.same(again[0]!.properties, { plan: 'new' }, 'with none of the old properties');

  // A person another was merged into: the merged-away person's row (deleted, with its properties) and every
  // version of both ids' links go too, so no older version comes back.
  await capture(w, PROJECT_API_KEY, [
    { event: 'a', distinct_id: 'm1', properties: { $set: { secret: 'merged away' } } },
    { event: 'b', distinct_id: 'm2', properties: {} },
  ]);
  await capture(w, PROJECT_API_KEY, [
    { event: '$identify', distinct_id: 'm2', properties: { $anon_distinct_id: 'm1' } },
  ]);
  const merged = (await personPage(w, 'distinct_id=m1')).results[0]!;
  t.same(merged.distinct_ids, ['m1', 'm2'], 'm1 merged into m2');
  const raw = async (): Promise<number[]> =>
    Promise.all(
      [
        "SELECT count() AS n FROM person_distinct_ids WHERE project_id = 1 AND distinct_id IN ('m1', 'm2')",
        "SELECT count() AS n FROM persons WHERE project_id = 1 AND properties LIKE '%merged away%'",
      ].map(async (sql) => Number((await w.rows<{ n: string }>(sql))[0]!.n)),
    );
  const [links = 0, secrets = 0] = await raw();
  t.ok(links >= 3 && secrets >= 1, `several versions are stored (${links} links, ${secrets} person rows)`);
  const mergedRes = await request(`${w.url}/api/projects/1/persons/${merged.id}/?delete_events=true`, {
    method: 'DELETE',
    headers: bearer(),
  });
  const mergedDone = await deletionWhen(w, (mergedRes.json as DeletionJson).id, (d) => d.status === 'done');
  t.match(mergedDone.counts, { persons: 2, distinct_ids: 2, events: 3 });
  t.same(await raw(), [0, 0], 'no version of their rows is left');
  t.same((await personPage(w, 'distinct_id=m1')).results, []);

  const listed = await request(`${w.url}/api/projects/1/deletions/`, { headers: bearer() });
  t.same(
    (listed.json as { results: DeletionJson[] }).results.map((d) => d.status),
    ['done', 'done', 'done'],
    'the deletions listed, newest first',
  );
  const bad = await request(`${w.url}/api/projects/1/persons/bulk_delete/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ ids: ['not-a-uuid'] }),
  });
  t.equal(bad.status, 400);
  t.match(bad.json, { code: 'invalid_input', attr: 'ids' });
  const empty = await request(`${w.url}/api/projects/1/persons/bulk_delete/`, {
    method: 'POST',
    headers: bearer(),
    body: '{}',
  });
  t.equal(empty.status, 400, 'a bulk deletion of nobody');
}

t.test('on the embedded store', async (t) => {
  const w = await startTestWeir();
  t.teardown(() => w.close());
  await scenario(t, w);
});

t.test('on a ClickHouse server', async (t) => {
  await scenario(t, await startServerWeir(t, ch, 'erasure'));
});
