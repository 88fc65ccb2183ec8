/**
 * The web console's rules that need no browser: which chart an answer gets (results.js) and reading
 * Prometheus text (metrics.js). The modules are the browser's own files, imported as they are.
 */
import t from 'tap';

interface Spec {
  kind: string;
  type: string;
  labels: string[];
  datasets: { label: string; data: number[] }[];
  tooltip?: (ctx: { datasetIndex: number; dataIndex: number }) => string;
}
interface Result {
  columns: string[];
  types?: string[];
  results: unknown[][];
}
interface Sample {
  labels: Record<string, string>;
  value: number;
}

// A path TypeScript does not resolve: these are plain browser modules, outside the TS project.
const dir = '../../src/console';
const { chartSpec } = (await import(`${dir}/results.js`)) as {
  chartSpec: (kind: string, result: Result) => Spec | { type: 'retention' } | null;
};
const { parsePrometheus, sumBy, summarise } = (await import(`${dir}/metrics.js`)) as {
  parsePrometheus: (text: string) => Map<string, Sample[]>;
  sumBy: (metrics: Map<string, Sample[]>, name: string, label?: string) => Map<string, number>;
  summarise: (metrics: Map<string, Sample[]>) => { title: string; rows: [string, unknown, object?][] }[];
};

t.test('trends by date: a line per series and breakdown value, zero where a date is missing', (t) => {
  const spec = chartSpec('TrendsQuery', {
    columns: ['series_index', 'series', 'breakdown_value', 'date', 'value'],
    results: [
      [0, '$pageview', 'Firefox', '2026-01-02', 3],
      [0, '$pageview', 'Firefox', '2026-01-01', 2],
      [0, '$pageview', null, '2026-01-01', 1],
      [1, '$pageview', 'Firefox', '2026-01-01', '9007199254740993'],
    ],
  }) as Spec;
  t.equal(spec.type, 'line');
  t.same(spec.labels, ['2026-01-01', '2026-01-02'], 'dates in order');
  t.same(spec.datasets, [
    { label: '$pageview · Firefox', data: [2, 3] },
    { label: '$pageview · (none)', data: [1, 0] },
    { label: '$pageview · Firefox', data: [9007199254740992, 0] },
  ]);
  t.end();
});

t.test('trends as a total value (no date): a bar per series', (t) => {
  const spec = chartSpec('TrendsQuery', {
    columns: ['series_index', 'series', 'value'],
    results: [
      [0, 'signed up', 4],
      [1, 'paid', 2],
    ],
  }) as Spec;
  t.equal(spec.type, 'bar');
  t.same(spec.labels, ['signed up', 'paid']);
  t.same(spec.datasets, [{ label: 'value', data: [4, 2] }]);
  t.end();
});

t.test('a funnel: a bar per step, a set of bars per breakdown value, conversion in the tooltip', (t) => {
  const spec = chartSpec('FunnelsQuery', {
    columns: ['breakdown_value', 'step', 'event', 'count', 'conversion_rate'],
    results: [
      ['Chrome', 1, 'signed up', 10, 1],
      ['Chrome', 2, 'paid', 4, 0.4],
      ['Safari', 1, 'signed up', 5, 1],
      ['Safari', 2, 'paid', 1, 0.2],
    ],
  }) as Spec;
  t.equal(spec.type, 'bar');
  t.same(spec.labels, ['1. signed up', '2. paid']);
  t.same(spec.datasets, [
    { label: 'Chrome', data: [10, 4] },
    { label: 'Safari', data: [5, 1] },
  ]);
  t.equal(spec.tooltip!({ datasetIndex: 1, dataIndex: 1 }), '20.0% of step 1');
  t.end();
});

t.test('retention is a grid; an empty answer has no chart', (t) => {
  const columns = ['cohort_date', 'cohort_size', 'period', 'count'];
  t.same(chartSpec('RetentionQuery', { columns, results: [['2026-01-01', 3, 0, 3]] }), { type: 'retention' });
  t.equal(chartSpec('RetentionQuery', { columns, results: [] }), null);
  t.end();
});

t.test('SQL: bars for one label column and one number column, else the table alone', (t) => {
  const bars = chartSpec('HogQLQuery', {
    columns: ['browser', 'views'],
    types: ['Nullable(String)', 'UInt64'],
    results: [
      ['Chrome', 3],
      [null, '18446744073709551615'],
    ],
  }) as Spec;
  t.match(bars, { type: 'bar', labels: ['Chrome', '(none)'], datasets: [{ label: 'views' }] });
  const swapped = chartSpec('HogQLQuery', {
    columns: ['n', 'event'],
    types: ['UInt64', 'LowCardinality(String)'],
    results: [[2, 'x']],
  }) as Spec;
  t.match(swapped, { labels: ['x'], datasets: [{ label: 'n', data: [2] }] }, 'the number may come first');
  const hours = chartSpec('HogQLQuery', {
    columns: ['hour', 'events'],
    types: ['UInt8', 'Nullable(Float64)'],
    results: [[9, 1.5]],
  }) as Spec;
  t.match(
    hours,
    { labels: ['9'], datasets: [{ label: 'events', data: [1.5] }] },
    'two numbers: the first labels',
  );
  for (const result of [
    { columns: ['a', 'b'], types: ['String', 'String'], results: [['x', 'y']] },
    { columns: ['a', 'b', 'c'], types: ['String', 'UInt64', 'UInt64'], results: [['x', 1, 2]] },
    {
      columns: ['a', 'b'],
      types: ['String', 'UInt64'],
      results: Array.from({ length: 501 }, (_, i) => [`${i}`, i]),
    },
  ])
    t.equal(
      chartSpec('HogQLQuery', result),
      null,
      `no chart: ${result.columns.join(',')} ×${result.results.length}`,
    );
  const untyped = chartSpec('HogQLQuery', { columns: ['k', 'v'], results: [['a', 1]] }) as Spec;
  t.equal(untyped.type, 'bar', 'without types, the values decide');
  t.end();
});

t.test('Prometheus text: samples by name with their labels, summed by a label', (t) => {
  const metrics = parsePrometheus(
    [
      '# HELP weir_capture_requests_total Capture requests by route and response status.',
      '# TYPE weir_capture_requests_total counter',
      'weir_capture_requests_total{route="/i/v0/e/",status="200"} 7',
      'weir_capture_requests_total{route="/batch/",status="200"} 3',
      'weir_capture_requests_total{route="/batch/",status="400"} 1',
      'weir_capture_events_total{lane="live"} 12 1700000000000',
      'weir_capture_events_dropped_total{reason="a \\"quoted\\" \\\\ reason"} 2',
      'weir_capture_request_duration_seconds_bucket{route="/batch/",le="+Inf"} 4',
      'weir_capture_request_duration_seconds_sum{route="/batch/"} 0.5',
      'weir_capture_request_duration_seconds_count{route="/batch/"} 4',
      'weir_ingest_pending_events 0',
      'some_gauge +Inf',
      '',
    ].join('\n'),
  );
  t.same(
    [...sumBy(metrics, 'weir_capture_requests_total', 'status')],
    [
      ['200', 10],
      ['400', 1],
    ],
  );
  t.same(
    metrics.get('weir_capture_events_total'),
    [{ labels: { lane: 'live' }, value: 12 }],
    'a timestamp is skipped',
  );
  t.same(metrics.get('weir_capture_events_dropped_total')![0]!.labels, { reason: 'a "quoted" \\ reason' });
  t.same(metrics.get('weir_capture_request_duration_seconds_bucket'), [
    { labels: { route: '/batch/', le: '+Inf' }, value: 4 },
  ]);
  t.equal(metrics.get('some_gauge')![0]!.value, Infinity, '+Inf as a value');
  const sections = summarise(metrics);
  const row = (title: string, label: string): unknown =>
    sections.find((s) => s.title === title)!.rows.find((r) => r[0] === label)?.[1];
  t.equal(row('Capture requests', 'all'), 11);
  t.equal(row('Capture requests', 'status 400'), 1);
  t.equal(row('Capture requests', 'mean latency'), '125.00 ms');
  t.equal(row('Events', 'accepted: live'), 12);
  t.equal(row('Events', 'stored'), 0, 'a metric not there yet reads 0');
  t.end();
});
