/**
 * Trends intervals and date ranges (SPEC §4): hour, day, week (from Sunday) and month buckets, relative and
 * absolute ranges at a fixed now, explicitDate, `all`, the date variables, total-value displays and the
 * cumulative display — hand-worked and checked against hand-written SQL.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight } from '../helpers/insights.ts';
import { datesOf, handSeries, valuesOf } from '../helpers/trends.ts';

const store = await insightStore(t);
// 2 March 2024 is a Saturday, 3 March a Sunday.
const VISITS = [
  '2024-02-28T10:00:00Z',
  '2024-03-02T23:30:00Z',
  '2024-03-03T00:15:00Z',
  '2024-03-09T12:00:00Z',
  '2024-03-10T01:00:00Z',
  '2024-03-10T01:30:00Z',
  '2024-03-10T05:00:00Z',
  '2024-04-01T00:00:00Z',
];
await insertEvents(
  store,
  VISITS.map((timestamp, i) => ({
    event: 'visit',
    distinctId: `v${i}`,
    timestamp,
    properties: { $browser: i % 2 === 0 ? 'Chrome' : 'Safari' },
  })),
);
const NOW = new Date('2024-03-10T05:30:00Z');
const visits = { kind: 'EventsNode', event: 'visit' };

async function trend(extra: Record<string, unknown>, now = NOW) {
  return runInsight(store, { kind: 'TrendsQuery', series: [visits], ...extra }, { now });
}

t.test('week: buckets start on Sunday, the first one at the Sunday before date_from', async (t) => {
  const a = await trend({ interval: 'week', dateRange: { date_from: '2024-03-01', date_to: '2024-03-16' } });
  t.same(datesOf(a, 0), ['2024-02-25', '2024-03-03', '2024-03-10']);
  // Saturday 2 March 23:30 is still the week of 25 Feb; Sunday 3 March 00:15 starts the next.
  t.same(valuesOf(a, 0), [2, 2, 3]);
  const hand = await handSeries(store, {
    value: 'count()',
    bucket: "toDateTime(toStartOfWeek(e.timestamp, 0), 'UTC')",
    where: "e.event = 'visit' AND e.timestamp >= '2024-02-25' AND e.timestamp < '2024-03-17'",
    from: '2024-02-25',
    to: '2024-03-17',
    step: 'INTERVAL 1 WEEK',
  });
  t.same(valuesOf(a, 0), hand);
});

t.test('month: buckets are calendar months', async (t) => {
  const a = await trend({ interval: 'month', dateRange: { date_from: '2024-02-01', date_to: '2024-04-30' } });
  t.same(datesOf(a, 0), ['2024-02-01', '2024-03-01', '2024-04-01']);
  t.same(valuesOf(a, 0), [1, 6, 1]);
  const hand = await handSeries(store, {
    value: 'count()',
    bucket: "toDateTime(toStartOfMonth(e.timestamp), 'UTC')",
    where: "e.event = 'visit' AND e.timestamp >= '2024-02-01' AND e.timestamp < '2024-05-01'",
    from: '2024-02-01',
    to: '2024-05-01',
    step: 'INTERVAL 1 MONTH',
  });
  t.same(valuesOf(a, 0), hand);
});

t.test(
  'hour with a relative range: -6h starts at the start of its hour and ends with now’s hour',
  async (t) => {
    const a = await trend({ interval: 'hour', dateRange: { date_from: '-6h' } });
    t.same(datesOf(a, 0), [
      '2024-03-09 23:00:00',
      '2024-03-10 00:00:00',
      '2024-03-10 01:00:00',
      '2024-03-10 02:00:00',
      '2024-03-10 03:00:00',
      '2024-03-10 04:00:00',
      '2024-03-10 05:00:00',
    ]);
    t.same(valuesOf(a, 0), [0, 0, 2, 0, 0, 0, 1]);
    const hand = await handSeries(store, {
      value: 'count()',
      bucket: 'toStartOfHour(e.timestamp)',
      where:
        "e.event = 'visit' AND e.timestamp >= '2024-03-09 23:00:00' AND e.timestamp < '2024-03-10 06:00:00'",
      from: '2024-03-09 23:00:00',
      to: '2024-03-10 06:00:00',
      step: 'INTERVAL 1 HOUR',
    });
    t.same(valuesOf(a, 0), hand);
  },
);

t.test('relative days: -7d (the default) runs from the start of that day to the end of today', async (t) => {
  const expected = [1, 0, 0, 0, 0, 0, 1, 3];
  const a = await trend({ dateRange: { date_from: '-7d' } });
  t.equal(datesOf(a, 0)[0], '2024-03-03');
  t.equal(datesOf(a, 0).at(-1), '2024-03-10');
  t.same(valuesOf(a, 0), expected);
  t.same(valuesOf(await trend({}), 0), expected, 'no dateRange is -7d');
  const hand = await handSeries(store, {
    value: 'count()',
    where: "e.event = 'visit' AND e.timestamp >= '2024-03-03' AND e.timestamp < '2024-03-11'",
    from: '2024-03-03',
    to: '2024-03-11',
  });
  t.same(expected, hand);
  t.same(valuesOf(await trend({ dateRange: { date_from: 'dStart' } }), 0), [3], 'dStart: today');
  t.same(
    valuesOf(await trend({ interval: 'month', dateRange: { date_from: 'mStart' } }), 0),
    [6],
    'mStart: this month so far',
  );
  const later = await trend(
    { dateRange: { date_from: '-1w', date_to: '-1d' } },
    new Date('2024-03-11T08:00:00Z'),
  );
  t.same(datesOf(later, 0), [
    '2024-03-04',
    '2024-03-05',
    '2024-03-06',
    '2024-03-07',
    '2024-03-08',
    '2024-03-09',
    '2024-03-10',
  ]);
  t.same(valuesOf(later, 0), [0, 0, 0, 0, 0, 1, 3], 'a relative date_to ends at the end of its day');
});

t.test('explicitDate: the range is used as written, buckets still whole hours', async (t) => {
  const a = await trend({
    interval: 'hour',
    dateRange: { date_from: '2024-03-10T01:15:00', date_to: '2024-03-10T04:00:00', explicitDate: true },
  });
  t.same(datesOf(a, 0), [
    '2024-03-10 01:00:00',
    '2024-03-10 02:00:00',
    '2024-03-10 03:00:00',
    '2024-03-10 04:00:00',
  ]);
  t.same(valuesOf(a, 0), [1, 0, 0, 0], 'the 01:00 visit is before date_from; 05:00 after date_to');
  const hand = await handSql(
    store,
    `SELECT count() FROM events FINAL WHERE project_id = {project:UInt64} AND event = 'visit'
     AND timestamp >= '2024-03-10 01:15:00' AND timestamp <= '2024-03-10 04:00:00'`,
  );
  t.same(hand, [[1]]);
});

t.test("date_from 'all' starts at the day of the project's first event", async (t) => {
  await insertEvents(
    store,
    [
      { event: 'visit', distinctId: 'x', timestamp: '2024-03-08T10:00:00Z' },
      { event: 'visit', distinctId: 'x', timestamp: '2024-03-10T10:00:00Z' },
    ],
    2,
  );
  const a = await runInsight(
    store,
    { kind: 'TrendsQuery', series: [visits], dateRange: { date_from: 'all' } },
    { now: new Date('2024-03-10T12:00:00Z'), project: 2 },
  );
  t.same(datesOf(a, 0), ['2024-03-08', '2024-03-09', '2024-03-10']);
  t.same(valuesOf(a, 0), [1, 0, 1]);
  const hand = await handSql(
    store,
    'SELECT toString(toDate(min(timestamp))), count() FROM events FINAL WHERE project_id = {project:UInt64}',
    2,
  );
  t.same(hand, [['2024-03-08', 2]]);
});

t.test('the date_from / date_to variables replace the range', async (t) => {
  const a = await runInsight(
    store,
    { kind: 'TrendsQuery', series: [visits], dateRange: { date_from: '-30d' } },
    { now: NOW, variables: { date_from: '2024-03-09', date_to: '2024-03-10' } },
  );
  t.same(datesOf(a, 0), ['2024-03-09', '2024-03-10']);
  t.same(valuesOf(a, 0), [1, 3]);
});

t.test('total-value displays: one value per series over the whole range, no date', async (t) => {
  const range = { date_from: '2024-03-01', date_to: '2024-03-16' };
  for (const display of ['BoldNumber', 'ActionsPie', 'ActionsTable', 'WorldMap', 'ActionsBarValue']) {
    const a = await trend({ dateRange: range, interval: 'week', trendsFilter: { display } });
    t.same(a.columns, ['series_index', 'series', 'value'], display);
    t.same(a.rows, [[0, 'visit', 6]], `${display}: 2 Mar to 10 Mar, whole days`);
  }
  const pie = await trend({
    dateRange: range,
    trendsFilter: { display: 'ActionsPie' },
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(pie.columns, ['series_index', 'series', 'breakdown_value', 'value']);
  t.same(
    pie.rows,
    [
      [0, 'visit', 'Chrome', 3],
      [0, 'visit', 'Safari', 3],
    ],
    'a tie is ordered by the value',
  );
  const hand = await handSql(
    store,
    `SELECT JSONExtractString(properties, '$browser') AS b, count() AS n FROM events FINAL
     WHERE project_id = {project:UInt64} AND event = 'visit' AND timestamp >= '2024-03-01' AND timestamp < '2024-03-17'
     GROUP BY b ORDER BY n DESC, b`,
  );
  t.same(hand, [
    ['Chrome', 3],
    ['Safari', 3],
  ]);
  const empty = await trend({
    dateRange: { date_from: '2023-01-01', date_to: '2023-01-02' },
    trendsFilter: { display: 'BoldNumber' },
  });
  t.same(empty.rows, [[0, 'visit', 0]], 'a series without events is 0');
});

t.test('time-series displays give the dated table; the cumulative one adds up', async (t) => {
  const range = { date_from: '2024-03-01', date_to: '2024-03-04' };
  for (const display of ['ActionsLineGraph', 'ActionsBar', 'ActionsStackedBar', 'ActionsAreaGraph']) {
    const a = await trend({ dateRange: range, trendsFilter: { display } });
    t.same(valuesOf(a, 0), [0, 1, 1, 0], display);
  }
  const a = await trend({ dateRange: range, trendsFilter: { display: 'ActionsLineGraphCumulative' } });
  t.same(valuesOf(a, 0), [0, 1, 2, 2]);
  const b = await trend({
    dateRange: range,
    trendsFilter: { display: 'ActionsLineGraphCumulative' },
    breakdownFilter: { breakdown: '$browser' },
  });
  t.same(valuesOf(b, 0, 'Safari'), [0, 1, 1, 1], 'each breakdown value adds up its own');
  t.same(valuesOf(b, 0, 'Chrome'), [0, 0, 1, 1]);
});
