/**
 * Scenario 3: weekly retention over 8 periods — of the persons who signed up in a week, how many viewed a
 * page 0 … 7 weeks later: a RetentionQuery (period Week, totalIntervals 8, recurring), against the same table
 * written by hand. Weeks, because the dataset's 90 days hold 8 of them before `now` with room to spare.
 *
 * The range is PostHog's for retention: the week holding `now` is the last, and the first is 8 weeks before
 * it — 2026-01-25 (a Sunday) to the end of 2026-03-21. The hand-written query reads the target and returning
 * events once, with FINAL on `events` and `person_distinct_ids`, and keeps per person (now behind the
 * distinct id) two bitmasks: the weeks they signed up in, the weeks they viewed a page in. Every cell of the
 * answer — cohort c, period k with c + k ≤ 7 (begun by the range's end) — is then a bit test, summed over
 * persons with `sumForEach`, so empty cells are there as 0.
 */
import { actorSql, eventsWhere, sqlTime, type Scenario } from './scenario.ts';

const FROM = '2026-01-25 00:00:00';
const TO = '2026-03-21 23:59:59.999999';
const PERIODS = 8;

const query = {
  kind: 'RetentionQuery',
  retentionFilter: {
    period: 'Week',
    totalIntervals: PERIODS,
    retentionType: 'retention_recurring',
    targetEntity: { id: 'signed up', type: 'events' },
    returningEntity: { id: '$pageview', type: 'events' },
  },
};

/** The event's week of the range, as a bit: 0 … 7, counted from its first Sunday. */
const WEEK_BIT = `bitShiftLeft(toUInt64(1), intDiv(toDate(e.timestamp) - toDate(${sqlTime(FROM)}), 7))`;

const hand = `
WITH arrayFlatten(arrayMap(c -> arrayMap(k -> (c, k), range(${PERIODS} - c)), range(${PERIODS}))) AS cells
SELECT
  toString(toDate(${sqlTime(FROM)}) + 7 * cell.1) AS cohort_date,
  -- period 0 of a cohort is its first cell: its count is the cohort's size
  counts[arrayFirstIndex(x -> x.1 = cell.1, cells)] AS cohort_size,
  cell.2 AS period,
  count
FROM (
  SELECT sumForEach(arrayMap(
      cell -> toUInt64(bitTest(starts, cell.1) AND (cell.2 = 0 OR bitTest(returns, cell.1 + cell.2))),
      cells)) AS counts
  FROM (
    SELECT
      ${actorSql()} AS actor,
      groupBitOrIf(${WEEK_BIT}, e.event = 'signed up') AS starts,
      groupBitOrIf(${WEEK_BIT}, e.event = '$pageview') AS returns
    FROM events AS e FINAL
    LEFT ANY JOIN (
      SELECT distinct_id, person_id FROM person_distinct_ids FINAL WHERE project_id = 1 AND is_deleted = 0
    ) AS pdi ON pdi.distinct_id = e.distinct_id
    WHERE ${eventsWhere("e.event IN ('signed up', '$pageview')", FROM, TO)}
    GROUP BY actor
    HAVING starts != 0
  )
)
ARRAY JOIN cells AS cell, counts AS count
ORDER BY cohort_date, period`;

export const retentionScenario: Scenario = {
  name: '8-week retention, signed up → $pageview',
  kind: 'RetentionQuery',
  query,
  hand,
};
