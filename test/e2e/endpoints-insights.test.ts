/**
 * Insight endpoints end to end (SPEC §4): events captured over HTTP, TrendsQuery / FunnelsQuery /
 * RetentionQuery endpoints created, updated into new versions, listed, run with their magic variables,
 * cached, debugged and described in OpenAPI, and their refusals.
 */
import { validate } from '@readme/openapi-parser';
import t from 'tap';
import { createEndpoint, endpointsApi, refused, runEndpoint, runOk } from '../helpers/endpoints.ts';
import { captureAll } from '../helpers/query-api.ts';
import { startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

// PostHog's trends fixture (reference §5.1): four persons' pageviews and pageleaves at 12:00 UTC.
const PEOPLE: Record<string, { browser: string; pageviews: number[]; pageleaves: number[] }> = {
  p1: { browser: 'Chrome', pageviews: [11, 12, 13, 15, 17, 19], pageleaves: [11, 12, 13] },
  p2: { browser: 'Firefox', pageviews: [9, 12], pageleaves: [13] },
  p3: { browser: 'Edge', pageviews: [12], pageleaves: [13] },
  p4: { browser: 'Safari', pageviews: [15], pageleaves: [16] },
};
const batch: Record<string, unknown>[] = [];
for (const [id, p] of Object.entries(PEOPLE)) {
  for (const [event, days] of [
    ['$pageview', p.pageviews],
    ['$pageleave', p.pageleaves],
  ] as const) {
    for (const day of days) {
      batch.push({
        event,
        distinct_id: id,
        timestamp: `2020-01-${String(day).padStart(2, '0')}T12:00:00Z`,
        properties: { $browser: p.browser },
      });
    }
  }
}
await captureAll(w, batch);

const RANGE = { date_from: '2020-01-09', date_to: '2020-01-19' };
const DAYS = Array.from({ length: 11 }, (_, i) => `2020-01-${String(9 + i).padStart(2, '0')}`);
const PAGEVIEWS = [1, 0, 1, 3, 1, 0, 2, 0, 1, 0, 1];

const trends = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: '$pageview' }],
  dateRange: RANGE,
  breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
};

await createEndpoint(w, { name: 'pageviews', query: trends });

t.test('a trends endpoint runs: one row per breakdown value and day, zero-filled', async (t) => {
  const body = await runOk(w, 'pageviews');
  t.same(body.columns, ['series_index', 'series', 'breakdown_value', 'date', 'value']);
  t.equal(body.hasMore, false);
  const total = DAYS.map((d) =>
    body.results.filter((r) => r[3] === d).reduce((sum, r) => sum + Number(r[4]), 0),
  );
  t.same(total, PAGEVIEWS, 'the values of each day add up to PostHog’s T1 answer');
  t.same(
    [...new Set(body.results.map((r) => r[2]))],
    ['Chrome', 'Firefox', 'Edge', 'Safari'],
    'breakdown values by their total, highest first, ties by value',
  );
  t.equal(body.results.length, 4 * 11, 'every day of every value');
});

t.test('the breakdown property and date_from / date_to are the magic variables', async (t) => {
  const chrome = await runOk(w, 'pageviews', { variables: { $browser: 'Chrome' } });
  t.same(
    chrome.results.map((r) => [r[2], r[3], r[4]]),
    DAYS.map((d, i) => ['Chrome', d, [0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1][i]]),
  );
  const none = await runOk(w, 'pageviews', { variables: { $browser: '' } });
  t.same(none.results, [], 'no event lacks a browser');
  const dated = await runOk(w, 'pageviews', {
    variables: { $browser: 'Firefox', date_from: '2020-01-12', date_to: '2020-01-13' },
  });
  t.same(
    dated.results.map((r) => [r[3], r[4]]),
    [
      ['2020-01-12', 1],
      ['2020-01-13', 0],
    ],
  );
  const viaGet = await runOk(w, 'pageviews', undefined, {
    method: 'GET',
    query: `variables=${encodeURIComponent(JSON.stringify({ $browser: 'Chrome' }))}`,
  });
  t.same(viaGet.results, chrome.results, 'GET takes the same variables');
});

t.test('bad variables and pages are refused with SPEC codes', async (t) => {
  refused(
    t,
    await runEndpoint(w, 'pageviews', { variables: { browser: 'x' } }),
    400,
    'unknown_variable',
    'variables',
  );
  refused(
    t,
    await runEndpoint(w, 'pageviews', { variables: { date_from: '2020-13-01' } }),
    400,
    'invalid_variable',
    'variables',
  );
  refused(
    t,
    await runEndpoint(w, 'pageviews', { variables: { date_from: '-7d' } }),
    400,
    'invalid_variable',
    'variables',
    'a relative date variable',
  );
  refused(t, await runEndpoint(w, 'pageviews', { limit: 10 }), 400, 'invalid_input', 'limit');
  refused(
    t,
    await runEndpoint(w, 'pageviews', { refresh: 'direct' }),
    400,
    'direct_not_materialized',
    'refresh',
  );
});

t.test('cache, force and debug work as for SQL endpoints', async (t) => {
  const first = await runOk(w, 'pageviews', { refresh: 'force', variables: { $browser: 'Edge' } });
  t.equal(first.is_cached, false);
  const second = await runOk(w, 'pageviews', { variables: { $browser: 'Edge' } });
  t.equal(second.is_cached, true);
  t.same(second.results, first.results);
  const debug = await runOk(w, 'pageviews', {
    debug: true,
    refresh: 'force',
    variables: { $browser: 'Edge' },
  });
  t.match(debug.hogql, /FROM events AS e/, 'hogql: the dialect query the insight became');
  t.match(debug.hogql, /'2020-01-09 00:00:00\.000000'/, 'with the range inlined');
  t.match(debug.hogql, /'Edge'/, 'and the breakdown value');
  t.match(
    debug.clickhouse,
    /\{var_date_from:DateTime64\(6, 'UTC'\)\}/,
    'clickhouse: values as typed parameters',
  );
});

t.test('a changed query makes a new version; each version runs its own', async (t) => {
  const res = await endpointsApi(w, 'PATCH', 'pageviews/', {
    query: { ...trends, series: [{ kind: 'EventsNode', event: '$pageleave' }], breakdownFilter: undefined },
  });
  t.equal(res.status, 200, res.text);
  t.equal((res.json as { current_version: number }).current_version, 2);
  const v2 = await runOk(w, 'pageviews');
  t.same(v2.columns, ['series_index', 'series', 'date', 'value']);
  t.same(
    v2.results.map((r) => r[3]),
    [0, 0, 1, 1, 3, 0, 0, 1, 0, 0, 0],
    'PostHog’s T2 pageleave answer',
  );
  const v1 = await runOk(w, 'pageviews', { version: 1, variables: { $browser: 'Safari' } });
  t.equal(v1.endpoint_version, 1);
  t.equal(v1.results.length, 11);
  const unchanged = await endpointsApi(w, 'PATCH', 'pageviews/', {
    query: { ...trends, series: [{ kind: 'EventsNode', event: '$pageleave' }], breakdownFilter: undefined },
  });
  t.equal(
    (unchanged.json as { current_version: number }).current_version,
    2,
    'the same query: no new version',
  );
  const versions = await endpointsApi(w, 'GET', 'pageviews/versions/');
  t.equal((versions.json as { count: number }).count, 2);
  const list = await endpointsApi(w, 'GET', '');
  t.ok(
    (list.json as { results: { name: string; query: { kind: string } }[] }).results.some(
      (e) => e.name === 'pageviews' && e.query.kind === 'TrendsQuery',
    ),
    'listed with its query',
  );
});

t.test('OpenAPI describes the magic variables, and validates', async (t) => {
  const res = await endpointsApi(w, 'GET', 'pageviews/openapi.json?version=1');
  t.equal(res.status, 200);
  const doc = res.json as {
    components: { schemas: { EndpointRunRequest: { properties: Record<string, Record<string, unknown>> } } };
  };
  const request = doc.components.schemas.EndpointRunRequest;
  const variables = request.properties['variables'] as {
    properties: Record<string, { type: string; format?: string }>;
    required?: string[];
  };
  t.same(Object.keys(variables.properties), ['$browser', 'date_from', 'date_to']);
  t.equal(variables.properties['date_from']!.format, 'date');
  t.notOk(variables.required, 'none is required');
  t.notOk(request.properties['limit'], 'an insight has no pages');
  const result = await validate(structuredClone(doc) as never);
  t.ok(result.valid, JSON.stringify(result));
});

t.test('funnel and retention endpoints run', async (t) => {
  await createEndpoint(w, {
    name: 'view-then-leave',
    query: {
      kind: 'FunnelsQuery',
      series: [
        { kind: 'EventsNode', event: '$pageview' },
        { kind: 'EventsNode', event: '$pageleave' },
      ],
      dateRange: RANGE,
      funnelsFilter: { funnelWindowInterval: 1, funnelWindowIntervalUnit: 'day' },
    },
  });
  const funnel = await runOk(w, 'view-then-leave');
  t.same(funnel.columns, [
    'step',
    'event',
    'count',
    'conversion_rate',
    'average_conversion_time',
    'median_conversion_time',
  ]);
  // p1 (11 → 11), p2 (12 → 13), p3 (12 → 13), p4 (15 → 16) all leave within a day of a pageview.
  t.same(
    funnel.results.map((r) => [r[0], r[1], r[2], r[3]]),
    [
      [1, '$pageview', 4, 1],
      [2, '$pageleave', 4, 1],
    ],
  );
  await createEndpoint(w, {
    name: 'returning',
    query: {
      kind: 'RetentionQuery',
      dateRange: { date_from: '2020-01-11', date_to: '2020-01-13' },
      retentionFilter: { period: 'Day', totalIntervals: 3 },
    },
  });
  const ret = await runOk(w, 'returning');
  t.same(ret.columns, ['cohort_date', 'cohort_size', 'period', 'count']);
  // Pageviews: Jan 11 p1; Jan 12 p1 p2 p3; Jan 13 p1.
  t.same(
    ret.results.map((r) => [r[0], r[1], r[2], r[3]]),
    [
      ['2020-01-11', 1, 0, 1],
      ['2020-01-11', 1, 1, 1],
      ['2020-01-11', 1, 2, 1],
      ['2020-01-12', 3, 0, 3],
      ['2020-01-12', 3, 1, 1],
      ['2020-01-13', 1, 0, 1],
    ],
  );
});

t.test('an insight that cannot run is refused when it is made, naming the field', async (t) => {
  const make = (query: unknown): ReturnType<typeof endpointsApi> =>
    endpointsApi(w, 'POST', '', { name: 'bad', query });
  refused(t, await make({ kind: 'TrendsQuery', series: [] }), 400, 'invalid_query', 'query.series');
  refused(
    t,
    await make({ kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: '' }] }),
    400,
    'invalid_query',
    'query.series[0].event',
  );
  refused(
    t,
    await make({ kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x', mathh: 'dau' }] }),
    400,
    'invalid_query',
    'query.series[0].mathh',
  );
  refused(
    t,
    await make({ kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'x', math: 'hogql' }] }),
    400,
    'invalid_query',
    'query.series[0].math',
  );
  refused(
    t,
    await make({
      kind: 'FunnelsQuery',
      series: [{ event: 'a' }, { event: 'b' }],
      funnelsFilter: { funnelWindowInterval: 0 },
    }),
    400,
    'invalid_query',
    'query.funnelsFilter.funnelWindowInterval',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'bad',
      query: { kind: 'TrendsQuery', series: [{ event: 'x' }] },
      variables: { x: { type: 'string' } },
    }),
    400,
    'invalid_variables',
    'variables',
  );
});
