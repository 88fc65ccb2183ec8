/**
 * TrendsQuery on PostHog's trends fixture (reference §5.1): the published cases T1 (daily count), T2 (two
 * series) and T5's breakdown values (without the formula), the answer's columns, labels and order, each
 * answer checked against hand-written SQL on the store tables.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight } from '../helpers/insights.ts';
import { breakdownsOf, datesOf, days, handSeries, posthogFixture, valuesOf } from '../helpers/trends.ts';

const store = await insightStore(t);
await insertEvents(store, posthogFixture());

const NOW = new Date('2020-01-20T10:00:00Z');
const RANGE = { date_from: '2020-01-09', date_to: '2020-01-19' };
const pageview = { kind: 'EventsNode', event: '$pageview' };
const pageleave = { kind: 'EventsNode', event: '$pageleave' };
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

t.test('T1: a daily count of $pageview, every day present and zero-filled', async (t) => {
  const a = await runInsight(
    store,
    { kind: 'TrendsQuery', series: [pageview], dateRange: RANGE },
    { now: NOW },
  );
  t.same(a.columns, ['series_index', 'series', 'date', 'value']);
  t.same(a.types, ['UInt32', 'String', 'String', 'Float64'], 'value is Float64 for every math');
  t.same(valuesOf(a, 0), [1, 0, 1, 3, 1, 0, 2, 0, 1, 0, 1], "PostHog's data");
  t.equal(sum(valuesOf(a, 0)), 10, "PostHog's count");
  t.same(datesOf(a, 0), days('2020-01-09', 11), "PostHog's days");
  t.same([...new Set(a.rows.map((r) => r[1]))], ['$pageview'], "PostHog's label");
  t.equal(a.hasMore, false);
  const hand = await handSeries(store, {
    value: 'count()',
    where: "e.event = '$pageview' AND e.timestamp >= '2020-01-09' AND e.timestamp < '2020-01-20'",
    from: '2020-01-09',
    to: '2020-01-20',
  });
  t.same(valuesOf(a, 0), hand, 'the hand-written SQL agrees');
});

t.test('T1 by hour on one day: 24 rows from 00:00, labelled with the time', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview],
      interval: 'hour',
      dateRange: { date_from: '2020-01-09', date_to: '2020-01-09' },
    },
    { now: NOW },
  );
  const dates = datesOf(a, 0);
  t.equal(dates.length, 24);
  t.equal(dates[0], '2020-01-09 00:00:00', "PostHog's first label is 9-Jan 00:00");
  t.equal(dates[23], '2020-01-09 23:00:00');
  const values = valuesOf(a, 0);
  t.equal(values[12], 1, 'the 12:00 pageview');
  t.equal(sum(values), 1);
  const hand = await handSeries(store, {
    value: 'count()',
    bucket: 'toStartOfHour(e.timestamp)',
    where: "e.event = '$pageview' AND toDate(e.timestamp) = '2020-01-09'",
    from: '2020-01-09 00:00:00',
    to: '2020-01-10 00:00:00',
    step: 'INTERVAL 1 HOUR',
  });
  t.same(values, hand);
});

t.test('T2: two series, each on its own rows, in series order', async (t) => {
  const a = await runInsight(
    store,
    { kind: 'TrendsQuery', series: [pageview, pageleave], dateRange: RANGE },
    { now: NOW },
  );
  t.same(valuesOf(a, 0), [1, 0, 1, 3, 1, 0, 2, 0, 1, 0, 1]);
  t.same(valuesOf(a, 1), [0, 0, 1, 1, 3, 0, 0, 1, 0, 0, 0], "PostHog's pageleave data");
  t.equal(sum(valuesOf(a, 0)), 10);
  t.equal(sum(valuesOf(a, 1)), 6);
  t.same(
    a.rows.map((r) => r[0]),
    [...Array<number>(11).fill(0), ...Array<number>(11).fill(1)],
    'ordered by series_index, then date',
  );
  t.same([...new Set(a.rows.map((r) => r[1]))], ['$pageview', '$pageleave']);
  const hand = await handSeries(store, {
    value: 'count()',
    where: "e.event = '$pageleave' AND e.timestamp >= '2020-01-09' AND e.timestamp < '2020-01-20'",
    from: '2020-01-09',
    to: '2020-01-20',
  });
  t.same(valuesOf(a, 1), hand);
});

t.test('series labels: custom_name, else the event, else "All events"', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [
        { ...pageview, custom_name: 'Views' },
        { ...pageleave, custom_name: '' },
        { kind: 'EventsNode', event: null },
      ],
      dateRange: RANGE,
    },
    { now: NOW },
  );
  t.same([...new Set(a.rows.map((r) => r[1]))], ['Views', '$pageleave', 'All events']);
  t.same(valuesOf(a, 2), [1, 0, 2, 4, 4, 0, 2, 1, 1, 0, 1], 'all events: pageviews and pageleaves');
  t.equal(sum(valuesOf(a, 2)), 16);
});

t.test('T5 without the formula: $browser breakdown over 9–20 Jan, values by total', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, pageleave],
      dateRange: { date_from: '2020-01-09', date_to: '2020-01-20' },
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
    },
    { now: NOW },
  );
  t.same(a.columns, ['series_index', 'series', 'breakdown_value', 'date', 'value']);
  t.same(a.types[2], 'Nullable(String)');
  // PostHog's first result is Chrome: A+2B = [0,0,3,3,3,0,1,0,1,0,1,0], count 12; Firefox's count is 4.
  const formula = (bd: string): number[] => valuesOf(a, 0, bd).map((v, i) => v + 2 * valuesOf(a, 1, bd)[i]!);
  t.same(formula('Chrome'), [0, 0, 3, 3, 3, 0, 1, 0, 1, 0, 1, 0]);
  t.equal(sum(formula('Chrome')), 12);
  t.equal(sum(formula('Firefox')), 4);
  t.same(breakdownsOf(a, 0), ['Chrome', 'Firefox', 'Edge', 'Safari'], 'by total, ties by value');
  t.same(breakdownsOf(a, 1), ['Chrome', 'Edge', 'Firefox', 'Safari'], 'each series ranks its own');
  t.equal(a.rows.length, 2 * 4 * 12);
  t.equal(a.hasMore, false);

  const hand = await handSql(
    store,
    `SELECT event, JSONExtractString(properties, '$browser') AS b, toFloat64(count()) FROM events FINAL
     WHERE project_id = {project:UInt64} AND timestamp >= '2020-01-09' AND timestamp < '2020-01-21'
     GROUP BY event, b ORDER BY event DESC, count() DESC, b`,
  );
  t.same(
    hand,
    [0, 1].flatMap((s) =>
      breakdownsOf(a, s).map((bd) => [s === 0 ? '$pageview' : '$pageleave', bd, sum(valuesOf(a, s, bd))]),
    ),
    'the totals and order the hand-written SQL gives',
  );
});

t.test('a range with no events still answers every interval with 0', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, { kind: 'EventsNode', event: 'never' }],
      dateRange: { date_from: '2021-03-01', date_to: '2021-03-03' },
    },
    { now: NOW },
  );
  t.same(
    a.rows,
    [0, 1].flatMap((s) =>
      ['2021-03-01', '2021-03-02', '2021-03-03'].map((d) => [s, s === 0 ? '$pageview' : 'never', d, 0]),
    ),
  );
  const breakdown = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview],
      dateRange: { date_from: '2021-03-01', date_to: '2021-03-03' },
      breakdownFilter: { breakdown: '$browser' },
    },
    { now: NOW },
  );
  t.same(breakdown.rows, [], 'with a breakdown there is no value to give rows to');
});

t.test('T3: formulas replace the series with their own rows', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, pageleave],
      dateRange: RANGE,
      trendsFilter: { formulas: ['A+2*B', 'A-B'] },
    },
    { now: NOW },
  );
  t.same([...new Set(a.rows.map((r) => r[1]))], ['Formula (A+2*B)', 'Formula (A-B)']);
  t.same(valuesOf(a, 0), [1, 0, 3, 5, 7, 0, 2, 2, 1, 0, 1], "PostHog's data");
  t.equal(sum(valuesOf(a, 0)), 22, "PostHog's count");
  t.same(valuesOf(a, 1), [1, 0, 0, 2, -2, 0, 2, -1, 1, 0, 1]);
  t.equal(sum(valuesOf(a, 1)), 4);
  const hand = await handSeries(store, {
    value: "countIf(e.event = '$pageview') + 2 * countIf(e.event = '$pageleave')",
    where: "e.timestamp >= '2020-01-09' AND e.timestamp < '2020-01-20'",
    from: '2020-01-09',
    to: '2020-01-20',
  });
  t.same(valuesOf(a, 0), hand);
});

t.test('T5: a formula with a breakdown is computed per breakdown value', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, pageleave],
      dateRange: { date_from: '2020-01-09', date_to: '2020-01-20' },
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
      trendsFilter: { formula: 'A+2*B' },
    },
    { now: NOW },
  );
  t.same(breakdownsOf(a, 0), ['Chrome', 'Firefox', 'Edge', 'Safari'], '4 results, by count');
  t.same(valuesOf(a, 0, 'Chrome'), [0, 0, 3, 3, 3, 0, 1, 0, 1, 0, 1, 0], "PostHog's first result");
  t.equal(sum(valuesOf(a, 0, 'Chrome')), 12);
  t.equal(sum(valuesOf(a, 0, 'Firefox')), 4);
  t.same([...new Set(a.rows.map((r) => r[1]))], ['Formula (A+2*B)']);
});

t.test('formulaNodes: custom names, division (x / 0 is 0), unary minus, total values', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, pageleave],
      dateRange: RANGE,
      trendsFilter: {
        formulaNodes: [{ formula: 'B / A', custom_name: 'leave rate' }, { formula: '-(a - 1)' }],
      },
    },
    { now: NOW },
  );
  t.same([...new Set(a.rows.map((r) => r[1]))], ['leave rate', 'Formula (-(a - 1))']);
  t.same(valuesOf(a, 0), [0, 0, 1, 1 / 3, 3, 0, 0, 0, 0, 0, 0], 'no pageview on 16 Jan: 1 / 0 is 0');
  t.same(valuesOf(a, 1), [0, 1, 0, -2, 0, 1, -1, 1, 0, 1, 0]);
  const total = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [pageview, pageleave],
      dateRange: RANGE,
      breakdownFilter: { breakdown: '$browser', breakdown_limit: 1 },
      trendsFilter: { formula: 'B / A * 100', display: 'ActionsTable' },
    },
    { now: NOW },
  );
  t.same(total.rows, [
    [0, 'Formula (B / A * 100)', 'Chrome', 50],
    [0, 'Formula (B / A * 100)', 'Other', 75],
  ]);
  t.equal(total.hasMore, true);
});

t.test('T4: compare adds the previous period’s rows, labelled, after the current ones', async (t) => {
  const query = (compareFilter: Record<string, unknown>, display = 'ActionsLineGraph') => ({
    kind: 'TrendsQuery',
    series: [pageview, pageleave],
    dateRange: { date_from: '2020-01-15', date_to: '2020-01-19' },
    trendsFilter: { formula: 'A+2*B', display },
    compareFilter,
  });
  const a = await runInsight(store, query({ compare: true }), { now: NOW });
  t.same(a.columns, ['series_index', 'series', 'compare_label', 'date', 'value']);
  const of = (label: string): unknown[][] => a.rows.filter((r) => r[2] === label);
  t.same(
    of('current').map((r) => r[4]),
    [2, 2, 1, 0, 1],
  );
  t.same(
    of('previous').map((r) => [r[3], r[4]]),
    [
      ['2020-01-10', 0],
      ['2020-01-11', 3],
      ['2020-01-12', 5],
      ['2020-01-13', 7],
      ['2020-01-14', 0],
    ],
    "PostHog's previous period: the 5 days before, with their own dates",
  );
  t.same(
    a.rows.map((r) => r[2]),
    [...Array<string>(5).fill('current'), ...Array<string>(5).fill('previous')],
  );
  const shifted = async (compareTo: string): Promise<number[]> =>
    (await runInsight(store, query({ compare: true, compare_to: compareTo }), { now: NOW })).rows
      .filter((r) => r[2] === 'previous')
      .map((r) => Number(r[4]));
  t.same(await shifted('-2d'), [7, 0, 2, 2, 1], 'compare_to -2d');
  t.same(await shifted('-1w'), [0, 1, 0, 3, 5], 'compare_to -1w');
  const bold = await runInsight(store, query({ compare: true }, 'BoldNumber'), { now: NOW });
  t.same(bold.rows, [
    [0, 'Formula (A+2*B)', 'current', 6],
    [0, 'Formula (A+2*B)', 'previous', 15],
  ]);
  const hand = await handSql(
    store,
    `SELECT countIf(event = '$pageview') + 2 * countIf(event = '$pageleave') FROM events FINAL
     WHERE project_id = {project:UInt64} AND timestamp >= '2020-01-10' AND timestamp < '2020-01-15'`,
  );
  t.same(hand, [[15]]);
});
