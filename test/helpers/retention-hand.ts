/**
 * Hand-written ClickHouse SQL for a retention answer, to check Weir's against. It is written the plain way
 * (not Weir's one-pass arrays): distinct (actor, cohort period) and (actor, return period) pairs, a self-join
 * on the actor counting pairs a period apart, and a grid of every cohort × period from `numbers()`, on the
 * store tables read with FINAL. The conditions are SQL text over `ev` (columns actor, event, timestamp,
 * properties, person_properties), written by each test.
 */
export interface HandRetention {
  readonly unit: 'hour' | 'day' | 'week' | 'month';
  /** The range's first period start and the end (exclusive), UTC: `2020-06-10 00:00:00`. */
  readonly from: string;
  readonly end: string;
  readonly totalIntervals: number;
  /** SQL conditions over `ev`. @default event = '$pageview' */
  readonly target?: string;
  readonly returning?: string;
  /**
   * First time: the cohort is the period of the first target event ever; with `firstEvent` (a condition),
   * of the first event meeting it, if that event also meets `target` (first ever occurrence).
   */
  readonly firstTime?: boolean;
  readonly firstEvent?: string;
  /** A returning period needs at least this many returning events. @default 1 */
  readonly minimumOccurrences?: number;
  readonly cumulative?: boolean;
  /** SQL of the breakdown value over `ev` (null for none), the limit, and a condition on `value`. */
  readonly breakdown?: { readonly value: string; readonly limit: number; readonly where?: string };
}

function start(unit: HandRetention['unit'], col: string): string {
  return unit === 'week'
    ? `toDateTime(toStartOfWeek(${col}, 0), 'UTC')`
    : `toStartOfInterval(${col}, INTERVAL 1 ${unit})`;
}

function diff(unit: HandRetention['unit'], a: string, b: string): string {
  return unit === 'week' ? `intDiv(dateDiff('day', ${a}, ${b}), 7)` : `dateDiff('${unit}', ${a}, ${b})`;
}

export function handRetentionSql(h: HandRetention): string {
  const target = h.target ?? "event = '$pageview'";
  const returning = h.returning ?? "event = '$pageview'";
  const from = `toDateTime64('${h.from}', 6, 'UTC')`;
  const end = `toDateTime64('${h.end}', 6, 'UTC')`;
  const value = h.breakdown ? h.breakdown.value : "CAST(NULL, 'Nullable(String)')";
  const cohorts = h.firstTime
    ? `SELECT actor, ${start(h.unit, 'first_at')} AS cohort, first_value AS value FROM (
         SELECT actor, min(timestamp) AS first_at, argMin(tuple(${value}), timestamp).1 AS first_value,
           argMin(${h.firstEvent ? target : '1'}, timestamp) AS ok
         FROM ev WHERE ${h.firstEvent ?? target} AND timestamp < ${end} GROUP BY actor)
       WHERE first_at >= ${from} AND ok`
    : `SELECT actor, ${start(h.unit, 'timestamp')} AS cohort, argMin(tuple(${value}), timestamp).1 AS value
       FROM ev WHERE ${target} AND timestamp >= ${from} AND timestamp < ${end} GROUP BY actor, cohort`;
  const pairs = `SELECT c.actor, c.cohort, c.value, ${diff(h.unit, 'c.cohort', 'r.at')} AS period
    FROM cohorts AS c JOIN returns AS r ON c.actor = r.actor WHERE r.at > c.cohort AND ${diff(h.unit, 'c.cohort', 'r.at')} < ${h.totalIntervals}`;
  const perActor = h.cumulative
    ? `SELECT actor, cohort, value, arrayJoin(range(max(period) + 1)) AS period FROM (${pairs}) GROUP BY actor, cohort, value
       UNION ALL SELECT actor, cohort, value, 0 FROM cohorts WHERE (actor, cohort) NOT IN (SELECT actor, cohort FROM (${pairs}))`
    : `${pairs} UNION ALL SELECT actor, cohort, value, 0 AS period FROM cohorts`;
  const bd = h.breakdown;
  const kept = bd
    ? `(SELECT groupArray(ifNull(value, '<null>')) FROM (SELECT value, count() AS n FROM cohorts GROUP BY value
         ORDER BY n DESC, value ASC NULLS LAST LIMIT ${bd.limit}))`
    : '[]';
  // Breakdown values join through a key where null is a string no property value is in the tests.
  return `
WITH ev AS (
    SELECT if(p.person_id = toUUID('00000000-0000-0000-0000-000000000000'), e.person_id, p.person_id) AS actor,
      e.event AS event, e.timestamp AS timestamp, e.properties AS properties, e.person_properties AS person_properties
    FROM events AS e FINAL
    LEFT JOIN (SELECT distinct_id, person_id FROM person_distinct_ids FINAL
               WHERE project_id = {project:UInt64} AND is_deleted = 0) AS p ON e.distinct_id = p.distinct_id
    WHERE e.project_id = {project:UInt64}),
  cohorts AS (SELECT * FROM (${cohorts}) WHERE ${bd?.where ?? '1'}),
  returns AS (SELECT actor, ${start(h.unit, 'timestamp')} AS at FROM ev
    WHERE ${returning} AND timestamp >= ${from} AND timestamp < ${end}
    GROUP BY actor, at HAVING count() >= ${h.minimumOccurrences ?? 1}),
  cells AS (SELECT ${bd ? `if(has(${kept}, ifNull(value, '<null>')), value, 'Other')` : 'NULL'} AS bv, ifNull(bv, '<null>') AS key,
      cohort, period, count() AS n
    FROM (${perActor}) GROUP BY bv, cohort, period),
  sizes AS (SELECT key, cohort, n FROM cells WHERE period = 0),
  totals AS (SELECT key, sum(n) AS total FROM sizes GROUP BY key),
  grid AS (SELECT g.bv AS bv, g.key AS key, ${from} + INTERVAL c.number ${h.unit} AS cohort, k.number AS period
    FROM (${bd ? 'SELECT DISTINCT bv, key FROM cells' : "SELECT NULL AS bv, '<null>' AS key"}) AS g
      CROSS JOIN numbers(${diff(h.unit, from, end)}) AS c CROSS JOIN numbers(${h.totalIntervals}) AS k
    WHERE cohort + INTERVAL k.number ${h.unit} < ${end})
SELECT ${bd ? 'grid.bv, ' : ''}formatDateTime(grid.cohort, '${h.unit === 'hour' ? '%Y-%m-%d %H:%i:%S' : '%Y-%m-%d'}', 'UTC'),
  ifNull(size.n, 0), grid.period, ifNull(cell.n, 0)
FROM grid
  LEFT JOIN cells AS cell ON cell.key = grid.key AND cell.cohort = grid.cohort AND cell.period = toInt64(grid.period)
  LEFT JOIN sizes AS size ON size.key = grid.key AND size.cohort = grid.cohort
  LEFT JOIN totals AS total ON total.key = grid.key
ORDER BY ${bd ? "ifNull(grid.bv = 'Other', 0), total.total DESC, grid.bv ASC NULLS LAST, " : ''}grid.cohort, grid.period
SETTINGS join_use_nulls = 1`;
}

/**
 * Answer rows from hand-worked cohort rows (PostHog's `values` counts, one list per cohort, as long as the
 * periods that have begun): `[breakdown_value], cohort_date, cohort_size, period, count`.
 */
export function retentionRows(
  dates: readonly string[],
  counts: readonly (readonly number[])[],
  breakdown?: string | null,
): unknown[][] {
  if (dates.length !== counts.length) throw new Error('one date per cohort row');
  return counts.flatMap((row, i) =>
    row.map((n, k) => [...(breakdown === undefined ? [] : [breakdown]), dates[i], row[0], k, n]),
  );
}

/** Consecutive period starts as answer dates: `days('2020-06-10', 3)`. */
export function periodDates(unit: 'hour' | 'day' | 'week' | 'month', first: string, n: number): string[] {
  const at = new Date(first.length === 10 ? `${first}T00:00:00Z` : `${first.replace(' ', 'T')}Z`);
  return Array.from({ length: n }, (_, i) => {
    const d = new Date(at.getTime());
    if (unit === 'hour') d.setUTCHours(d.getUTCHours() + i);
    else if (unit === 'day') d.setUTCDate(d.getUTCDate() + i);
    else if (unit === 'week') d.setUTCDate(d.getUTCDate() + 7 * i);
    else d.setUTCMonth(d.getUTCMonth() + i);
    const text = d.toISOString().replace('T', ' ').slice(0, 19);
    return unit === 'hour' ? text : text.slice(0, 10);
  });
}
