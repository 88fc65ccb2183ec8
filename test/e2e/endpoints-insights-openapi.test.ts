/**
 * The OpenAPI documents of insight endpoints (SPEC §4): for each kind they validate as OpenAPI 3.0, describe
 * the magic variables (the breakdown property; `date_from` / `date_to` as dates), none required, no pages,
 * and a client generated from them by stock tools type-checks and runs each endpoint against this Weir.
 */
import { validate } from '@readme/openapi-parser';
import t from 'tap';
import { createEndpoint, endpointsApi, runOk } from '../helpers/endpoints.ts';
import { generatedClient } from '../helpers/openapi-client.ts';
import { captureAll } from '../helpers/query-api.ts';
import { PERSONAL_API_KEY, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

// Two persons: u1 (Chrome) signs up and pays, u2 (Safari) only signs up; both view pages on two days.
const batch = [
  ['u1', 'signed up', '2020-01-10T10:00:00Z', 'Chrome'],
  ['u1', 'paid', '2020-01-10T11:00:00Z', 'Chrome'],
  ['u1', '$pageview', '2020-01-10T12:00:00Z', 'Chrome'],
  ['u1', '$pageview', '2020-01-11T12:00:00Z', 'Chrome'],
  ['u2', 'signed up', '2020-01-10T10:00:00Z', 'Safari'],
  ['u2', '$pageview', '2020-01-10T12:00:00Z', 'Safari'],
].map(([distinct_id, event, timestamp, $browser]) => ({
  event,
  distinct_id,
  timestamp,
  properties: { $browser },
}));
await captureAll(w, batch);

const RANGE = { date_from: '2020-01-10', date_to: '2020-01-11' };
const QUERIES = {
  'views-by-browser': {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }],
    dateRange: RANGE,
    breakdownFilter: { breakdown: '$browser' },
  },
  'signup-to-paid': {
    kind: 'FunnelsQuery',
    series: [
      { kind: 'EventsNode', event: 'signed up' },
      { kind: 'EventsNode', event: 'paid' },
    ],
    dateRange: RANGE,
  },
  'daily-return': {
    kind: 'RetentionQuery',
    dateRange: RANGE,
    retentionFilter: { period: 'Day', totalIntervals: 2 },
  },
};
for (const [name, query] of Object.entries(QUERIES)) await createEndpoint(w, { name, query });

type RequestSchema = { properties: Record<string, Record<string, unknown>> };
type Doc = {
  paths: Record<string, unknown>;
  components: { schemas: { EndpointRunRequest: RequestSchema; EndpointRunRowsRequest: RequestSchema } };
};

async function openapi(name: string, query = ''): Promise<Doc> {
  const res = await endpointsApi(w, 'GET', `${name}/openapi.json${query}`);
  if (res.status !== 200) throw new Error(`openapi ${name}: ${res.status} ${res.text}`);
  return res.json as Doc;
}

t.test('each kind’s document validates and describes its magic variables', async (t) => {
  for (const name of Object.keys(QUERIES)) {
    for (const query of ['', '?version=1']) {
      const doc = await openapi(name, query);
      const result = await validate(structuredClone(doc) as never);
      t.equal(result.valid, true, `${name}${query}: ${JSON.stringify(result)}`);
      const request = doc.components.schemas.EndpointRunRequest;
      const variables = request.properties['variables'] as {
        properties: Record<string, { type: string; format?: string }>;
        required?: string[];
      };
      const names =
        name === 'views-by-browser' ? ['$browser', 'date_from', 'date_to'] : ['date_from', 'date_to'];
      t.same(Object.keys(variables.properties), names, `${name}: the magic variables`);
      t.equal(variables.properties['date_to']!.format, 'date');
      t.notOk(variables.required, `${name}: none required`);
      t.notOk(request.properties['limit'] ?? request.properties['offset'], `${name}: no pages`);
      const run = Object.keys(doc.paths)[0]!;
      t.same(
        Object.keys(doc.paths),
        [run, `${run}.csv`, `${run}.ndjson`, `${run}.parquet`, `${run}.arrow`],
        `${name}: the run, and each other format's own operation`,
      );
      t.notOk(request.properties['format'], `${name}: the run is JSON`);
      t.same(
        doc.components.schemas.EndpointRunRowsRequest.properties['variables'],
        variables,
        `${name}: a format's operation takes the same variables`,
      );
    }
  }
});

t.test('a client generated from the three documents type-checks and runs each endpoint', async (t) => {
  // One schema for the three: their run paths differ, so their `paths` merge.
  const docs = await Promise.all(Object.keys(QUERIES).map((name) => openapi(name)));
  const merged = { ...docs[0]!, paths: Object.assign({}, ...docs.map((d) => d.paths)) as Doc['paths'] };
  const [trendsPath, funnelPath, retentionPath] = docs.map((d) => Object.keys(d.paths)[0]!);
  const client = await generatedClient<{
    runAll(baseUrl: string, key: string): Promise<Record<string, unknown[][]>>;
  }>(
    t,
    merged,
    `import createClient from 'openapi-fetch';
import type { paths } from './schema.ts';

export async function runAll(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  const trend = await client.POST(${JSON.stringify(trendsPath)}, {
    body: { variables: { $browser: 'Chrome', date_from: '2020-01-11' }, refresh: 'force' },
  });
  const funnel = await client.POST(${JSON.stringify(funnelPath)}, { body: { debug: false } });
  const retention = await client.POST(${JSON.stringify(retentionPath)}, {});
  if (!trend.data || !funnel.data || !retention.data) throw new Error('a run failed');
  const columns: string[] = trend.data.columns;
  // The funnel's table as NDJSON, its operation of its own: an object a row, read as text.
  const ndjson = await client.POST(${JSON.stringify(`${funnelPath}.ndjson`)}, { parseAs: 'text' });
  const funnelRows: string = ndjson.data ?? '';
  return {
    trend: trend.data.results,
    funnel: funnel.data.results,
    retention: retention.data.results,
    columns: [columns],
    funnelNdjson: funnelRows.trimEnd().split('\\n').map((line) => Object.values(JSON.parse(line) as object)),
  };
}

export function wrongAtCompileTime(client: ReturnType<typeof createClient<paths>>) {
  // @ts-expect-error date_from is a date string
  void client.POST(${JSON.stringify(trendsPath)}, { body: { variables: { date_from: 20200111 } } });
  // @ts-expect-error refresh is cache, force or direct
  void client.POST(${JSON.stringify(funnelPath)}, { body: { refresh: 'soon' } });
}
`,
  );
  t.pass('tsc --strict accepts the generated schema and the client');
  const answer = await client.runAll(w.url, PERSONAL_API_KEY);
  t.same(answer['trend'], [[0, '$pageview', 'Chrome', '2020-01-11', 1]], 'the trend, for Chrome from Jan 11');
  t.same(
    answer['funnel']!.map((r) => r.slice(0, 4)),
    [
      [1, 'signed up', 2, 1],
      [2, 'paid', 1, 0.5],
    ],
    'the funnel',
  );
  t.same(answer['retention'], (await runOk(w, 'daily-return')).results, 'the retention, as a plain run');
  t.same(answer['funnelNdjson'], answer['funnel'], 'the funnel as NDJSON: the same rows');
});
