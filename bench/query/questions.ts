/**
 * The questions of the run-time benchmark, each asked three ways of project 1's data:
 * - `dialect`: what a user sends to the query API (Weir prints the ClickHouse SQL);
 * - `hand`: what someone who knows the store would write for the same answer: the project filter, FINAL
 *   (a retried event's copy must not count), the usual JSON functions;
 * - `raw`: `hand` without FINAL — what deduplication costs, and why it is needed (its counts are off by the
 *   retried copies wherever they fall).
 */
export interface Question {
  readonly name: string;
  readonly dialect: string;
  readonly variables?: Record<string, unknown>;
  readonly hand: string;
}

const WEEK = "timestamp >= '2026-03-01 00:00:00' AND timestamp < '2026-03-08 00:00:00'";

export const QUESTIONS: readonly Question[] = [
  {
    name: 'count every event',
    dialect: 'SELECT count() FROM events',
    hand: 'SELECT count() FROM events FINAL WHERE project_id = 1',
  },
  {
    name: 'daily pageviews, 90 days',
    dialect:
      "SELECT toDate(timestamp) AS day, count() AS n FROM events WHERE event = '$pageview' GROUP BY day ORDER BY day",
    hand: "SELECT toDate(timestamp) AS day, count() AS n FROM events FINAL WHERE project_id = 1 AND event = '$pageview' GROUP BY day ORDER BY day",
  },
  {
    name: 'one day by event name (variables)',
    dialect:
      'SELECT event, count() AS n FROM events WHERE timestamp >= {variables.from} AND timestamp < {variables.to} GROUP BY event ORDER BY event',
    variables: { from: '2026-02-01', to: '2026-02-02' },
    hand: "SELECT event, count() AS n FROM events FINAL WHERE project_id = 1 AND timestamp >= '2026-02-01' AND timestamp < '2026-02-02' GROUP BY event ORDER BY event",
  },
  {
    name: 'pageviews by browser (a property)',
    dialect:
      "SELECT properties.$browser AS browser, count() AS n FROM events WHERE event = '$pageview' GROUP BY browser ORDER BY browser",
    hand: "SELECT JSONExtractString(properties, '$browser') AS browser, count() AS n FROM events FINAL WHERE project_id = 1 AND event = '$pageview' GROUP BY browser ORDER BY browser",
  },
  {
    name: 'weekly active users',
    dialect:
      'SELECT toStartOfWeek(timestamp) AS week, uniq(person_id) AS users FROM events GROUP BY week ORDER BY week',
    hand: 'SELECT toStartOfWeek(timestamp) AS week, uniq(person_id) AS users FROM events FINAL WHERE project_id = 1 GROUP BY week ORDER BY week',
  },
  {
    name: 'revenue by plan (person property)',
    dialect:
      "SELECT person.properties.plan AS plan, sum(toFloat64OrZero(properties.amount)) AS revenue FROM events WHERE event = 'order completed' GROUP BY plan ORDER BY plan",
    hand: "SELECT JSONExtractString(person_properties, 'plan') AS plan, sum(JSONExtractFloat(properties, 'amount')) AS revenue FROM events FINAL WHERE project_id = 1 AND event = 'order completed' GROUP BY plan ORDER BY plan",
  },
  {
    name: 'two-step funnel over a week',
    dialect: `SELECT level, count() AS persons FROM (
        SELECT person_id, windowFunnel(86400)(timestamp, event = '$pageview', event = 'signed up') AS level
        FROM events WHERE ${WEEK} GROUP BY person_id)
      GROUP BY level ORDER BY level`,
    hand: `SELECT level, count() AS persons FROM (
        SELECT person_id, windowFunnel(86400)(toDateTime(timestamp), event = '$pageview', event = 'signed up') AS level
        FROM events FINAL WHERE project_id = 1 AND ${WEEK} GROUP BY person_id)
      GROUP BY level ORDER BY level`,
  },
  {
    name: 'top pages of a week for some browsers',
    dialect: `SELECT properties.$current_url AS url, count() AS n FROM events
      WHERE event = '$pageview' AND timestamp >= {variables.from} AND timestamp < {variables.to}
        AND properties.$browser IN {variables.browsers}
      GROUP BY url ORDER BY n DESC, url LIMIT 10`,
    variables: { from: '2026-03-01', to: '2026-03-08', browsers: ['Chrome', 'Safari'] },
    hand: `SELECT JSONExtractString(properties, '$current_url') AS url, count() AS n FROM events FINAL
      WHERE project_id = 1 AND event = '$pageview' AND ${WEEK}
        AND JSONExtractString(properties, '$browser') IN ('Chrome', 'Safari')
      GROUP BY url ORDER BY n DESC, url LIMIT 10`,
  },
  {
    name: 'events of a week by plan (join persons)',
    dialect: `SELECT p.properties.plan AS plan, count() AS n
      FROM events AS e INNER JOIN persons AS p ON e.person_id = p.id
      WHERE e.${WEEK.replaceAll(' AND timestamp', ' AND e.timestamp')}
      GROUP BY plan ORDER BY plan`,
    hand: `SELECT JSONExtractString(p.properties, 'plan') AS plan, count() AS n
      FROM events AS e FINAL
      INNER JOIN (SELECT id, properties FROM persons FINAL WHERE project_id = 1 AND is_deleted = 0) AS p ON e.person_id = p.id
      WHERE e.project_id = 1 AND e.${WEEK.replaceAll(' AND timestamp', ' AND e.timestamp')}
      GROUP BY plan ORDER BY plan`,
  },
];

/** `hand` without FINAL (on events and persons alike). */
export function rawOf(q: Question): string {
  return q.hand.replaceAll(' FINAL', '');
}
