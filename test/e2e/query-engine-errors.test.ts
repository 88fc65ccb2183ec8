/**
 * Issue 23, items 1 and 2, from the outside: a query the engine fails while it runs leaves the answers after
 * it as they would have been (it once put its column names and types at the head of the next query's
 * results), and a number variable JSON cannot hold (1e400) is the caller's 400, not a 500, on every path
 * that binds variables.
 */
import t from 'tap';
import { createEndpoint, hogql, refused, runEndpoint, runOk } from '../helpers/endpoints.ts';
import { ok, queryApi, rawQuery } from '../helpers/query-api.ts';
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

/** Variables as JSON text: JSON.stringify would write Infinity as null. */
const PAST_A_DOUBLE = ['1e400', '-1e400', '[1, 1e400]', '[null, -1e400]'];

t.test('a number past what a double holds is a 400 invalid_variable on the query API', async (t) => {
  for (const v of PAST_A_DOUBLE) {
    const body = `{"query": {"kind": "HogQLQuery", "query": "SELECT {variables.v}", "variables": {"v": ${v}}}}`;
    const res = await rawQuery(w, body);
    refused(t, res, 400, 'invalid_variable', 'variables', v);
    t.match((res.json as { detail: string }).detail, /^Variable 'v': .*finite/, `${v}: says which and why`);
  }
  const posthog = `{"query": {"kind": "HogQLQuery", "query": "SELECT {variables.v}", "variables": {"id1": {"code_name": "v", "value": 1e400}}}}`;
  refused(t, await rawQuery(w, posthog), 400, 'invalid_variable', 'variables', "PostHog's shape");
  t.same(
    (await ok(w, 'SELECT {variables.v}', { variables: { v: 1e300 } })).results,
    [[1e300]],
    'a large double',
  );
});

t.test('… and on endpoint runs: POST body, GET query string, declared types', async (t) => {
  await createEndpoint(w, { name: 'echo', query: hogql('SELECT {variables.v} AS v') });
  await createEndpoint(w, {
    name: 'typed',
    query: hogql('SELECT {variables.n} AS n, {variables.l} AS l'),
    variables: { n: { type: 'number' }, l: { type: 'list' } },
  });
  for (const v of PAST_A_DOUBLE) {
    refused(
      t,
      await runEndpoint(w, 'echo', `{"variables": {"v": ${v}}}`),
      400,
      'invalid_variable',
      'variables',
      v,
    );
    const query = `variables=${encodeURIComponent(`{"v": ${v}}`)}`;
    refused(
      t,
      await runEndpoint(w, 'echo', undefined, { method: 'GET', query }),
      400,
      'invalid_variable',
      'variables',
      `GET ${v}`,
    );
  }
  for (const [n, l] of [
    ['1e400', '[1]'],
    ['1', '[1e400]'],
    ['"1e400"', '[1]'],
  ]) {
    const body = `{"variables": {"n": ${n}, "l": ${l}}}`;
    refused(t, await runEndpoint(w, 'typed', body), 400, 'invalid_variable', 'variables', body);
  }
  t.same((await runOk(w, 'typed', { variables: { n: 1e20, l: [1e20] } })).results, [[1e20, [1e20]]]);
});

t.test('a whole number past 2^53 binds as the double it is, not a 500', async (t) => {
  t.same((await ok(w, 'SELECT {variables.v}', { variables: { v: 1e20 } })).results, [[1e20]]);
  // 2^60 is an Int64: read back exactly, as a string, since no JavaScript number holds it.
  const big = await ok(w, 'SELECT {variables.v}, {variables.l}', {
    variables: { v: 2 ** 60, l: [1, 2 ** 60] },
  });
  t.same(big.results, [['1152921504606846976', ['1', '1152921504606846976']]]);
  t.same((await runOk(w, 'echo', { variables: { v: -(2 ** 70) } })).results, [[-(2 ** 70)]]);
});
