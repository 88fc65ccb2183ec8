/**
 * Who is in a RetentionQuery's cohorts and what counts as a return, worked out by hand on one data set:
 * recurring against first time (with a first event before the range), first ever occurrence, entity
 * filters, minimumOccurrences and cumulative. Every answer is also checked against hand-written SQL.
 */
import t from 'tap';
import { handSql, insertEvents, insightStore, runInsight, type TestEvent } from '../helpers/insights.ts';
import {
  type HandRetention,
  handRetentionSql,
  periodDates,
  retentionRows,
} from '../helpers/retention-hand.ts';

const play = (distinctId: string, timestamp: string, level: number): TestEvent => ({
  event: 'play',
  distinctId,
  timestamp,
  properties: { level },
});

// Range 2024-03-10 … 03-14 (indexes 0-4). Play periods: a {0, 1} (and 03-05, before the range),
// b {1, 2, 4}, c {2, 3} with two plays in each, d only after the range.
const PLAYS: TestEvent[] = [
  play('a', '2024-03-05T10:00:00Z', 1),
  play('a', '2024-03-10T10:00:00Z', 2),
  play('a', '2024-03-11T10:00:00Z', 2),
  play('b', '2024-03-11T10:00:00Z', 1),
  play('b', '2024-03-12T10:00:00Z', 2),
  play('b', '2024-03-14T10:00:00Z', 2),
  play('c', '2024-03-12T09:00:00Z', 2),
  play('c', '2024-03-12T10:00:00Z', 2),
  play('c', '2024-03-13T10:00:00Z', 2),
  play('c', '2024-03-13T11:00:00Z', 2),
  play('d', '2024-03-15T10:00:00Z', 2),
  { event: '$pageview', distinctId: 'e', timestamp: '2024-03-11T10:00:00Z' },
];

const DATES = periodDates('day', '2024-03-10', 5);
const NOW = new Date('2024-04-01T00:00:00Z');
const PLAY = { id: 'play', type: 'events' };
const LEVEL_2 = [{ key: 'level', value: 2, operator: 'exact', type: 'event' }];
const HAND: HandRetention = {
  unit: 'day',
  from: '2024-03-10 00:00:00',
  end: '2024-03-15 00:00:00',
  totalIntervals: 8,
  target: "event = 'play'",
  returning: "event = 'play'",
};

function query(filter: Record<string, unknown>): unknown {
  return {
    kind: 'RetentionQuery',
    dateRange: { date_from: '2024-03-10', date_to: '2024-03-14' },
    retentionFilter: { targetEntity: PLAY, returningEntity: PLAY, ...filter },
  };
}

t.test('cohorts', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, PLAYS);

  const check = async (
    name: string,
    filter: Record<string, unknown>,
    counts: number[][],
    hand: Partial<HandRetention>,
  ): Promise<void> => {
    const answer = await runInsight(store, query(filter), { now: NOW });
    const expected = retentionRows(DATES, counts);
    t.same(answer.rows, expected, name);
    t.same(await handSql(store, handRetentionSql({ ...HAND, ...hand })), expected, `${name}: hand SQL`);
  };

  await check(
    'recurring: a cohort for every period with a target event',
    {},
    [[1, 1, 0, 0, 0], [2, 1, 0, 1], [2, 1, 1], [1, 0], [1]],
    {},
  );
  await check(
    'first time: a started before the range, so only b (03-11) and c (03-12) have a cohort',
    { retentionType: 'retention_first_time' },
    [[0, 0, 0, 0, 0], [1, 1, 0, 1], [1, 1, 0], [0, 0], [0]],
    { firstTime: true },
  );
  await check(
    "first time with the target's filters: the first play of level 2 (a: 03-10, b: 03-12)",
    { retentionType: 'retention_first_time', targetEntity: { ...PLAY, properties: LEVEL_2 } },
    [[1, 1, 0, 0, 0], [0, 0, 0, 0], [2, 1, 1], [0, 0], [0]],
    {
      firstTime: true,
      target: "event = 'play' AND JSONExtract(properties, 'level', 'Nullable(String)') = '2'",
    },
  );
  await check(
    "first ever occurrence: the first play, if it is of level 2 (only c's is)",
    { retentionType: 'retention_first_ever_occurrence', targetEntity: { ...PLAY, properties: LEVEL_2 } },
    [[0, 0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 0], [0, 0], [0]],
    {
      firstTime: true,
      firstEvent: "event = 'play'",
      target: "event = 'play' AND JSONExtract(properties, 'level', 'Nullable(String)') = '2'",
    },
  );
  await check(
    'minimumOccurrences 2: a return needs two plays in the period (only c on 03-13 after its cohort)',
    { minimumOccurrences: 2 },
    [[1, 0, 0, 0, 0], [2, 0, 0, 0], [2, 1, 0], [1, 0], [1]],
    { minimumOccurrences: 2 },
  );
  await check(
    'first time with minimumOccurrences 2',
    { retentionType: 'retention_first_time', minimumOccurrences: 2 },
    [[0, 0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0], [0, 0], [0]],
    { firstTime: true, minimumOccurrences: 2 },
  );
  await check(
    'cumulative: an actor counts in every period up to their last return',
    { cumulative: true },
    [[1, 1, 0, 0, 0], [2, 1, 1, 1], [2, 2, 1], [1, 0], [1]],
    { cumulative: true },
  );
  await check(
    'returning entity filters: only plays of level 2 are returns',
    { returningEntity: { ...PLAY, properties: LEVEL_2 }, totalIntervals: 3 },
    [[1, 1, 0], [2, 1, 0], [2, 1, 1], [1, 0], [1]],
    {
      totalIntervals: 3,
      returning: "event = 'play' AND JSONExtract(properties, 'level', 'Nullable(String)') = '2'",
    },
  );
});

t.test('a target of any event (id null) and a returning pageview', async (t) => {
  const store = await insightStore(t);
  await insertEvents(store, PLAYS);
  const answer = await runInsight(
    store,
    query({ targetEntity: { id: null, type: 'events' }, returningEntity: { id: 'play', type: 'events' } }),
    { now: NOW },
  );
  // As recurring, plus e, whose pageview of 03-11 puts them in that cohort without returning.
  const expected = retentionRows(DATES, [[1, 1, 0, 0, 0], [3, 1, 0, 1], [2, 1, 1], [1, 0], [1]]);
  t.same(answer.rows, expected);
  t.same(await handSql(store, handRetentionSql({ ...HAND, target: '1' })), expected, 'hand SQL');
});
