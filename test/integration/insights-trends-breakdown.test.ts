/**
 * Trends breakdowns (SPEC §4): values ranked by their total (ties by value), the limit and `Other` (hasMore,
 * hide_other), null for a missing or empty value, `Other` of a distinct-persons math counting each person
 * once, several breakdowns, person-property breakdowns and the breakdown magic variable — hand-worked and
 * checked against hand-written SQL.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight, type TestEvent } from '../helpers/insights.ts';
import { breakdownsOf, valuesOf } from '../helpers/trends.ts';

const store = await insightStore(t);
const NOW = new Date('2024-05-10T00:00:00Z');
const PLAN: Record<string, string> = { u1: 'pro', u2: 'free' };

// Plays on 1–3 May 2024: [day, person, genre (null: none, '': empty)]. u1 plays on mobile, u8 has no device.
const PLAYS: [number, string, string | null][] = [
  [1, 'u1', 'rock'],
  [1, 'u1', 'rock'],
  [2, 'u1', 'rock'],
  [2, 'u2', 'rock'],
  [3, 'u3', 'rock'],
  [1, 'u1', 'jazz'],
  [2, 'u4', 'jazz'],
  [3, 'u5', 'jazz'],
  [1, 'u2', 'pop'],
  [3, 'u6', 'pop'],
  [3, 'u6', 'pop'],
  [2, 'u1', 'blues'],
  [3, 'u7', 'blues'],
  [1, 'u8', null],
  [2, 'u9', null],
  [3, 'u8', ''],
  [3, 'u2', 'folk'],
  [3, 'u7', 'folk'],
];
await insertEvents(
  store,
  PLAYS.map(([day, who, genre], i): TestEvent => {
    const properties: Record<string, unknown> = {};
    if (genre !== null) properties['genre'] = genre;
    if (who !== 'u8') properties['device'] = who === 'u1' ? 'mobile' : 'desktop';
    return {
      event: 'play',
      distinctId: who,
      timestamp: `2024-05-0${day}T1${i % 10}:00:00Z`,
      properties,
      personProperties: PLAN[who] ? { plan: PLAN[who] } : {},
    };
  }),
);

const RANGE = { date_from: '2024-05-01', date_to: '2024-05-03' };
async function trend(
  breakdownFilter: Record<string, unknown>,
  options: { node?: Record<string, unknown>; display?: string; variables?: Record<string, unknown> } = {},
) {
  return runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'play', ...options.node }],
      dateRange: RANGE,
      breakdownFilter,
      ...(options.display ? { trendsFilter: { display: options.display } } : {}),
    },
    { now: NOW, variables: options.variables ?? {} },
  );
}
const HAND_GENRE = "nullIf(JSONExtractString(properties, 'genre'), '')";

t.test('values by total, highest first, ties by value; null (missing or empty) after them', async (t) => {
  const a = await trend({ breakdown: 'genre' });
  t.same(breakdownsOf(a, 0), ['rock', 'jazz', 'pop', 'blues', 'folk', null]);
  t.same(valuesOf(a, 0, 'rock'), [2, 2, 1]);
  t.same(valuesOf(a, 0, 'pop'), [1, 0, 2]);
  t.same(valuesOf(a, 0, null), [1, 1, 1], 'a missing genre on 1 and 2 May, an empty one on 3 May');
  t.equal(a.hasMore, false);
  const hand = await handSql(
    store,
    `SELECT ${HAND_GENRE} AS g, count() AS n FROM events FINAL WHERE project_id = {project:UInt64}
     GROUP BY g ORDER BY g IS NULL, n DESC, g`,
  );
  t.same(
    hand,
    breakdownsOf(a, 0).map((g) => [g, valuesOf(a, 0, g).reduce((x, y) => x + y, 0)]),
  );
});

t.test('breakdown_limit: the values past it are summed into Other, and hasMore says so', async (t) => {
  const a = await trend({ breakdown: 'genre', breakdown_limit: 3 });
  // rock 5, jazz 3, pop 3 and null 3 (after pop, a tie), blues 2, folk 2: null, blues and folk are Other.
  t.same(breakdownsOf(a, 0), ['rock', 'jazz', 'pop', 'Other']);
  t.same(valuesOf(a, 0, 'Other'), [1, 2, 4]);
  t.equal(a.hasMore, true);
  const hand = await handSql(
    store,
    `SELECT toDate(timestamp) AS d, count() FROM events FINAL WHERE project_id = {project:UInt64}
     AND (${HAND_GENRE} IS NULL OR ${HAND_GENRE} NOT IN ('rock', 'jazz', 'pop')) GROUP BY d ORDER BY d`,
  );
  t.same(
    hand.map((r) => r[1]),
    [1, 2, 4],
  );

  const hidden = await trend({
    breakdown: 'genre',
    breakdown_limit: 3,
    breakdown_hide_other_aggregation: true,
  });
  t.same(breakdownsOf(hidden, 0), ['rock', 'jazz', 'pop'], 'hide_other leaves the Other rows out');
  t.equal(hidden.hasMore, true, 'and hasMore still tells of them');
});

t.test('Other of dau: the persons of the other values, each once', async (t) => {
  const a = await trend({ breakdown: 'genre', breakdown_limit: 2 }, { node: { math: 'dau' } });
  // dau totals: rock 4, jazz 3, null 3, blues 2, folk 2, pop 2. On 3 May the others are u8 (null), u7
  // (blues and folk), u2 (folk) and u6 (pop): 4 persons, though their own rows add up to 5.
  t.same(breakdownsOf(a, 0), ['rock', 'jazz', 'Other']);
  t.same(valuesOf(a, 0, 'rock'), [1, 2, 1]);
  t.same(valuesOf(a, 0, 'Other'), [2, 2, 4]);
  const hand = await handSql(
    store,
    `SELECT toDate(timestamp) AS d, uniqExact(person_id) FROM events FINAL WHERE project_id = {project:UInt64}
     AND (${HAND_GENRE} IS NULL OR ${HAND_GENRE} NOT IN ('rock', 'jazz')) GROUP BY d ORDER BY d`,
  );
  t.same(
    hand.map((r) => r[1]),
    [2, 2, 4],
  );
  const all = await trend({ breakdown: 'genre' }, { node: { math: 'dau' } });
  t.same(breakdownsOf(all, 0), ['rock', 'jazz', 'blues', 'folk', 'pop', null], 'ranked by the dau total');
  t.same(
    ['blues', 'folk', 'pop', null].map((g) => valuesOf(all, 0, g)[2]),
    [1, 2, 1, 1],
    'their own rows on 3 May',
  );
});

t.test('several breakdowns: breakdown_value is a list; the limit applies to the combinations', async (t) => {
  const a = await trend(
    { breakdowns: [{ property: 'genre' }, { property: 'device', type: 'event' }], breakdown_limit: 4 },
    { display: 'ActionsTable' },
  );
  t.same(a.columns, ['series_index', 'series', 'breakdown_value', 'value']);
  t.equal(a.types[2], 'Array(Nullable(String))');
  t.same(
    a.rows.map((r) => [r[2], r[3]]),
    [
      [['pop', 'desktop'], 3],
      [['rock', 'mobile'], 3],
      [['folk', 'desktop'], 2],
      [['jazz', 'desktop'], 2],
      [['Other', 'Other'], 8],
    ],
  );
  t.equal(a.hasMore, true);
  const all = await trend(
    { breakdowns: [{ property: 'genre' }, { property: 'device' }] },
    { display: 'ActionsTable' },
  );
  t.same(breakdownsOf(all, 0), [
    ['pop', 'desktop'],
    ['rock', 'mobile'],
    ['folk', 'desktop'],
    ['jazz', 'desktop'],
    ['rock', 'desktop'],
    ['blues', 'desktop'],
    ['blues', 'mobile'],
    ['jazz', 'mobile'],
    [null, 'desktop'],
    [null, null],
  ]);
  const hand = await handSql(
    store,
    `SELECT [${HAND_GENRE}, nullIf(JSONExtractString(properties, 'device'), '')] AS k, count() AS n
     FROM events FINAL WHERE project_id = {project:UInt64} GROUP BY k ORDER BY arrayAll(x -> x IS NULL, k), n DESC, k`,
  );
  t.same(
    hand,
    all.rows.map((r) => [r[2], r[3]]),
  );
  const daily = await trend({
    breakdowns: [{ property: 'genre' }, { property: 'device' }],
    breakdown_limit: 1,
  });
  t.same(valuesOf(daily, 0, ['pop', 'desktop']), [1, 0, 2]);
  t.same(valuesOf(daily, 0, ['Other', 'Other']), [4, 5, 6], 'all 18 plays but pop on desktop');
});

t.test('a person-property breakdown reads the person as the event saw it', async (t) => {
  const a = await trend({ breakdown: 'plan', breakdown_type: 'person' }, { display: 'ActionsPie' });
  t.same(
    a.rows.map((r) => [r[2], r[3]]),
    [
      ['pro', 5],
      ['free', 3],
      [null, 10],
    ],
  );
  const hand = await handSql(
    store,
    `SELECT nullIf(JSONExtractString(person_properties, 'plan'), '') AS p, count() AS n FROM events FINAL
     WHERE project_id = {project:UInt64} GROUP BY p ORDER BY p IS NULL, n DESC`,
  );
  t.same(
    hand,
    a.rows.map((r) => [r[2], r[3]]),
  );
});

t.test('the breakdown variable selects one value, or null with ""', async (t) => {
  const jazz = await trend({ breakdown: 'genre' }, { variables: { genre: 'jazz' } });
  t.same(
    jazz.rows.map((r) => [r[2], r[3], r[4]]),
    [
      ['jazz', '2024-05-01', 1],
      ['jazz', '2024-05-02', 1],
      ['jazz', '2024-05-03', 1],
    ],
  );
  const none = await trend({ breakdown: 'genre' }, { variables: { genre: '' } });
  t.same(breakdownsOf(none, 0), [null]);
  t.same(valuesOf(none, 0, null), [1, 1, 1]);
  const past = await trend({ breakdown: 'genre', breakdown_limit: 1 }, { variables: { genre: 'folk' } });
  t.same(breakdownsOf(past, 0), ['folk'], 'a value past the limit is still there when selected');
  t.equal(past.hasMore, false);
  const missing = await trend({ breakdown: 'genre' }, { variables: { genre: 'polka' } });
  t.same(missing.rows, []);
});

t.test('each series ranks its own values and has its own Other', async (t) => {
  const a = await runInsight(
    store,
    {
      kind: 'TrendsQuery',
      series: [
        { kind: 'EventsNode', event: 'play' },
        { kind: 'EventsNode', event: 'play', math: 'dau', custom_name: 'players' },
      ],
      dateRange: RANGE,
      breakdownFilter: { breakdown: 'genre', breakdown_limit: 2 },
      trendsFilter: { display: 'BoldNumber' },
    },
    { now: NOW },
  );
  t.same(a.rows, [
    [0, 'play', 'rock', 5],
    [0, 'play', 'jazz', 3],
    [0, 'play', 'Other', 10],
    [1, 'players', 'jazz', 3],
    [1, 'players', 'rock', 3],
    [1, 'players', 'Other', 6],
  ]);
  const hand = await handSql(
    store,
    `SELECT uniqExact(person_id) FROM events FINAL WHERE project_id = {project:UInt64}
     AND (${HAND_GENRE} IS NULL OR ${HAND_GENRE} NOT IN ('rock', 'jazz'))`,
  );
  t.same(hand, [[6]], 'u1, u2, u6, u7, u8 and u9, each once');
});

t.test(
  'weekly_active by value: Other counts the persons of the other values in each window once',
  async (t) => {
    const a = await trend({ breakdown: 'genre', breakdown_limit: 2 }, { node: { math: 'weekly_active' } });
    // Every play is within 7 days, so each day's window holds all plays so far. Totals: jazz 1+2+3 = 6,
    // rock 6, null 5, pop 4, blues 3, folk 2.
    t.same(breakdownsOf(a, 0), ['jazz', 'rock', 'Other']);
    t.same(valuesOf(a, 0, 'jazz'), [1, 2, 3]);
    t.same(valuesOf(a, 0, 'rock'), [1, 2, 3]);
    t.same(valuesOf(a, 0, 'Other'), [2, 4, 6], 'u8, u2; then u9, u1; then u6, u7');
    const hand = await handSql(
      store,
      `SELECT d, uniqExactIf(person_id, toDate(timestamp) <= d) FROM events FINAL
     ARRAY JOIN [toDate('2024-05-01'), toDate('2024-05-02'), toDate('2024-05-03')] AS d
     WHERE project_id = {project:UInt64} AND (${HAND_GENRE} IS NULL OR ${HAND_GENRE} NOT IN ('rock', 'jazz'))
     GROUP BY d ORDER BY d`,
    );
    t.same(
      hand.map((r) => r[1]),
      [2, 4, 6],
    );
  },
);
