/**
 * Materialized endpoints end to end (SPEC §4): a version is marked materialized, its state goes pending →
 * completed with rows, bytes and a time; runs are then answered from the materialization (the same rows
 * as a direct run, `endpoint_materialized`, `hogql` over `materialized.<name>_v<n>`); `refresh: "direct"`
 * goes to the raw data; `POST …/materialize` refreshes it; an insight materializes with its breakdown.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createEndpoint, endpointsApi, refused, runEndpoint, runOk } from '../helpers/endpoints.ts';
import { captureAll } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, post, startTestWeir, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const BROWSERS = ['Chrome', 'Firefox', 'Safari'];
const batch = Array.from({ length: 60 }, (_, i) => ({
  event: i % 4 === 0 ? 'signed up' : '$pageview',
  distinct_id: `u${i % 7}`,
  timestamp: new Date(Date.UTC(2020, 0, 10 + (i % 5), i % 24)).toISOString(),
  properties: { $browser: BROWSERS[i % 3], price: i },
}));
await captureAll(w, batch);

interface Shown {
  id: string;
  current_version: number;
  is_materialized: boolean;
  materialization: {
    status: string;
    can_materialize: boolean;
    reason: string | null;
    last_materialized_at: string | null;
    rows: number | null;
    bytes: number | null;
    error: string | null;
  };
}

async function shown(name: string): Promise<Shown> {
  return (await endpointsApi(w, 'GET', `${name}/`)).json as Shown;
}

async function completed(name: string, after: string | null = null): Promise<Shown> {
  return waitFor(
    async () => {
      const e = await shown(name);
      const m = e.materialization;
      return m.status === 'completed' && m.last_materialized_at !== after ? e : undefined;
    },
    30_000,
    `${name} to be materialized`,
  );
}

const SQL = `SELECT properties.$browser AS browser, count() AS n, sum(toFloat64OrZero(properties.price)) AS total
  FROM events WHERE event = {variables.event} AND timestamp >= {variables.since}
  GROUP BY browser ORDER BY browser`;

t.test('a materialized SQL endpoint answers from its materialization, as a direct run does', async (t) => {
  await createEndpoint(w, {
    name: 'by-browser',
    query: { kind: 'HogQLQuery', query: SQL },
    variables: { event: { type: 'string' }, since: { type: 'date' } },
    is_materialized: true,
  });
  const e = await completed('by-browser');
  t.equal(e.materialization.can_materialize, true);
  t.ok(e.materialization.rows! > 0, `rows: ${e.materialization.rows}`);
  t.ok(e.materialization.bytes! > 0, `bytes: ${e.materialization.bytes}`);
  t.equal(e.materialization.error, null);
  for (const variables of [
    { event: '$pageview', since: '2020-01-10' },
    { event: '$pageview', since: '2020-01-12' },
    { event: 'signed up', since: '2020-01-13' },
    { event: 'nothing', since: '2020-01-10' },
  ]) {
    const direct = await runOk(w, 'by-browser', { variables, refresh: 'direct' });
    const materialized = await runOk(w, 'by-browser', { variables, refresh: 'force', debug: true });
    t.equal(direct.endpoint_materialized, false, 'direct: raw data');
    t.equal(materialized.endpoint_materialized, true, 'from the materialization');
    t.equal(materialized.endpoint_materialized_at, e.materialization.last_materialized_at);
    t.same(materialized.results, direct.results, `same rows for ${JSON.stringify(variables)}`);
    t.same(materialized.columns, direct.columns);
    t.match(materialized.hogql, /materialized\.by-browser_v1|materialized\.`by-browser_v1`/);
  }
});

t.test(
  'OpenAPI says at which bucket a range variable applies; a materialized insight has no dates',
  async (t) => {
    type Vars = { properties: Record<string, { description?: string }> };
    const variablesOf = async (name: string): Promise<Vars> => {
      const doc = (await endpointsApi(w, 'GET', `${name}/openapi.json`)).json as {
        components: { schemas: { EndpointRunRequest: { properties: { variables: Vars } } } };
      };
      return doc.components.schemas.EndpointRunRequest.properties.variables;
    };
    const sql = await variablesOf('by-browser');
    t.match(sql.properties['since']?.description, /day bucket/);
    t.notOk(sql.properties['event']?.description, 'an equality variable applies as it is');
    await createEndpoint(w, {
      name: 'views-materialized',
      query: {
        kind: 'TrendsQuery',
        series: [{ event: '$pageview' }],
        breakdownFilter: { breakdown: '$browser' },
      },
      is_materialized: true,
    });
    t.same(Object.keys((await variablesOf('views-materialized')).properties), ['$browser']);
  },
);

t.test('POST …/materialize refreshes it: new events show after the refresh', async (t) => {
  const before = (await shown('by-browser')).materialization.last_materialized_at;
  const more = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({
      api_key: PROJECT_API_KEY,
      event: 'signed up',
      distinct_id: 'late',
      timestamp: '2020-01-14T00:00:00Z',
      properties: { $browser: 'Edge' },
    }),
  );
  t.equal(more.status, 200);
  const res = await endpointsApi(w, 'POST', 'by-browser/materialize');
  t.equal(res.status, 202, res.text);
  await completed('by-browser', before);
  const run = await runOk(w, 'by-browser', {
    variables: { event: 'signed up', since: '2020-01-14' },
    refresh: 'force',
  });
  t.equal(run.endpoint_materialized, true);
  t.ok(
    run.results.some((r) => r[0] === 'Edge'),
    'the late event is in the refreshed materialization',
  );
});

t.test(
  'a damaged materialization: runs go to the raw data, the state says so, a refresh repairs it',
  async (t) => {
    await createEndpoint(w, {
      name: 'fragile',
      query: { kind: 'HogQLQuery', query: SQL },
      variables: { event: { type: 'string' }, since: { type: 'date' } },
      is_materialized: true,
    });
    const before = await completed('fragile');
    const dir = join(w.dataDir, 'objects', 'materializations');
    const damaged = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.parquet') && f.includes(before.id),
    );
    t.equal(damaged.length, 1, 'one object holds the result');
    writeFileSync(join(dir, damaged[0]!), 'not parquet at all');
    const variables = { event: '$pageview', since: '2020-01-11' };
    const run = await runOk(w, 'fragile', { variables, refresh: 'force' });
    t.equal(run.endpoint_materialized, false, 'answered from the raw data');
    t.same(run.results, (await runOk(w, 'fragile', { variables, refresh: 'direct' })).results);
    const repaired = await completed('fragile', before.materialization.last_materialized_at).catch(
      async (err: unknown) => {
        throw new Error(`${String(err)}: ${JSON.stringify((await shown('fragile')).materialization)}`);
      },
    );
    t.equal(repaired.materialization.error, null, 'the refresh cleared the error');
    const again = await runOk(w, 'fragile', { variables, refresh: 'force' });
    t.equal(again.endpoint_materialized, true, 'served from the new materialization');
    t.same(again.results, run.results);
  },
);

t.test('what cannot be materialized is refused with the reason', async (t) => {
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'uniques',
      query: {
        kind: 'HogQLQuery',
        query: 'SELECT uniq(person_id) FROM events WHERE timestamp >= {variables.since}',
      },
      variables: { since: { type: 'date' } },
      is_materialized: true,
    }),
    400,
    'cannot_materialize',
    'is_materialized',
  );
  await createEndpoint(w, { name: 'plain', query: { kind: 'HogQLQuery', query: 'SELECT 1' } });
  refused(
    t,
    await endpointsApi(w, 'POST', 'plain/materialize'),
    400,
    'cannot_materialize',
    'is_materialized',
  );
});

t.test('an insight materializes with its breakdown; date variables are refused then', async (t) => {
  await createEndpoint(w, {
    name: 'views',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview' }],
      dateRange: { date_from: '2020-01-09', date_to: '2020-01-15' },
      breakdownFilter: { breakdown: '$browser' },
    },
  });
  const direct = await runOk(w, 'views', { variables: { $browser: 'Safari' } });
  const patched = await endpointsApi(w, 'PATCH', 'views/', { is_materialized: true });
  t.equal(patched.status, 200, patched.text);
  await completed('views');
  const materialized = await runOk(w, 'views', { variables: { $browser: 'Safari' }, refresh: 'force' });
  t.equal(materialized.endpoint_materialized, true);
  t.same(materialized.results, direct.results, 'the same rows as the direct run');
  refused(
    t,
    await runEndpoint(w, 'views', { variables: { date_from: '2020-01-10' } }),
    400,
    'date_variables_unavailable',
    'variables',
  );
});
