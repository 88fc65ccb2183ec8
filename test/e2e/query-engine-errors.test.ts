/**
 * Issue 23, item 1, from the outside: a query the engine fails while it runs leaves the answers after it as
 * they would have been (it once put its column names and types at the head of the next query's results).
 */
import t from 'tap';
import { createEndpoint, hogql, refused, runOk } from '../helpers/endpoints.ts';
import { ok, queryApi } from '../helpers/query-api.ts';
import { post, PROJECT_API_KEY, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

// Capture answers once the events are committed, and a query sees every committed event.
for (const user of ['u1', 'u2']) {
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'signed up', distinct_id: user }),
  );
  if (res.status !== 200) throw new Error(`capture: ${res.status} ${res.text}`);
}

const COUNT = 'SELECT count() FROM events';
/** Fail while the engine runs them: the first once it has written the header (the event is no time). */
const FAILING = [
  'SELECT toDateTime(event) AS t FROM events',
  "SELECT count() FROM events WHERE timestamp < 'abc'",
];

t.test('after a query the engine fails, the next answers are right', async (t) => {
  const before = await ok(w, COUNT);
  t.same([before.results, before.types], [[[2]], ['UInt64']]);
  for (const sql of FAILING) {
    refused(t, await queryApi(w, sql), 400, 'invalid_query', 'query', sql);
    const after = await ok(w, COUNT);
    t.same(
      [after.results, after.columns, after.types],
      [[[2]], ['count()'], ['UInt64']],
      `after ${sql}: its rows, names and types only, the count a JSON number`,
    );
  }
  const wide = await ok(w, 'SELECT toUInt64(7) AS seven, event FROM events ORDER BY distinct_id');
  t.same(wide.results, [
    [7, 'signed up'],
    [7, 'signed up'],
  ]);
});

t.test('an endpoint run after a failed query, and its cached answer, are right', async (t) => {
  await createEndpoint(w, { name: 'counted', query: hogql('SELECT count() AS n FROM events') });
  refused(t, await queryApi(w, FAILING[0]!), 400, 'invalid_query', 'query');
  const run = await runOk(w, 'counted');
  t.same([run.results, run.types, run.is_cached], [[[2]], ['UInt64'], false]);
  refused(t, await queryApi(w, FAILING[0]!), 400, 'invalid_query', 'query');
  const cached = await runOk(w, 'counted');
  t.same([cached.results, cached.types, cached.is_cached], [[[2]], ['UInt64'], true]);
});
