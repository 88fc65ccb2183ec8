/**
 * Deleting a project (SPEC §3, issue 43) on the embedded store: its key stops at once, it lists nowhere, and
 * its events, persons, groups, warnings, property definitions, endpoints and materializations are erased,
 * durably, while another project's stay whole.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createEndpoint, endpointsApi, hogql } from '../helpers/endpoints.ts';
import { bearer, capture, deletionWhen, type DeletionJson } from '../helpers/persons.ts';
import { PROJECT_API_KEY, post, request, startTestWeir, waitFor } from '../helpers/weir.ts';

t.test('a deleted project is gone, whole, and the others stay', async (t) => {
  const w = await startTestWeir();
  t.teardown(() => w.close());
  const made = await request(`${w.url}/api/projects/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ name: 'doomed' }),
  });
  const doomed = made.json as { id: number; api_token: string };
  const events = [
    { event: 'signed_up', distinct_id: 'd1', properties: { plan: 'pro', $set: { email: 'a@b' } } },
    {
      event: '$groupidentify',
      distinct_id: 'd1',
      properties: { $group_type: 'company', $group_key: 'acme' },
    },
    { event: 'x', distinct_id: '', properties: {} },
  ];
  await capture(w, doomed.api_token, events);
  await capture(w, PROJECT_API_KEY, events);
  await createEndpoint(
    w,
    {
      name: 'signups',
      query: hogql('SELECT count() FROM events'),
      is_materialized: true,
      sync_frequency: '1hour',
    },
    { project: doomed.id },
  );
  await waitFor(
    async () => {
      const e = await endpointsApi(w, 'GET', 'signups/', undefined, { project: doomed.id });
      return (e.json as { materialization: { status: string } }).materialization.status === 'completed'
        ? true
        : undefined;
    },
    60_000,
    'the materialization',
  );
  const objects = join(w.dataDir, 'objects', 'materializations', String(doomed.id));
  t.ok(existsSync(objects) && readdirSync(objects).length > 0, 'the materialization is in object storage');
  const rowsOf = async (project: number): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const table of [
      'events',
      'persons',
      'person_distinct_ids',
      'groups',
      'group_type_mapping',
      'ingestion_warnings',
      'property_definitions',
    ]) {
      const [r] = await w.rows<{ n: string }>(
        `SELECT count() AS n FROM ${table} WHERE project_id = {p:UInt64}`,
        { p: project },
      );
      out[table] = Number(r!.n);
    }
    return out;
  };
  // Property definitions are written within half a second of the events.
  const theirs = await waitFor(
    async () => {
      const r = await rowsOf(doomed.id);
      return Object.values(r).every((n) => n > 0) ? r : undefined;
    },
    10_000,
    'rows of the project in every table',
  );
  const ours = await rowsOf(1);

  const res = await request(`${w.url}/api/projects/${doomed.id}/`, { method: 'DELETE', headers: bearer() });
  t.equal(res.status, 202, res.text);
  const deletion = res.json as DeletionJson;
  t.match(deletion, { kind: 'project', project_id: doomed.id });

  const refused = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: doomed.api_token, event: 'late', distinct_id: 'd1' }),
  );
  t.equal(refused.status, 401, 'its project API key captures nothing from the answer on');
  t.equal((await request(`${w.url}/api/projects/${doomed.id}/`, { headers: bearer() })).status, 404);
  const listed = (await request(`${w.url}/api/projects/`, { headers: bearer() })).json as {
    results: { id: number }[];
  };
  t.notOk(
    listed.results.some((p) => p.id === doomed.id),
    'it lists nowhere',
  );
  t.equal(
    (await endpointsApi(w, 'GET', 'signups/', undefined, { project: doomed.id })).status,
    404,
    'its endpoints are gone',
  );

  const done = await deletionWhen(w, deletion.id, (d) => d.status === 'done', 60_000, doomed.id);
  t.match(done.counts, { events: theirs['events'], persons: 1, distinct_ids: 1 });
  t.same(
    await rowsOf(doomed.id),
    Object.fromEntries(Object.keys(theirs).map((k) => [k, 0])),
    'no row of it is left in any table',
  );
  t.ok(
    !existsSync(objects) ||
      readdirSync(objects, { recursive: true }).every((f) => !String(f).endsWith('.parquet')),
    'its materializations are gone',
  );
  t.same(await rowsOf(1), ours, "the other project's rows are all there");
  t.equal(w.weir.catalog.listEndpoints(doomed.id).length, 0);

  const narrow = (await request(`${w.url}/api/personal_api_keys/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ label: 'r', scopes: ['query:read'], projects: [1] }),
  }).then((r) => r.json)) as { value: string };
  t.equal(
    (await request(`${w.url}/api/projects/1/`, { method: 'DELETE', headers: bearer(narrow.value) })).status,
    403,
    'deleting needs project:write',
  );
});
