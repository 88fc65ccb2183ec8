/**
 * Scenario 1: the daily active persons of the last 30 days, broken down by browser: a TrendsQuery with
 * `math: dau` and a `$browser` breakdown, against the same table written by hand.
 *
 * The hand-written query keeps every guarantee of the answer (SPEC §4), as someone who knows ClickHouse
 * would write them in one read of the events: FINAL on `events` and `person_distinct_ids` (a retried event's
 * copy and a merged distinct id's old person must not count), the person now behind each distinct id, the
 * top 25 values by their total over the range with the rest merged into `Other` (exact distinct counts kept
 * as `uniqExactState` per value and day, so `Other` counts each person once), and every day of every value
 * present, zero-filled (`WITH FILL` within each value).
 */
import { actorSql, eventsWhere, sqlTime, type Scenario } from './scenario.ts';

/** `-30d` at the bench's `now` (2026-03-20 12:00 UTC): from the start of that day to the end of today. */
const FROM = '2026-02-18 00:00:00';
const TO = '2026-03-20 23:59:59.999999';
const LIMIT = 25;

const query = {
  kind: 'TrendsQuery',
  series: [{ kind: 'EventsNode', event: '$pageview', math: 'dau' }],
  interval: 'day',
  dateRange: { date_from: '-30d' },
  breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
};

const hand = `
SELECT 0 AS series_index, '$pageview' AS series, breakdown_value, toString(day) AS date, value
FROM (
  SELECT breakdown_value, day, value
  FROM (
    -- the kept values' own cells, and one merged cell per day for the values past the limit
    SELECT
      if(rank > ${LIMIT}, 'Other', browser) AS breakdown_value,
      min(rank) AS first_rank,
      day,
      uniqExactMerge(persons) AS value
    FROM (
      SELECT browser, day, persons,
        dense_rank() OVER (ORDER BY total DESC, browser ASC) AS rank
      FROM (
        SELECT browser, day, persons,
          sum(finalizeAggregation(persons)) OVER (PARTITION BY browser) AS total
        FROM (
          SELECT
            nullIf(JSONExtractString(e.properties, '$browser'), '') AS browser,
            toDate(e.timestamp) AS day,
            uniqExactState(${actorSql()}) AS persons
          FROM events AS e FINAL
          LEFT ANY JOIN (
            SELECT distinct_id, person_id FROM person_distinct_ids FINAL WHERE project_id = 1 AND is_deleted = 0
          ) AS pdi ON pdi.distinct_id = e.distinct_id
          WHERE ${eventsWhere("e.event = '$pageview'", FROM, TO)}
          GROUP BY browser, day
        )
      )
    )
    GROUP BY breakdown_value, rank > ${LIMIT}, day
  )
  -- every day of the range for every value: WITH FILL fills within each breakdown value
  ORDER BY breakdown_value, day WITH FILL FROM toDate(${sqlTime(FROM)}) TO toDate(${sqlTime(TO)}) + 1
)
ORDER BY breakdown_value IS NULL, breakdown_value = 'Other', sum(value) OVER (PARTITION BY breakdown_value) DESC, breakdown_value, day`;

export const trendScenario: Scenario = {
  name: '30-day daily trend, dau by $browser',
  kind: 'TrendsQuery',
  query,
  hand,
};
