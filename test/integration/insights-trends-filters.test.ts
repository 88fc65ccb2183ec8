/**
 * Trends property filters (SPEC §4): every operator, on event and person properties, on the query and on
 * each series — each count worked out by hand and checked against a hand-written ClickHouse condition.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight } from '../helpers/insights.ts';
import { valuesOf } from '../helpers/trends.ts';

const store = await insightStore(t);
const NOW = new Date('2024-06-10T12:00:00Z');
// Five payments on 1 June 2024; `amount` is a number or a numeric string, `when` a date or not one.
const PAYMENTS: [Record<string, unknown>, Record<string, unknown>][] = [
  [{ amount: 5, plan: 'Pro', when: '2024-01-10' }, { country: 'FR' }],
  [{ amount: 50, plan: 'free', when: '2024-06-01T10:00:00' }, { country: 'DE' }],
  [{ amount: '120', plan: 'Enterprise Pro' }, {}],
  [{ when: 'not a date' }, { country: 'FR' }],
  [{ amount: 7.5, plan: 'pro', when: '2023-12-31' }, { country: 'US' }],
];
await insertEvents(
  store,
  PAYMENTS.map(([properties, personProperties], i) => ({
    event: 'pay',
    distinctId: `payer${i}`,
    timestamp: `2024-06-01T0${i}:00:00Z`,
    properties,
    personProperties,
  })),
);

const RANGE = { date_from: '2024-06-01', date_to: '2024-06-01' };
async function count(query: Record<string, unknown>, node: Record<string, unknown> = {}): Promise<number[]> {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'pay', ...node }],
      dateRange: RANGE,
      ...query,
    },
    { now: NOW },
  );
  return valuesOf(a, 0);
}
/** The events a hand-written condition keeps. */
async function hand(condition: string): Promise<number> {
  const rows = await handSql(
    store,
    `SELECT count() FROM events FINAL WHERE project_id = {project:UInt64} AND event = 'pay' AND (${condition})`,
  );
  return Number(rows[0]![0]);
}

const P = (key: string): string => `JSONExtract(properties, '${key}', 'Nullable(String)')`;
const PERSON = (key: string): string => `JSONExtract(person_properties, '${key}', 'Nullable(String)')`;
const NUM = `toFloat64OrNull(${P('amount')})`;
const DATE = `parseDateTime64BestEffortOrNull(${P('when')}, 6, 'UTC')`;

// [what, filter, count by hand, the same condition by hand]
const CASES: [string, Record<string, unknown>, number, string][] = [
  ['exact is case-sensitive', { key: 'plan', value: 'Pro', operator: 'exact' }, 1, `${P('plan')} = 'Pro'`],
  ['exact without an operator', { key: 'plan', value: 'free' }, 1, `${P('plan')} = 'free'`],
  [
    'exact of a list: any of',
    { key: 'plan', value: ['Pro', 'free'], operator: 'exact' },
    2,
    `${P('plan')} IN ('Pro', 'free')`,
  ],
  [
    'exact of a number also matches a numeric string',
    { key: 'amount', value: 120, operator: 'exact' },
    1,
    `${NUM} = 120`,
  ],
  [
    'is_not: a missing property is not the value',
    { key: 'plan', value: 'Pro', operator: 'is_not' },
    4,
    `ifNull(${P('plan')} != 'Pro', true)`,
  ],
  [
    'is_not of a list: none of',
    { key: 'plan', value: ['Pro', 'free'], operator: 'is_not' },
    3,
    `ifNull(${P('plan')} NOT IN ('Pro', 'free'), true)`,
  ],
  [
    'icontains ignores case',
    { key: 'plan', value: 'pro', operator: 'icontains' },
    3,
    `${P('plan')} ILIKE '%pro%'`,
  ],
  [
    'not_icontains: missing counts',
    { key: 'plan', value: 'pro', operator: 'not_icontains' },
    2,
    `ifNull(${P('plan')} NOT ILIKE '%pro%', true)`,
  ],
  ['regex', { key: 'plan', value: '^[Pp]ro$', operator: 'regex' }, 2, `match(${P('plan')}, '^[Pp]ro$')`],
  [
    'not_regex: missing counts',
    { key: 'plan', value: '^[Pp]ro$', operator: 'not_regex' },
    3,
    `ifNull(NOT match(${P('plan')}, '^[Pp]ro$'), true)`,
  ],
  ['gt compares numbers, "120" included', { key: 'amount', value: 7.5, operator: 'gt' }, 2, `${NUM} > 7.5`],
  ['gte', { key: 'amount', value: '7.5', operator: 'gte' }, 3, `${NUM} >= 7.5`],
  ['lt', { key: 'amount', value: 50, operator: 'lt' }, 2, `${NUM} < 50`],
  ['lte', { key: 'amount', value: 50, operator: 'lte' }, 3, `${NUM} <= 50`],
  ['is_set', { key: 'plan', operator: 'is_set', value: 'is_set' }, 4, `${P('plan')} IS NOT NULL`],
  ['is_not_set', { key: 'plan', operator: 'is_not_set' }, 1, `${P('plan')} IS NULL`],
  [
    'is_date_before',
    { key: 'when', value: '2024-01-01', operator: 'is_date_before' },
    1,
    `${DATE} < '2024-01-01'`,
  ],
  [
    'is_date_after',
    { key: 'when', value: '2024-01-01', operator: 'is_date_after' },
    2,
    `${DATE} > '2024-01-01'`,
  ],
  [
    'is_date_after a relative date (-30d at now)',
    { key: 'when', value: '-30d', operator: 'is_date_after' },
    1,
    `${DATE} > '2024-05-11'`,
  ],
  [
    'a person property: exact',
    { key: 'country', value: 'FR', type: 'person' },
    2,
    `${PERSON('country')} = 'FR'`,
  ],
  [
    'a person property: is_not_set',
    { key: 'country', type: 'person', operator: 'is_not_set' },
    1,
    `${PERSON('country')} IS NULL`,
  ],
  [
    'a person property: icontains',
    { key: 'country', value: 'd', type: 'person', operator: 'icontains' },
    1,
    `${PERSON('country')} ILIKE '%d%'`,
  ],
];

for (const [what, filter, expected, condition] of CASES) {
  t.test(what, async (t) => {
    t.same(await count({ properties: [filter] }), [expected], 'on the query');
    t.same(await count({}, { properties: [filter] }), [expected], 'on the series');
    t.equal(await hand(condition), expected, 'the hand-written condition agrees');
  });
}

t.test('filters on the query and on the series are ANDed', async (t) => {
  const got = await count(
    { properties: [{ key: 'country', value: 'FR', type: 'person' }] },
    { properties: [{ key: 'plan', operator: 'is_set' }] },
  );
  t.same(got, [1], 'payer0 only: payer3 is in France but has no plan');
  t.equal(await hand(`${PERSON('country')} = 'FR' AND ${P('plan')} IS NOT NULL`), 1);
  const group = await count({
    properties: {
      type: 'AND',
      values: [
        {
          type: 'AND',
          values: [
            { key: 'plan', operator: 'is_set' },
            { key: 'amount', value: 10, operator: 'lt' },
          ],
        },
      ],
    },
  });
  t.same(group, [2], "PostHog's AND group: Pro (5) and pro (7.5)");
});

t.test('each series keeps its own filters in one query', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [
        {
          kind: 'EventsNode',
          event: 'pay',
          properties: [{ key: 'plan', value: 'pro', operator: 'icontains' }],
        },
        { kind: 'EventsNode', event: 'pay', properties: [{ key: 'amount', value: 10, operator: 'gt' }] },
        { kind: 'EventsNode', event: 'pay' },
      ],
      dateRange: RANGE,
      properties: [{ key: 'country', type: 'person', operator: 'is_set' }],
    },
    { now: NOW },
  );
  // With a country: payer0 (Pro, 5), payer1 (free, 50), payer3 (nothing), payer4 (pro, 7.5).
  t.same([valuesOf(a, 0), valuesOf(a, 1), valuesOf(a, 2)], [[2], [1], [4]]);
  t.equal(await hand(`${PERSON('country')} IS NOT NULL AND ${P('plan')} ILIKE '%pro%'`), 2);
  t.equal(await hand(`${PERSON('country')} IS NOT NULL AND ${NUM} > 10`), 1);
});
