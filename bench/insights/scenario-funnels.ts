/**
 * Scenario 2: a 3-step ordered funnel over the last 14 days with a 14-day conversion window — page view,
 * then signed up, then order completed — as a FunnelsQuery, against the same table written by hand.
 *
 * The answer is PostHog's (reference §2.3–2.4, SPEC §4): per person (now behind the distinct id), the
 * attempts start at each step-1 event; step k is reached by the latest attempt at step k − 1 whose start is
 * at most the window before the step-k event (an attempt keeps its first step-k event); the person counts
 * for the furthest step, and their conversion times are those of the first attempt that got there. The
 * hand-written query is a ClickHouse expert's for exactly three steps: one read of the three events (FINAL
 * on `events` and `person_distinct_ids`), each person's events as a time-sorted array, and an `arrayFold`
 * whose state is a flat tuple — the latest step-1 start, the attempt at step 2 (start, time), and the best
 * attempt (level, t1, t2, t3) — then one row of counts and conversion times (seconds, only those over 0;
 * median interpolated between the two middle values, as `quantileExactInclusive(0.5)`).
 */
import { actorSql, eventsWhere, type Scenario } from './scenario.ts';

/** `-14d` at the bench's `now` (2026-03-20 12:00 UTC). */
const FROM = '2026-03-06 00:00:00';
const TO = '2026-03-20 23:59:59.999999';
const STEPS = ['$pageview', 'signed up', 'order completed'] as const;
/** 14 days, in microseconds (the events' time unit below). */
const WINDOW_US = 14 * 86_400 * 1_000_000;

const query = {
  kind: 'FunnelsQuery',
  series: STEPS.map((event) => ({ kind: 'EventsNode', event })),
  dateRange: { date_from: '-14d' },
  funnelsFilter: {
    funnelWindowInterval: 14,
    funnelWindowIntervalUnit: 'day',
    funnelOrderType: 'ordered',
  },
};

/**
 * One person's funnel over their events `(µs, step)` sorted by time. State: 1 the latest step-1 start;
 * 2, 3 the attempt at step 2 (its start, its step-2 time); 4 the best level; 5–7 the best attempt's times.
 */
const FOLD = `arrayFold((acc, x) -> multiIf(
    x.2 = 1,
      (x.1, acc.2, acc.3, if(acc.4 < 1, 1, acc.4), if(acc.4 < 1, x.1, acc.5), acc.6, acc.7),
    x.2 = 2 AND acc.1 != 0 AND x.1 - acc.1 <= ${WINDOW_US} AND acc.2 != acc.1,
      (acc.1, acc.1, x.1, if(acc.4 < 2, 2, acc.4), if(acc.4 < 2, acc.1, acc.5), if(acc.4 < 2, x.1, acc.6), acc.7),
    x.2 = 3 AND acc.2 != 0 AND x.1 - acc.2 <= ${WINDOW_US} AND acc.4 < 3,
      (acc.1, acc.2, acc.3, 3, acc.2, acc.3, x.1),
    acc),
  arraySort(groupArray((e.t, e.step))),
  (toInt64(0), toInt64(0), toInt64(0), toUInt8(0), toInt64(0), toInt64(0), toInt64(0)))`;

const stepOf = `multiIf(${STEPS.map((s, i) => `e.event = '${s}', ${i + 1}`).join(', ')}, 0)`;

const hand = `
SELECT
  step,
  [${STEPS.map((s) => `'${s}'`).join(', ')}][step] AS event,
  counts[step] AS count,
  count / counts[1] AS conversion_rate,
  [NULL, avg2, avg3][step] AS average_conversion_time,
  [NULL, median2, median3][step] AS median_conversion_time
FROM (
  SELECT
    [countIf(b.4 >= 1), countIf(b.4 >= 2), countIf(b.4 >= 3)] AS counts,
    avgIf((b.6 - b.5) / 1e6, b.4 >= 2 AND b.6 > b.5) AS avg2,
    avgIf((b.7 - b.6) / 1e6, b.4 >= 3 AND b.7 > b.6) AS avg3,
    quantileExactInclusiveIf(0.5)((b.6 - b.5) / 1e6, b.4 >= 2 AND b.6 > b.5) AS median2,
    quantileExactInclusiveIf(0.5)((b.7 - b.6) / 1e6, b.4 >= 3 AND b.7 > b.6) AS median3
  FROM (
    SELECT ${actorSql()} AS actor, ${FOLD} AS b
    FROM (
      SELECT e.distinct_id, e.person_id, toUnixTimestamp64Micro(e.timestamp) AS t, ${stepOf} AS step
      FROM events AS e FINAL
      WHERE ${eventsWhere(`e.event IN (${STEPS.map((s) => `'${s}'`).join(', ')})`, FROM, TO)}
    ) AS e
    LEFT ANY JOIN (
      SELECT distinct_id, person_id FROM person_distinct_ids FINAL WHERE project_id = 1 AND is_deleted = 0
    ) AS pdi ON pdi.distinct_id = e.distinct_id
    GROUP BY actor
  )
  WHERE b.4 >= 1
)
ARRAY JOIN [1, 2, 3] AS step
ORDER BY step`;

export const funnelScenario: Scenario = {
  name: '3-step 14-day ordered funnel',
  kind: 'FunnelsQuery',
  query,
  hand,
};
