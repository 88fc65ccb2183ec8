/**
 * RetentionQuery periods, worked out by hand: hours (labels with the time), weeks from Sunday, months of
 * different lengths with a given date_from, and `all` (from the period of the project's first event).
 * Every answer is also checked against hand-written SQL.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight, type TestEvent } from '../helpers/insights.ts';
import { handRetentionSql, periodDates, retentionRows } from '../helpers/retention-hand.ts';

const view = (distinctId: string, timestamp: string): TestEvent => ({
  event: '$pageview',
  distinctId,
  timestamp,
});

t.test(
  'Hour: the period holding date_to is the last; events on the edges fall where they start',
  async (t) => {
    const store = await insightStore(t);
    await insertEvents(store, [
      view('a', '2024-05-01T00:10:00Z'),
      view('a', '2024-05-01T00:50:00Z'),
      view('a', '2024-05-01T01:05:00Z'),
      view('a', '2024-05-01T03:59:59Z'),
      view('b', '2024-05-01T01:00:00Z'),
      view('b', '2024-05-01T02:30:00Z'),
      view('c', '2024-04-30T23:59:00Z'), // before the range
      view('c', '2024-05-01T00:00:00Z'),
      view('c', '2024-05-01T04:00:00Z'), // after it
    ]);
    const answer = await runInsight(
      store,
      {
        kind: 'RetentionQuery',
        dateRange: { date_to: '2024-05-01T03:30:00' },
        retentionFilter: { period: 'Hour', totalIntervals: 4 },
      },
      { now: new Date('2024-06-01T00:00:00Z') },
    );
    const expected = retentionRows(periodDates('hour', '2024-05-01 00:00:00', 4), [
      [2, 1, 0, 1],
      [2, 1, 1],
      [1, 0],
      [1],
    ]);
    t.same(answer.rows, expected);
    t.equal(answer.rows[0]?.[0], '2024-05-01 00:00:00', 'an hour is labelled with its time');
    const hand = handRetentionSql({
      unit: 'hour',
      from: '2024-05-01 00:00:00',
      end: '2024-05-01 04:00:00',
      totalIntervals: 4,
    });
    t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
  },
);

const WEEKS: TestEvent[] = [
  view('a', '2024-06-02T00:00:00Z'), // Sunday: week 0 starts
  view('a', '2024-06-08T23:59:00Z'), // Saturday: still week 0
  view('a', '2024-06-09T00:00:00Z'), // Sunday: week 1
  view('a', '2024-06-22T10:00:00Z'), // Saturday of week 2
  view('b', '2024-06-01T23:59:00Z'), // the Saturday before the range
  view('b', '2024-06-15T10:00:00Z'), // Saturday: week 1
  view('b', '2024-06-16T10:00:00Z'), // Sunday: week 2
  view('c', '2024-06-10T10:00:00Z'), // Monday: week 1
];

t.test('Week: weeks start on Sunday; date_from and date_to take their weeks whole', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, WEEKS);
  const answer = await runInsight(
    store,
    {
      kind: 'RetentionQuery',
      // A Tuesday and a Thursday: the weeks of Sunday 06-02 to Sunday 06-16 (ending 06-22).
      dateRange: { date_from: '2024-06-04', date_to: '2024-06-20' },
      retentionFilter: { period: 'Week' },
    },
    { now: new Date('2024-07-01T00:00:00Z') },
  );
  const expected = retentionRows(periodDates('week', '2024-06-02', 3), [[1, 1, 1], [3, 2], [2]]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    unit: 'week',
    from: '2024-06-02 00:00:00',
    end: '2024-06-23 00:00:00',
    totalIntervals: 8,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test("date_from 'all': from the period of the project's first event", async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, WEEKS);
  const answer = await runInsight(
    store,
    {
      kind: 'RetentionQuery',
      dateRange: { date_from: 'all', date_to: '2024-06-20' },
      retentionFilter: { period: 'Week' },
    },
    { now: new Date('2024-07-01T00:00:00Z') },
  );
  // b's Saturday 06-01 is the first event: its week starts on Sunday 05-26.
  const expected = retentionRows(periodDates('week', '2024-05-26', 4), [
    [1, 0, 1, 1],
    [1, 1, 1],
    [3, 2],
    [2],
  ]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    unit: 'week',
    from: '2024-05-26 00:00:00',
    end: '2024-06-23 00:00:00',
    totalIntervals: 8,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});

t.test('Month: calendar months; a given range has its own number of cohorts', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, [
    view('a', '2024-01-31T23:59:59Z'),
    view('a', '2024-02-29T12:00:00Z'),
    view('a', '2024-03-01T00:00:00Z'),
    view('b', '2024-02-01T00:00:00Z'),
    // After date_to (03-01) but in its month: the range ends with the month.
    view('b', '2024-03-31T23:00:00Z'),
    view('c', '2023-12-31T23:59:00Z'),
    view('c', '2024-04-01T00:00:00Z'),
  ]);
  const answer = await runInsight(
    store,
    {
      kind: 'RetentionQuery',
      dateRange: { date_from: '2024-01-31', date_to: '2024-03-01' },
      retentionFilter: { period: 'Month', totalIntervals: 2 },
    },
    { now: new Date('2024-07-01T00:00:00Z') },
  );
  // Three months of cohorts, each with at most totalIntervals (2) periods.
  const expected = retentionRows(periodDates('month', '2024-01-01', 3), [[1, 1], [2, 2], [2]]);
  t.same(answer.rows, expected);
  const hand = handRetentionSql({
    unit: 'month',
    from: '2024-01-01 00:00:00',
    end: '2024-04-01 00:00:00',
    totalIntervals: 2,
  });
  t.same(await handSql(store, hand), expected, 'hand-written SQL agrees');
});
