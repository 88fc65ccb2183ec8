/**
 * Every trends math (SPEC §4) on a small dataset worked out by hand, each checked against hand-written SQL:
 * counts, distinct persons (merged persons counted once), sessions, groups, the property maths on event and
 * person properties, and the rolling weekly / monthly active persons that look back before `date_from`.
 */
import t from 'tap';
import {
  handSql,
  insertEvents,
  insightStore,
  personOf,
  pointDistinctIds,
  runInsight,
  type TestEvent,
} from '../helpers/insights.ts';
import { HAND_ACTOR, handSeries, valuesOf } from '../helpers/trends.ts';

const store = await insightStore(t);
const NOW = new Date('2024-03-20T12:00:00Z');

// Purchases, 1–5 March 2024. alice-phone is alice's second device: its events were stored under a person
// of its own, and the merge then pointed the id at alice (as $identify does).
const AGE: Record<string, number> = { alice: 30, 'alice-phone': 30, bob: 40, carol: 50 };
const buy = (
  day: number,
  who: string,
  props: Record<string, unknown>,
  group: string,
  hour = 12,
): TestEvent => ({
  event: 'buy',
  distinctId: who,
  timestamp: `2024-03-0${day}T${String(hour).padStart(2, '0')}:00:00Z`,
  properties: props,
  personProperties: { age: AGE[who] },
  groups: [group],
});
await insertEvents(store, [
  buy(1, 'alice', { amount: 10, $session_id: 's1' }, 'g1'),
  buy(1, 'alice-phone', { amount: 20, $session_id: 's2' }, 'g1'),
  buy(1, 'bob', { amount: 30, $session_id: 's3' }, 'g2'),
  buy(2, 'bob', { amount: 'x', $session_id: 's3' }, ''),
  buy(2, 'carol', { $session_id: '' }, ''),
  buy(4, 'alice', { amount: 5, $session_id: 's4' }, 'g3'),
  buy(4, 'carol', { amount: 15, $session_id: 's5' }, 'g3'),
  buy(4, 'bob', { amount: 25, $session_id: 's6' }, 'g3'),
  buy(4, 'alice-phone', { amount: 35, $session_id: 's4' }, 'g3'),
  buy(5, 'carol', { amount: 100 }, ''),
]);
await pointDistinctIds(store, [{ distinctId: 'alice-phone', personId: personOf('alice') }], 1, 2);

const RANGE = { date_from: '2024-03-01', date_to: '2024-03-05' };
const IN_RANGE = "e.event = 'buy' AND e.timestamp >= '2024-03-01' AND e.timestamp < '2024-03-06'";
async function trend(node: Record<string, unknown>): Promise<number[]> {
  const a = await runInsight(
    store,
    { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'buy', ...node }], dateRange: RANGE },
    { now: NOW },
  );
  return valuesOf(a, 0);
}
const hand = (value: string): Promise<number[]> =>
  handSeries(store, { value: `ifNull(${value}, 0)`, where: IN_RANGE, from: '2024-03-01', to: '2024-03-06' });

const AMOUNT = "toFloat64OrNull(JSONExtractRaw(e.properties, 'amount'))";
const CASES: [string, Record<string, unknown>, number[], string][] = [
  ['total: every event', { math: 'total' }, [3, 2, 0, 4, 1], 'count()'],
  ['dau: alice and her phone are one person', { math: 'dau' }, [2, 2, 0, 3, 1], `uniqExact(${HAND_ACTOR})`],
  [
    'unique_session: an empty session id is none',
    { math: 'unique_session' },
    [3, 1, 0, 3, 0],
    "uniqExact(nullIf(JSONExtractString(e.properties, '$session_id'), ''))",
  ],
  [
    'unique_group: distinct $group_0, empty excluded',
    { math: 'unique_group', math_group_type_index: 0 },
    [2, 0, 0, 1, 0],
    "uniqExact(nullIf(e.`$group_0`, ''))",
  ],
  [
    'sum: "x" and a missing amount are no number',
    { math: 'sum', math_property: 'amount' },
    [60, 0, 0, 80, 100],
    `sum(${AMOUNT})`,
  ],
  ['avg', { math: 'avg', math_property: 'amount' }, [20, 0, 0, 20, 100], `avg(${AMOUNT})`],
  ['min', { math: 'min', math_property: 'amount' }, [10, 0, 0, 5, 100], `min(${AMOUNT})`],
  ['max', { math: 'max', math_property: 'amount' }, [30, 0, 0, 35, 100], `max(${AMOUNT})`],
  ['median', { math: 'median', math_property: 'amount' }, [20, 0, 0, 20, 100], `quantile(0.5)(${AMOUNT})`],
  // quantile interpolates: p75 of [10, 20, 30] is at 0.75 × 2 = 1.5 → 25; of [5, 15, 25, 35] at 2.25 → 27.5.
  ['p75', { math: 'p75', math_property: 'amount' }, [25, 0, 0, 27.5, 100], `quantile(0.75)(${AMOUNT})`],
  ['p90', { math: 'p90', math_property: 'amount' }, [28, 0, 0, 32, 100], `quantile(0.9)(${AMOUNT})`],
  ['p95', { math: 'p95', math_property: 'amount' }, [29, 0, 0, 33.5, 100], `quantile(0.95)(${AMOUNT})`],
  ['p99', { math: 'p99', math_property: 'amount' }, [29.8, 0, 0, 34.7, 100], `quantile(0.99)(${AMOUNT})`],
  [
    'sum of a person property (math_property_type person_properties)',
    { math: 'sum', math_property: 'age', math_property_type: 'person_properties' },
    [100, 90, 0, 150, 50],
    "sum(toFloat64OrNull(JSONExtractRaw(e.person_properties, 'age')))",
  ],
];

for (const [name, node, expected, value] of CASES) {
  t.test(name, async (t) => {
    const got = await trend(node);
    t.same(
      got.map((v) => Math.round(v * 1e9) / 1e9),
      expected,
      'the hand-worked values',
    );
    t.same(got, await hand(value), 'the hand-written SQL agrees');
  });
}

t.test('dau without the merge would count alice twice on 1 March', async (t) => {
  const rows = await handSql(
    store,
    `SELECT uniqExact(person_id) FROM events FINAL WHERE project_id = {project:UInt64} AND toDate(timestamp) = '2024-03-01'`,
  );
  t.same(rows, [[3]], 'the persons the events were stored under');
  t.equal((await trend({ math: 'dau' }))[0], 2);
});

t.test('several series of different maths in one query, each on its own rows', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [
        { kind: 'EventsNode', event: 'buy', math: 'dau' },
        { kind: 'EventsNode', event: 'buy', math: 'sum', math_property: 'amount' },
        { kind: 'EventsNode', event: 'buy' },
        { kind: 'EventsNode', event: 'buy', math: 'sum', math_property: 'amount', custom_name: 'again' },
      ],
      dateRange: RANGE,
    },
    { now: NOW },
  );
  t.same(valuesOf(a, 0), [2, 2, 0, 3, 1]);
  t.same(valuesOf(a, 1), [60, 0, 0, 80, 100]);
  t.same(valuesOf(a, 2), [3, 2, 0, 4, 1]);
  t.same(valuesOf(a, 3), [60, 0, 0, 80, 100], 'two series of one math share their work, not their rows');
});

// Logins for the rolling windows, 10–16 March 2024 (Sunday to Saturday). dave and frank were active only
// before the range; gina logs in from two distinct ids of one person.
await insertEvents(store, [
  { event: 'login', distinctId: 'frank', timestamp: '2024-02-15T08:00:00Z' },
  { event: 'login', distinctId: 'dave', timestamp: '2024-03-04T08:00:00Z' },
  { event: 'login', distinctId: 'erin', timestamp: '2024-03-08T08:00:00Z' },
  { event: 'login', distinctId: 'erin', timestamp: '2024-03-12T23:59:59Z' },
  { event: 'login', distinctId: 'gina', timestamp: '2024-03-12T08:00:00Z' },
  { event: 'login', distinctId: 'gina-web', timestamp: '2024-03-12T09:00:00Z' },
]);
await pointDistinctIds(store, [{ distinctId: 'gina-web', personId: personOf('gina') }], 1, 2);
const WEEK = { date_from: '2024-03-10', date_to: '2024-03-16' };
const DAYS = [
  '2024-03-10',
  '2024-03-11',
  '2024-03-12',
  '2024-03-13',
  '2024-03-14',
  '2024-03-15',
  '2024-03-16',
];

/** Distinct persons with a login in the `n` days ending with each day, by hand. */
async function handActive(n: number): Promise<number[]> {
  const rows = await handSql(
    store,
    `SELECT d, toFloat64(uniqExactIf(${HAND_ACTOR}, e.timestamp >= d - INTERVAL ${n - 1} DAY AND e.timestamp < d + INTERVAL 1 DAY))
     FROM events AS e FINAL
     LEFT JOIN (SELECT distinct_id, argMax(person_id, version) AS person_id FROM person_distinct_ids FINAL
                WHERE project_id = {project:UInt64} GROUP BY distinct_id) AS pdi ON pdi.distinct_id = e.distinct_id
     ARRAY JOIN [${DAYS.map((d) => `toDateTime('${d}', 'UTC')`).join(', ')}] AS d
     WHERE e.project_id = {project:UInt64} AND e.event = 'login'
     GROUP BY d ORDER BY d`,
  );
  return rows.map((r) => Number(r[1]));
}
const active = (math: string, extra: Record<string, unknown> = {}): Promise<number[]> =>
  runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'login', math }],
      dateRange: WEEK,
      ...extra,
    },
    { now: NOW },
  ).then((a) => valuesOf(a, 0));

t.test('weekly_active: persons of the 7 days ending with each day, from before date_from', async (t) => {
  const got = await active('weekly_active');
  // 10 Mar: dave (4 Mar) and erin (8 Mar); from 11 Mar only erin; from 12 Mar erin and gina (one person).
  t.same(got, [2, 1, 2, 2, 2, 2, 2]);
  t.same(got, await handActive(7));
});

t.test('monthly_active: persons of the 30 days ending with each day', async (t) => {
  const got = await active('monthly_active');
  // frank (15 Feb) is in every window up to 15 Mar's (15 Feb – 15 Mar), not in 16 Mar's.
  t.same(got, [3, 3, 4, 4, 4, 4, 3]);
  t.same(got, await handActive(30));
});

t.test('weekly / monthly active by week: the window ends with the week', async (t) => {
  t.same(await active('weekly_active', { interval: 'week' }), [2], 'erin and gina in 10–16 March');
  t.same(await active('monthly_active', { interval: 'week' }), [3], 'dave too (16 Feb – 16 Mar)');
  t.same((await handActive(7)).at(-1), 2);
  t.same((await handActive(30)).at(-1), 3);
});

t.test('weekly / monthly active with a total-value display: the window ends with date_to', async (t) => {
  const display = { trendsFilter: { display: 'BoldNumber' } };
  t.same(await active('weekly_active', display), [2]);
  t.same(await active('monthly_active', display), [3]);
  t.same(await active('dau', display), [2], 'dau: the persons of the range itself (erin, gina)');
});

t.test('weekly_active beside another math: both answered, each its own way', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [
        { kind: 'EventsNode', event: 'login', math: 'weekly_active' },
        { kind: 'EventsNode', event: 'login', math: 'dau' },
        { kind: 'EventsNode', event: 'login', math: 'monthly_active' },
      ],
      dateRange: WEEK,
    },
    { now: NOW },
  );
  t.same(valuesOf(a, 0), [2, 1, 2, 2, 2, 2, 2]);
  t.same(valuesOf(a, 1), [0, 0, 2, 0, 0, 0, 0]);
  t.same(valuesOf(a, 2), [3, 3, 4, 4, 4, 4, 3]);
  t.same(
    a.rows.map((r) => r[0]),
    [0, 1, 2].flatMap((s) => Array<number>(7).fill(s)),
    'in series order',
  );
});
