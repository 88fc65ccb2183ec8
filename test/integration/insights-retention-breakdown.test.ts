/**
 * RetentionQuery breakdowns and filters, worked out by hand: an actor's value in a cohort is the one on
 * their first target event of that period; values ranked by cohort size, then value (null last), past the
 * limit summed into Other; the breakdown magic variable; person properties; the query's `properties`.
 * Every answer is also checked against hand-written SQL.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight, type TestEvent } from '../helpers/insights.ts';
import {
  type HandRetention,
  handRetentionSql,
  periodDates,
  retentionRows,
} from '../helpers/retention-hand.ts';

const view = (id: string, timestamp: string, browser?: string): TestEvent => ({
  event: '$pageview',
  distinctId: id,
  timestamp,
  properties: browser === undefined ? {} : { $browser: browser },
  personProperties: PLANS[id] === undefined ? {} : { plan: PLANS[id] },
});
/** Person properties as the events carry them; p4 has no plan. */
const PLANS: Record<string, string> = { p1: 'pro', p2: 'free', p3: 'pro', p5: 'free' };

// Periods 07-01 … 07-03 (0-2). Cohorts and values: 0: p1 Chrome (its first view of the day), p2 Firefox,
// p4 null (''); 1: p1 Safari, p3 Chrome, p4 Firefox; 2: p1 Chrome, p2 null (missing), p3 Chrome, p5 Edge.
const VIEWS: TestEvent[] = [
  view('p1', '2024-07-01T10:00:00Z', 'Chrome'),
  view('p1', '2024-07-01T11:00:00Z', 'Firefox'),
  view('p1', '2024-07-02T10:00:00Z', 'Safari'),
  view('p1', '2024-07-03T10:00:00Z', 'Chrome'),
  view('p2', '2024-07-01T10:00:00Z', 'Firefox'),
  view('p2', '2024-07-03T10:00:00Z'),
  view('p3', '2024-07-02T10:00:00Z', 'Chrome'),
  view('p3', '2024-07-03T10:00:00Z', 'Chrome'),
  view('p4', '2024-07-01T10:00:00Z', ''),
  view('p4', '2024-07-02T10:00:00Z', 'Firefox'),
  view('p5', '2024-07-03T10:00:00Z', 'Edge'),
];
const DATES = periodDates('day', '2024-07-01', 3);
const NOW = new Date('2024-08-01T00:00:00Z');
const HAND: HandRetention = {
  unit: 'day',
  from: '2024-07-01 00:00:00',
  end: '2024-07-04 00:00:00',
  totalIntervals: 8,
};
const BROWSER = "nullIf(JSONExtract(properties, '$browser', 'Nullable(String)'), '')";

function query(extra: Record<string, unknown>): unknown {
  return {
    kind: 'RetentionQuery',
    dateRange: { date_from: '2024-07-01', date_to: '2024-07-03' },
    retentionFilter: {},
    ...extra,
  };
}

const BY_VALUE: Record<string, number[][]> = {
  Chrome: [[1, 1, 1], [1, 1], [2]],
  Firefox: [[1, 0, 1], [1, 0], [0]],
  null: [[1, 1, 0], [0, 0], [1]],
  Edge: [[0, 0, 0], [0, 0], [1]],
  Safari: [[0, 0, 0], [1, 1], [0]],
};
const rowsOf = (value: string | null, counts?: number[][]): unknown[][] =>
  retentionRows(DATES, counts ?? BY_VALUE[String(value)]!, value);

t.test('breakdown by an event property', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, VIEWS);
  const check = async (
    name: string,
    breakdownFilter: Record<string, unknown>,
    expected: unknown[][],
    hand: HandRetention['breakdown'],
    options: { variables?: Record<string, unknown>; hasMore?: boolean } = {},
  ): Promise<void> => {
    const answer = await runInsight(store, query({ breakdownFilter }), {
      now: NOW,
      variables: options.variables,
    });
    t.same(answer.columns, ['breakdown_value', 'cohort_date', 'cohort_size', 'period', 'count'], name);
    t.same(answer.rows, expected, name);
    t.equal(answer.hasMore, options.hasMore ?? false, `${name}: hasMore`);
    t.same(
      await handSql(store, handRetentionSql({ ...HAND, breakdown: hand })),
      expected,
      `${name}: hand SQL`,
    );
  };

  // Cohort sizes: Chrome 4; Firefox 2 and null 2 (a tie: by value, null last); Edge 1, Safari 1.
  await check(
    'every value, ranked by cohort size then value',
    { breakdown: '$browser', breakdown_type: 'event' },
    [...rowsOf('Chrome'), ...rowsOf('Firefox'), ...rowsOf(null), ...rowsOf('Edge'), ...rowsOf('Safari')],
    { value: BROWSER, limit: 25 },
  );
  await check(
    'breakdown_limit 2: null, Edge and Safari are summed into Other',
    { breakdown: '$browser', breakdown_limit: 2 },
    [...rowsOf('Chrome'), ...rowsOf('Firefox'), ...rowsOf('Other', [[1, 1, 0], [1, 1], [2]])],
    { value: BROWSER, limit: 2 },
    { hasMore: true },
  );
  await check(
    'breakdown_limit 3: null keeps its place',
    { breakdown: '$browser', breakdown_limit: 3 },
    [
      ...rowsOf('Chrome'),
      ...rowsOf('Firefox'),
      ...rowsOf(null),
      ...rowsOf('Other', [[0, 0, 0], [1, 1], [1]]),
    ],
    { value: BROWSER, limit: 3 },
    { hasMore: true },
  );
  await check(
    'the breakdown variable selects one value',
    { breakdown: '$browser' },
    rowsOf('Firefox'),
    { value: BROWSER, limit: 25, where: "value = 'Firefox'" },
    { variables: { $browser: 'Firefox' } },
  );
  await check(
    'the breakdown variable "" selects the null value',
    { breakdown: '$browser', breakdown_limit: 1 },
    rowsOf(null),
    { value: BROWSER, limit: 1, where: 'value IS NULL' },
    { variables: { $browser: '' } },
  );

  const hidden = await runInsight(
    store,
    query({
      breakdownFilter: { breakdown: '$browser', breakdown_limit: 2, breakdown_hide_other_aggregation: true },
    }),
    { now: NOW },
  );
  t.same(
    hidden.rows,
    [...rowsOf('Chrome'), ...rowsOf('Firefox')],
    'breakdown_hide_other_aggregation drops Other',
  );
  t.equal(hidden.hasMore, true, 'and hasMore still tells of it');
});

t.test('breakdown with first time: the value of the first target event', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, VIEWS);
  const answer = await runInsight(
    store,
    query({
      breakdownFilter: { breakdown: '$browser' },
      retentionFilter: { retentionType: 'retention_first_time' },
    }),
    { now: NOW },
  );
  const zeros = [[0, 0, 0], [0, 0], [0]];
  const expected = [
    ...rowsOf('Chrome', [[1, 1, 1], [1, 1], [0]]),
    ...rowsOf('Edge', [[0, 0, 0], [0, 0], [1]]),
    ...rowsOf('Firefox', [[1, 0, 1], ...zeros.slice(1)]),
    ...rowsOf(null, [[1, 1, 0], ...zeros.slice(1)]),
  ];
  t.same(answer.rows, expected);
  const hand = handRetentionSql({ ...HAND, firstTime: true, breakdown: { value: BROWSER, limit: 25 } });
  t.same(await handSql(store, hand), expected, 'hand SQL');
});

t.test('breakdown by a person property, and minimumOccurrences with a breakdown', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, VIEWS);
  const plan = "nullIf(JSONExtract(person_properties, 'plan', 'Nullable(String)'), '')";
  const answer = await runInsight(
    store,
    query({ breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' } }),
    {
      now: NOW,
    },
  );
  const expected = [
    ...rowsOf('pro', [[1, 1, 1], [2, 2], [2]]),
    ...rowsOf('free', [[1, 0, 1], [0, 0], [2]]),
    ...rowsOf(null, [[1, 1, 0], [1, 0], [0]]),
  ];
  t.same(answer.rows, expected);
  t.same(
    await handSql(store, handRetentionSql({ ...HAND, breakdown: { value: plan, limit: 25 } })),
    expected,
    'hand SQL',
  );

  // Nobody views twice in a day after their cohort's: every return is gone, the cohorts stay.
  const twice = await runInsight(
    store,
    query({
      breakdownFilter: { breakdown: 'plan', breakdown_type: 'person' },
      retentionFilter: { minimumOccurrences: 2 },
    }),
    { now: NOW },
  );
  const none = [
    ...rowsOf('pro', [[1, 0, 0], [2, 0], [2]]),
    ...rowsOf('free', [[1, 0, 0], [0, 0], [2]]),
    ...rowsOf(null, [[1, 0, 0], [1, 0], [0]]),
  ];
  t.same(twice.rows, none, 'minimumOccurrences 2');
  const hand = handRetentionSql({ ...HAND, minimumOccurrences: 2, breakdown: { value: plan, limit: 25 } });
  t.same(await handSql(store, hand), none, 'minimumOccurrences 2: hand SQL');
});

t.test("the query's properties filter both target and returning events", async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, VIEWS);
  const cases = [
    {
      properties: [{ key: '$browser', value: ['Chrome', 'Safari'], operator: 'exact', type: 'event' }],
      sql: "JSONExtract(properties, '$browser', 'Nullable(String)') IN ('Chrome', 'Safari')",
    },
    {
      properties: {
        type: 'AND',
        values: [{ type: 'AND', values: [{ key: 'plan', value: 'pro', type: 'person' }] }],
      },
      sql: "JSONExtract(person_properties, 'plan', 'Nullable(String)') = 'pro'",
    },
  ];
  // Either way p1 {0, 1, 2} and p3 {1, 2} are left.
  const expected = retentionRows(DATES, [[1, 1, 1], [2, 2], [2]]);
  for (const c of cases) {
    const answer = await runInsight(store, query({ properties: c.properties }), { now: NOW });
    t.same(answer.rows, expected, c.sql);
    const cond = `event = '$pageview' AND ${c.sql}`;
    t.same(
      await handSql(store, handRetentionSql({ ...HAND, target: cond, returning: cond })),
      expected,
      'hand SQL',
    );
  }
});
