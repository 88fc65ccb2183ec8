/**
 * Endpoint runs over HTTP (SPEC §4) on a generated dataset: the response fields, variables, version pinning,
 * pages with `hasMore`, debug output, `refresh` with the cache (a new captured event shows after `force`, not
 * from the cache), single flight, the per-project limit (429) and the timeout (504), and the auth matrix.
 */
import t from 'tap';
import { createKey, createProject, rows } from '../helpers/query-api.ts';
import {
  createEndpoint,
  endpointsApi,
  hogql,
  refused,
  refusesStrangers,
  runEndpoint,
  runOk,
  type RunBody,
} from '../helpers/endpoints.ts';
import { countBy, seedDataset, SECRET } from '../helpers/query-dataset.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, post, request, startTestWeir, waitFor } from '../helpers/weir.ts';

// A short query timeout and a limit of two queries per project, so that 504 and 429 can be shown.
const w = await startTestWeir({ WEIR_QUERY_TIMEOUT_SECONDS: '2', WEIR_ENDPOINT_RUN_CONCURRENCY: '2' });
t.teardown(() => w.close());
const p2 = await createProject(w, 'Other team');
const data = await seedDataset(w.weir.store, [1, p2]);
const generated = data.events.filter((e) => e.project === 1 && e.properties['generated'] === true);

const RUN_KEYS = [
  'columns',
  'endpoint_materialized',
  'endpoint_materialized_at',
  'endpoint_version',
  'hasMore',
  'is_cached',
  'last_refresh',
  'name',
  'results',
  'types',
];
const BY_EVENT = `SELECT event, count() AS n FROM events
  WHERE properties.generated = 'true' AND properties.$browser = {variables.browser}
  GROUP BY event ORDER BY event`;

await createEndpoint(w, {
  name: 'by_event',
  query: hogql(BY_EVENT),
  variables: { browser: { type: 'string' } },
});

t.test('a run answers the fields of SPEC §4 with the right rows, on both forms, POST and GET', async (t) => {
  const expected = countBy(
    generated.filter((e) => e.properties['$browser'] === 'Chrome'),
    (e) => e.event,
  );
  t.ok(expected.length > 1);
  const calls: [string, 'GET' | 'POST', string][] = [
    ['projects', 'POST', 'by_event'],
    ['environments', 'POST', 'by_event'],
    ['projects', 'GET', 'by_event'],
    ['environments', 'GET', 'by_event'],
  ];
  for (const [prefix, method] of calls) {
    const res =
      method === 'POST'
        ? await runEndpoint(w, 'by_event', { variables: { browser: 'Chrome' }, refresh: 'force' }, { prefix })
        : await runEndpoint(w, 'by_event', undefined, {
            prefix,
            method,
            query: `refresh=force&variables=${encodeURIComponent(JSON.stringify({ browser: 'Chrome' }))}`,
          });
    t.equal(res.status, 200, `${prefix} ${method}`);
    t.match(res.headers.get('content-type'), /^application\/json/);
    const body = res.json as RunBody;
    t.same(Object.keys(body).sort(), RUN_KEYS, `${prefix} ${method}: the fields`);
    t.same(body.results, expected, `${prefix} ${method}: the rows`);
    t.same(body.columns, ['event', 'n']);
    t.same(body.types, ['String', 'UInt64']);
    t.match(body, {
      hasMore: false,
      name: 'by_event',
      endpoint_version: 1,
      is_cached: false,
      endpoint_materialized: false,
      endpoint_materialized_at: null,
    });
    t.ok(Math.abs(Date.parse(body.last_refresh) - Date.now()) < 60_000, 'last_refresh is now');
  }
  const slash = await endpointsApi(w, 'POST', 'by_event/run/', { variables: { browser: 'Chrome' } });
  t.equal(slash.status, 200, 'the trailing slash is optional');
  const put = await endpointsApi(w, 'PUT', 'by_event/run', {});
  refused(t, put, 405, 'method_not_allowed', null);
  t.equal(put.headers.get('allow'), 'POST, GET');
  refused(t, await runEndpoint(w, 'nothing_here', {}), 404, 'not_found', null, 'an unknown endpoint');
});

t.test('variables: each required, none unknown, each of its type', async (t) => {
  const missing = await runEndpoint(w, 'by_event', {});
  refused(t, missing, 400, 'missing_variable', 'variables');
  t.equal((missing.json as { detail: string }).detail, "Required variable(s) 'browser' not provided");
  refused(
    t,
    await runEndpoint(w, 'by_event', { variables: { browser: 'x', os: 'y' } }),
    400,
    'unknown_variable',
    'variables',
  );
  refused(
    t,
    await runEndpoint(w, 'by_event', { variables: { browser: 5 } }),
    400,
    'invalid_variable',
    'variables',
    'a number for a string',
  );
  refused(
    t,
    await runEndpoint(w, 'by_event', { variables: 'browser=x' }),
    400,
    'invalid_variable',
    'variables',
  );
  refused(
    t,
    await runEndpoint(w, 'by_event', undefined, { method: 'GET', query: 'variables=%7Bnot%20json' }),
    400,
    'invalid_variable',
    'variables',
    'GET: variables that are not JSON',
  );
  refused(
    t,
    await runEndpoint(w, 'by_event', undefined, { method: 'GET' }),
    400,
    'missing_variable',
    'variables',
    'GET without variables',
  );

  await createEndpoint(w, {
    name: 'typed',
    query: hogql(
      'SELECT {variables.n} + 1 AS n, toString({variables.d}) AS d, {variables.l} AS l, {variables.free} AS free',
    ),
    variables: { n: { type: 'number' }, d: { type: 'date' }, l: { type: 'list' } },
  });
  const ok = await runOk(w, 'typed', { variables: { n: '41', d: '2026-02-03', l: ['a', 'b'], free: true } });
  t.same(
    ok.results,
    [[42, '2026-02-03', ['a', 'b'], true]],
    'declared types convert; an undeclared one is typed by its value',
  );
  refused(
    t,
    await runEndpoint(w, 'typed', { variables: { n: 1, d: '2026-02-30', l: [], free: 1 } }),
    400,
    'invalid_variable',
    'variables',
    'an impossible date',
  );
  t.same(
    (await runOk(w, 'typed', { variables: { n: 1, d: '2026-02-03', l: [], free: 'x' } }, {})).results[0]![0],
    2,
  );
  const viaGet = await runOk(w, 'typed', undefined, {
    method: 'GET',
    query: `variables=${encodeURIComponent(JSON.stringify({ n: 1, d: '2026-01-01', l: [1], free: null }))}`,
  });
  t.same(viaGet.results, [[2, '2026-01-01', [1], null]]);
});

t.test('versions: each runs its own query; an inactive endpoint or version answers 404', async (t) => {
  await createEndpoint(w, { name: 'pinned', query: hogql("SELECT 'one' AS v") });
  await endpointsApi(w, 'PATCH', 'pinned/', { query: hogql("SELECT 'two' AS v") });
  const described = await endpointsApi(w, 'PATCH', 'pinned/', { description: 'still two' });
  t.match(described.json, { current_version: 2 }, 'a description keeps the version');
  t.match(await runOk(w, 'pinned', {}), { results: [['two']], endpoint_version: 2 }, 'the newest by default');
  t.match(await runOk(w, 'pinned', { version: 1 }), { results: [['one']], endpoint_version: 1 });
  t.match(await runOk(w, 'pinned', { version: 2 }), { results: [['two']], endpoint_version: 2 });
  t.match(await runOk(w, 'pinned', undefined, { method: 'GET', query: 'version=1' }), { results: [['one']] });
  t.match(await runOk(w, 'pinned', {}, { query: 'version=1' }), { results: [['one']] }, 'POST with ?version');
  refused(t, await runEndpoint(w, 'pinned', { version: 3 }), 404, 'not_found', 'version');
  refused(t, await runEndpoint(w, 'pinned', { version: 0 }), 400, 'invalid_input', 'version');
  refused(
    t,
    await runEndpoint(w, 'pinned', { version: 1 }, { query: 'version=1' }),
    400,
    'invalid_input',
    'version',
    'twice',
  );

  await endpointsApi(w, 'PATCH', 'pinned/?version=1', { is_active: false });
  refused(
    t,
    await runEndpoint(w, 'pinned', { version: 1 }),
    404,
    'not_found',
    'version',
    'an inactive version',
  );
  t.match(await runOk(w, 'pinned', {}), { results: [['two']] }, 'the other version still runs');
  await endpointsApi(w, 'PATCH', 'pinned/', { is_active: false });
  refused(t, await runEndpoint(w, 'pinned', {}), 404, 'not_found', null, 'an inactive endpoint');
  refused(
    t,
    await runEndpoint(w, 'pinned', { version: 2 }),
    404,
    'not_found',
    null,
    'an inactive endpoint, any version',
  );
  await endpointsApi(w, 'PATCH', 'pinned/', { is_active: true });
  t.match(await runOk(w, 'pinned', {}), { results: [['two']] }, 'active again');
});

t.test("limit and offset page the result; the query's own LIMIT stays the ceiling", async (t) => {
  await createEndpoint(w, {
    name: 'ten',
    query: hogql('SELECT arrayJoin(range(10)) AS n ORDER BY n LIMIT 7'),
  });
  const page = async (body: Record<string, unknown>) => {
    const r = await runOk(w, 'ten', body);
    return [r.results.map((row) => row[0]), r.hasMore];
  };
  t.same(await page({}), [[0, 1, 2, 3, 4, 5, 6], false], 'no page: every row up to LIMIT 7');
  t.same(await page({ limit: 3 }), [[0, 1, 2], true]);
  t.same(await page({ limit: 3, offset: 3 }), [[3, 4, 5], true]);
  t.same(await page({ limit: 3, offset: 6 }), [[6], false], 'LIMIT 7 ends the last page');
  t.same(await page({ limit: 4, offset: 3 }), [[3, 4, 5, 6], false], 'exactly the rest: no more');
  t.same(await page({ limit: 100 }), [[0, 1, 2, 3, 4, 5, 6], false], 'a larger limit does not lift LIMIT 7');
  t.same(await page({ offset: 5 }), [[5, 6], false]);
  t.same(await page({ offset: 9, limit: 2 }), [[], false]);
  t.same(await page({ limit: 0 }), [[], true]);

  await createEndpoint(w, {
    name: 'wrapped',
    query: hogql('SELECT arrayJoin(range({variables.k})) AS n ORDER BY n LIMIT {variables.k} - 1'),
  });
  const wrapped = await runOk(w, 'wrapped', { variables: { k: 6 }, limit: 2, offset: 3, debug: true });
  t.same(wrapped.results, [[3], [4]]);
  t.equal(wrapped.hasMore, false, 'LIMIT k - 1 = 5 rows: 3 and 4 are the last');
  t.match(wrapped.hogql, /^SELECT \* FROM \(SELECT .* LIMIT 6 - 1\) LIMIT 3 OFFSET 3$/);
  await createEndpoint(w, { name: 'union', query: hogql('SELECT 1 AS n UNION ALL SELECT 2 AS n') });
  t.match(await runOk(w, 'union', { limit: 1 }), { hasMore: true });
  t.equal((await runOk(w, 'union', { limit: 1 })).results.length, 1);

  refused(t, await runEndpoint(w, 'ten', { limit: -1 }), 400, 'invalid_input', 'limit');
  refused(t, await runEndpoint(w, 'ten', { limit: 50_001 }), 400, 'invalid_input', 'limit');
  refused(t, await runEndpoint(w, 'ten', { limit: 1.5 }), 400, 'invalid_input', 'limit');
  refused(t, await runEndpoint(w, 'ten', { offset: -3 }), 400, 'invalid_input', 'offset');
  refused(
    t,
    await runEndpoint(w, 'ten', undefined, { method: 'GET', query: 'limit=abc' }),
    400,
    'invalid_input',
    'limit',
  );
  t.same((await runOk(w, 'ten', undefined, { method: 'GET', query: 'limit=2&offset=1' })).results, [
    [1],
    [2],
  ]);
});

t.test('debug adds hogql (what ran, values inlined), clickhouse and timings', async (t) => {
  const body = await runOk(w, 'by_event', { variables: { browser: "Chr'ome" }, debug: true, limit: 5 });
  t.same(Object.keys(body).sort(), [...RUN_KEYS, 'clickhouse', 'hogql', 'timings'].sort());
  t.match(body.hogql, /properties\.\$browser = 'Chr\\'ome'/);
  t.match(body.hogql, /LIMIT 6$/, 'the page as it ran: one row more than the limit');
  t.match(body.clickhouse, /\{var_browser:String\}/);
  t.notMatch(body.clickhouse, /Chr/, 'values are parameters, never SQL');
  t.ok(body.timings!.some((x) => x.k === './clickhouse'));
  const cached = await runOk(w, 'by_event', { variables: { browser: "Chr'ome" }, debug: true, limit: 5 });
  t.equal(cached.is_cached, true);
  t.equal(cached.hogql, body.hogql, 'a cached answer shows the query that made it');
  t.ok(cached.timings!.some((x) => x.k === './cache'));
  const plain = await runOk(w, 'by_event', { variables: { browser: 'Chrome' }, debug: false });
  t.same(Object.keys(plain).sort(), RUN_KEYS);
  t.equal(
    (
      await runOk(w, 'by_event', undefined, {
        method: 'GET',
        query: `debug=true&variables=${encodeURIComponent('{"browser":"x"}')}`,
      })
    ).hogql !== undefined,
    true,
    'GET takes debug=true',
  );
});

t.test('refresh, unknown fields', async (t) => {
  refused(t, await runEndpoint(w, 'ten', { refresh: 'direct' }), 400, 'direct_not_materialized', 'refresh');
  refused(
    t,
    await runEndpoint(w, 'ten', undefined, { method: 'GET', query: 'refresh=direct' }),
    400,
    'direct_not_materialized',
    'refresh',
  );
  refused(t, await runEndpoint(w, 'ten', { refresh: 'always' }), 400, 'invalid_input', 'refresh');
  refused(t, await runEndpoint(w, 'ten', { refesh: 'force' }), 400, 'unknown_field', 'refesh');
  refused(t, await runEndpoint(w, 'ten', { filters_override: {} }), 400, 'unknown_field', 'filters_override');
  refused(
    t,
    await runEndpoint(w, 'ten', undefined, { method: 'GET', query: 'x=1' }),
    400,
    'unknown_field',
    'x',
  );
  refused(t, await runEndpoint(w, 'ten', { debug: 'yes' }), 400, 'invalid_input', 'debug');
  refused(t, await runEndpoint(w, 'ten', '[]'), 400, 'invalid_payload', null);
});

t.test('cache: served while young, force recomputes, a new event shows after force only', async (t) => {
  await createEndpoint(w, {
    name: 'probe',
    query: hogql(
      "SELECT count() AS n FROM events WHERE event = 'cache probe' AND distinct_id = {variables.who}",
    ),
    cache_age_seconds: 3600,
  });
  const capture = async () => {
    const res = await post(
      `${w.url}/i/v0/e/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, event: 'cache probe', distinct_id: 'prober' }),
    );
    t.equal(res.status, 200, 'captured');
  };
  await capture();
  const count = "SELECT count() FROM events WHERE event = 'cache probe'";
  await waitFor(async () => ((await rows(w, count))[0]![0] === 1 ? true : undefined), 10_000, 'the event');

  const first = await runOk(w, 'probe', { variables: { who: 'prober' } });
  t.match(first, { results: [[1]], is_cached: false });
  const second = await runOk(w, 'probe', { variables: { who: 'prober' } });
  t.match(second, { results: [[1]], is_cached: true, last_refresh: first.last_refresh });
  t.match(
    await runOk(w, 'probe', { variables: { who: 'other' } }),
    { results: [[0]], is_cached: false },
    'other variables',
  );
  t.match(
    await runOk(w, 'probe', { variables: { who: 'prober' }, limit: 5 }),
    { is_cached: false },
    'another page',
  );

  await capture();
  await waitFor(
    async () => ((await rows(w, count))[0]![0] === 2 ? true : undefined),
    10_000,
    'the second event',
  );
  t.match(
    await runOk(w, 'probe', { variables: { who: 'prober' } }),
    { results: [[1]], is_cached: true },
    'the cache: not yet',
  );
  const forced = await runOk(w, 'probe', { variables: { who: 'prober' }, refresh: 'force' });
  t.match(forced, { results: [[2]], is_cached: false }, 'force: the new event');
  t.ok(forced.last_refresh >= first.last_refresh);
  t.match(
    await runOk(w, 'probe', { variables: { who: 'prober' } }),
    { results: [[2]], is_cached: true },
    'force refreshed the cache',
  );

  await endpointsApi(w, 'PATCH', 'probe/', { description: 'changed' });
  t.match(
    await runOk(w, 'probe', { variables: { who: 'prober' } }),
    { is_cached: false },
    'a change of the endpoint drops its cache',
  );

  await endpointsApi(w, 'PATCH', 'probe/', { cache_age_seconds: 1 });
  await runOk(w, 'probe', { variables: { who: 'prober' } });
  const stale = await waitFor(
    async () => {
      const r = await runOk(w, 'probe', { variables: { who: 'prober' } });
      return r.is_cached ? undefined : r;
    },
    10_000,
    'the cached result to age past 1 s',
  );
  t.equal(stale.is_cached, false, 'older than cache_age_seconds: computed again');

  await createEndpoint(w, { name: 'uncached', query: hogql('SELECT 1'), cache_age_seconds: 0 });
  await runOk(w, 'uncached');
  t.equal((await runOk(w, 'uncached')).is_cached, false, 'cache_age_seconds 0: never from the cache');
});

t.test('a repeated cached run is answered again only while what it was worked out from holds', async (t) => {
  // Repeated identical requests are answered from a memo of the request's bytes (response-memo.ts); each
  // change below must reach the next identical request as it would without the memo.
  await createEndpoint(w, {
    name: 'remembered',
    query: hogql('SELECT count() AS n FROM events WHERE event != {variables.e}'),
    cache_age_seconds: 3600,
  });
  const reader = await createKey(w, { scopes: ['endpoint:read'], projects: [1] });
  const body = { variables: { e: 'nothing' } };
  const same = () => runEndpoint(w, 'remembered', body, { key: reader.value });
  const getSame = () =>
    runEndpoint(w, 'remembered', undefined, {
      key: reader.value,
      method: 'GET',
      query: `variables=${encodeURIComponent(JSON.stringify(body.variables))}`,
    });
  t.match((await same()).json, { is_cached: false });
  const cached = await same();
  t.match(cached.json, { is_cached: true });
  const again = await same();
  t.equal(again.text, cached.text, 'the same bytes again');
  t.equal((await getSame()).status, 200);
  t.equal((await getSame()).text, cached.text, 'GET: the same cached answer');

  const forced = await runOk(w, 'remembered', { ...body, refresh: 'force' }, { key: reader.value });
  const afterForce = (await same()).json as RunBody;
  t.match(afterForce, { is_cached: true, last_refresh: forced.last_refresh }, 'force: the new result');

  const elsewhere = await createKey(w, { scopes: ['*'], projects: [p2] });
  refused(
    t,
    await runEndpoint(w, 'remembered', body, { key: elsewhere.value }),
    403,
    'project_forbidden',
    null,
  );

  await endpointsApi(w, 'PATCH', 'remembered/', { is_active: false });
  refused(t, await same(), 404, 'not_found', null, 'deactivated: the same request is refused');
  refused(t, await getSame(), 404, 'not_found', null, 'deactivated: GET too');
  await endpointsApi(w, 'PATCH', 'remembered/', { is_active: true });
  t.match((await same()).json, { is_cached: false }, 'active again: computed afresh');
  t.match((await same()).json, { is_cached: true });

  const revoke = await request(`${w.url}/api/personal_api_keys/${reader.id}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
  });
  t.equal(revoke.status, 204);
  refused(t, await same(), 401, 'authentication_failed', null, 'revoked: the same request is refused');
  refused(t, await getSame(), 401, 'authentication_failed', null, 'revoked: GET too');

  t.match(await runOk(w, 'remembered', body), { is_cached: true }, "another key's run shares the result");
  await endpointsApi(w, 'DELETE', 'remembered/');
  refused(t, await runEndpoint(w, 'remembered', body), 404, 'not_found', null, 'deleted');
});

// The slow query runs until the 2 s limit stops it: 2e10 rows, ~16 s of engine time on this project's VM
// (a 1e9-row version finished in 0.8 s there, under the limit, once the VM got faster).
const SLOW = `SELECT count() FROM (SELECT arrayJoin(range(1000)) AS a) ARRAY JOIN range(1000) AS b
  ARRAY JOIN range(1000) AS c ARRAY JOIN range(20) AS d WHERE cityHash64(a, b, c, d) = {variables.k}`;

t.test(
  'single flight: identical concurrent runs execute once (past the limit of 2, none is refused)',
  async (t) => {
    await createEndpoint(w, {
      name: 'shared',
      query: hogql('SELECT count() FROM events WHERE event != {variables.e}'),
    });
    const runs = await Promise.all(
      Array.from({ length: 12 }, () => runEndpoint(w, 'shared', { variables: { e: 'x' } })),
    );
    t.same(
      runs.map((r) => r.status),
      Array<number>(12).fill(200),
    );
    const bodies = runs.map((r) => r.json as RunBody);
    t.equal(new Set(bodies.map((b) => b.last_refresh)).size, 1, 'one computation');
    t.equal(new Set(bodies.map((b) => JSON.stringify(b.results))).size, 1);
  },
);

t.test('per-project limit: 429 throttled with Retry-After; the timeout: 504', async (t) => {
  await createEndpoint(w, { name: 'slow', query: hogql(SLOW) });
  await createEndpoint(w, { name: 'quick', query: hogql('SELECT 1') }, { project: p2 });
  const started = Date.now();
  const runs = Promise.all([1, 2, 3].map((k) => runEndpoint(w, 'slow', { variables: { k } })));
  // Another project's limit is its own. (Its query still waits for the store, which runs one at a time:
  // behind two slow ones it may reach the deadline.)
  const other = await runEndpoint(w, 'quick', {}, { project: p2 });
  const [a, b, c] = await runs;
  t.not(other.status, 429, "another project's run is not throttled");
  const statuses = [a!, b!, c!].map((r) => r.status).sort();
  t.same(statuses, [429, 504, 504]);
  for (const r of [a!, b!, c!]) {
    if (r.status === 429) {
      refused(t, r, 429, 'throttled', null);
      t.equal(r.headers.get('retry-after'), '1');
    } else {
      refused(t, r, 504, 'timeout', null);
      t.match((r.json as { detail: string }).detail, /2 s/);
    }
  }
  t.ok(Date.now() - started < 30_000);
  t.match(
    await runOk(w, 'by_event', { variables: { browser: 'Safari' } }),
    { is_cached: false },
    'slots are free again',
  );
});

t.test('auth: no key, unknown key, another project, a key without endpoint:read', async (t) => {
  const writer = await createKey(w, { scopes: ['endpoint:write', 'query:read'], projects: [1] });
  const reader = await createKey(w, { scopes: ['endpoint:read'], projects: [1] });
  const elsewhere = await createKey(w, { scopes: ['*'], projects: [p2] });
  for (const prefix of ['projects', 'environments']) {
    for (const method of ['GET', 'POST'] as const) {
      const label = `${prefix} ${method}`;
      const call = (key: string) =>
        runEndpoint(w, 'ten', method === 'POST' ? {} : undefined, { prefix, method, key });
      await refusesStrangers(t, call, elsewhere.value, label);
      refused(t, await call(writer.value), 403, 'missing_scope', null, `${label}: no endpoint:read`);
      t.equal((await call(reader.value)).status, 200, `${label}: endpoint:read`);
    }
  }
});

t.test("a run sees only its project's data", async (t) => {
  await createEndpoint(
    w,
    { name: 'everything', query: hogql('SELECT distinct_id FROM events ORDER BY distinct_id') },
    { project: p2 },
  );
  const theirs = await runOk(w, 'everything', {}, { project: p2 });
  t.ok(
    theirs.results.length > 0 &&
      theirs.results.every((r) => String(r[0]).includes(SECRET) || !String(r[0]).startsWith('u')),
  );
  refused(
    t,
    await runEndpoint(w, 'everything', {}),
    404,
    'not_found',
    null,
    'project 1 has no such endpoint',
  );
  await createEndpoint(w, { name: 'everything', query: hogql('SELECT distinct_id FROM events') });
  const ours = await runOk(w, 'everything', {});
  t.notOk(JSON.stringify(ours.results).includes(SECRET), "no row of project 2's");
});
