/**
 * RetentionQuery on the real engine: PostHog's published cases (reference §5.3 R1, R2) recreated, and
 * hand-worked cases of the range (default, given, the date variables), different target and returning
 * events, totalIntervals and zero-filled cells. Every answer is also checked against hand-written SQL.
 */
import t from 'tap';
import {
  insertEvents,
  insightStore,
  personOf,
  pointDistinctIds,
  runInsight,
  handSql,
  type TestEvent,
} from '../helpers/insights.ts';
import { handRetentionSql, periodDates, retentionRows } from '../helpers/retention-hand.ts';

const COLUMNS = ['cohort_date', 'cohort_size', 'period', 'count'];

t.test(
  'R1 (PostHog test_day_interval): day periods, two distinct ids of one person count once',
  async (t) => {
    const store = await insightStore(t);
    const at = (d: number, h = 5): string => new Date(Date.UTC(2020, 5, 10 + d, h)).toISOString();
    await insertEvents(store, [
      ...[0, 1, 2, 5, 6].map((d) => ({ event: '$pageview', distinctId: 'person1', timestamp: at(d) })),
      // alias1 was stored under its own person, then merged into person1's.
      { event: '$pageview', distinctId: 'alias1', timestamp: at(5, 9) },
      ...[1, 2, 3, 6].map((d) => ({ event: '$pageview', distinctId: 'person2', timestamp: at(d) })),
    ]);
    await pointDistinctIds(store, [{ distinctId: 'alias1', personId: personOf('person1') }], 1, 2);

    const answer = await runInsight(
      store,
      {
        kind: 'RetentionQuery',
        dateRange: { date_to: '2020-06-20T06:00:00' },
        retentionFilter: { totalIntervals: 11 },
      },
      { now: new Date('2020-07-01T00:00:00Z') },
    );
    t.same(answer.columns, COLUMNS);
    t.same(answer.types, ['String', 'UInt64', 'UInt64', 'UInt64']);
    // PostHog's rows, each cut to the periods that have begun by 2020-06-20 (PostHog pads them with 0).
    const expected = retentionRows(periodDates('day', '2020-06-10', 11), [
      [1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0],
      [2, 2, 1, 0, 1, 2, 0, 0, 0, 0],
      [2, 1, 0, 1, 2, 0, 0, 0, 0],
      [1, 0, 0, 1, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0, 0],
      [1, 1, 0, 0, 0, 0],
      [2, 0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0],
      [0, 0],
      [0],
    ]);
    t.same(answer.rows, expected);
    t.equal(answer.hasMore, false);
    const hand = handRetentionSql({
      unit: 'day',
      from: '2020-06-10 00:00:00',
      end: '2020-06-21 00:00:00',
      totalIntervals: 11,
    });
    t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
  },
);

t.test('R2 (PostHog test_month_interval): month periods', async (t) => {
  const store = await insightStore(t);
  // Day 10 of months counted from June 2020.
  const month = (offset: number): string => new Date(Date.UTC(2020, 5 + offset, 10)).toISOString();
  const events: TestEvent[] = [
    ...[-5, -4, -3, -1, 0, 3].map((m) => ({
      event: '$pageview',
      distinctId: 'person1',
      timestamp: month(m),
    })),
    ...[-5, -4, -3, 0, 1, 5].map((m) => ({ event: '$pageview', distinctId: 'person2', timestamp: month(m) })),
  ];
  await insertEvents(store, events);
  const answer = await runInsight(
    store,
    {
      kind: 'RetentionQuery',
      dateRange: { date_to: month(5).replace('-10T', '-25T').slice(0, 16) },
      retentionFilter: { totalIntervals: 11, period: 'Month' },
    },
    { now: new Date('2021-01-01T00:00:00Z') },
  );
  // The first three rows are PostHog's; the others worked out by hand from the events: person1 is in the
  // months Jan Feb Mar May Jun Sep (indexes 0 1 2 4 5 8), person2 in Jan Feb Mar Jun Jul Nov (0 1 2 5 6 10).
  const expected = retentionRows(periodDates('month', '2020-01-01', 11), [
    [2, 2, 2, 0, 1, 2, 1, 0, 1, 0, 1],
    [2, 2, 0, 1, 2, 1, 0, 1, 0, 1],
    [2, 0, 1, 2, 1, 0, 1, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0],
    [1, 1, 0, 0, 1, 0, 0],
    [2, 1, 0, 1, 0, 1],
    [1, 0, 0, 0, 1],
    [0, 0, 0, 0],
    [1, 0, 0],
    [0, 0],
    [1],
  ]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    unit: 'month',
    from: '2020-01-01 00:00:00',
    end: '2020-12-01 00:00:00',
    totalIntervals: 11,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

/** Sign-ups and purchases of March 2024 (a leap year: 2024-02-29 exists). */
const SHOP: TestEvent[] = [
  { event: 'signup', distinctId: 'u1', timestamp: '2024-03-01T10:00:00Z' },
  { event: 'purchase', distinctId: 'u1', timestamp: '2024-03-02T10:00:00Z' },
  { event: 'purchase', distinctId: 'u1', timestamp: '2024-03-04T10:00:00Z' },
  // A purchase in the cohort's own period, before the sign-up, is not a return.
  { event: 'purchase', distinctId: 'u2', timestamp: '2024-03-01T08:00:00Z' },
  { event: 'signup', distinctId: 'u2', timestamp: '2024-03-01T23:59:59Z' },
  { event: 'purchase', distinctId: 'u2', timestamp: '2024-03-03T00:00:00Z' },
  // Recurring: u3 is in the cohorts of 03-02 and 03-03.
  { event: 'signup', distinctId: 'u3', timestamp: '2024-03-02T12:00:00Z' },
  { event: 'signup', distinctId: 'u3', timestamp: '2024-03-03T12:00:00Z' },
  { event: 'purchase', distinctId: 'u3', timestamp: '2024-03-03T13:00:00Z' },
  { event: 'purchase', distinctId: 'u3', timestamp: '2024-03-05T13:00:00Z' },
  // Purchases without a sign-up make no cohort.
  { event: 'purchase', distinctId: 'u4', timestamp: '2024-03-02T09:00:00Z' },
  { event: 'signup', distinctId: 'u5', timestamp: '2024-03-05T23:00:00Z' },
  // Other events are not read.
  { event: '$pageview', distinctId: 'u4', timestamp: '2024-03-01T09:00:00Z' },
];

const SHOP_QUERY = {
  kind: 'RetentionQuery',
  retentionFilter: {
    targetEntity: { id: 'signup', type: 'events', name: 'signup', kind: 'EventsNode', order: 0 },
    returningEntity: { id: 'purchase', type: 'events', custom_name: 'Bought', uuid: 'x-1' },
  },
};
const SHOP_HAND = { target: "event = 'signup'", returning: "event = 'purchase'" };

t.test('target and returning events differ; totalIntervals cuts the periods', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, SHOP);
  const query = {
    ...SHOP_QUERY,
    dateRange: { date_from: '2024-03-01', date_to: '2024-03-05' },
    retentionFilter: { ...SHOP_QUERY.retentionFilter, totalIntervals: 3 },
  };
  const answer = await runInsight(store, query, { now: new Date('2024-04-01T00:00:00Z') });
  const expected = retentionRows(periodDates('day', '2024-03-01', 5), [
    [2, 1, 1],
    [1, 1, 0],
    [1, 0, 1],
    [0, 0],
    [1],
  ]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    ...SHOP_HAND,
    unit: 'day',
    from: '2024-03-01 00:00:00',
    end: '2024-03-06 00:00:00',
    totalIntervals: 3,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test('the default range: totalIntervals (8) periods ending with the one holding now', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, SHOP);
  const answer = await runInsight(store, SHOP_QUERY, { now: new Date('2024-03-05T12:00:00Z') });
  const expected = retentionRows(periodDates('day', '2024-02-27', 8), [
    [0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [2, 1, 1, 1, 0],
    [1, 1, 0, 1],
    [1, 0, 1],
    [0, 0],
    [1],
  ]);
  t.same(answer.rows, expected);
  t.equal(answer.rows[15]?.[0], '2024-02-29', 'a leap day is a period');
  const hand = handRetentionSql({
    ...SHOP_HAND,
    unit: 'day',
    from: '2024-02-27 00:00:00',
    end: '2024-03-06 00:00:00',
    totalIntervals: 8,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test('date_from / date_to variables replace the range; returns after it are not read', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, SHOP);
  const answer = await runInsight(store, SHOP_QUERY, {
    now: new Date('2024-03-05T12:00:00Z'),
    variables: { date_from: '2024-03-02', date_to: '2024-03-04' },
  });
  const expected = retentionRows(periodDates('day', '2024-03-02', 3), [[1, 1, 0], [1, 0], [0]]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    ...SHOP_HAND,
    unit: 'day',
    from: '2024-03-02 00:00:00',
    end: '2024-03-05 00:00:00',
    totalIntervals: 8,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test('a range without events is every cell zero; another project is not read', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, SHOP, 2);
  const answer = await runInsight(
    store,
    { ...SHOP_QUERY, retentionFilter: { ...SHOP_QUERY.retentionFilter, totalIntervals: 2 } },
    { now: new Date('2024-03-03T12:00:00Z') },
  );
  const expected = retentionRows(periodDates('day', '2024-03-02', 2), [[0, 0], [0]]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    ...SHOP_HAND,
    unit: 'day',
    from: '2024-03-02 00:00:00',
    end: '2024-03-04 00:00:00',
    totalIntervals: 2,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test('a date_from after date_to is a range without periods: no rows', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, SHOP);
  const answer = await runInsight(
    store,
    { ...SHOP_QUERY, dateRange: { date_from: '2024-03-05', date_to: '2024-03-01' } },
    { now: new Date('2024-04-01T00:00:00Z') },
  );
  t.same(answer.columns, COLUMNS);
  t.same(answer.rows, []);
});
