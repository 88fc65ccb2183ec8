/**
 * What the insight benchmark's scenarios share: their shape, the moment they run at, the pieces of
 * hand-written SQL every one repeats, and the person merges they are asked over.
 *
 * bench/query's dataset gives each distinct id one person for ever, and writes no `person_distinct_ids`. An
 * insight counts the person now behind each distinct id (SPEC §4, "Actors are persons"), so the setup here
 * writes what ingestion would have: a row for (almost) every distinct id, and for 1 in 50 a newer row that
 * points it at another person (a merge), so that person's events under two distinct ids count once. A few
 * distinct ids get no row at all (the event's own `person_id` stands then).
 */
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';

export interface Scenario {
  readonly name: string;
  readonly kind: 'TrendsQuery' | 'FunnelsQuery' | 'RetentionQuery';
  /** The insight query object, as an endpoint's `query` holds it. */
  readonly query: Record<string, unknown>;
  /** The same answer written by hand for the store tables (project 1), in the answer's columns. */
  readonly hand: string;
}

/** The run's `now`: inside the dataset's 90 days (2026-01-01 … 2026-03-31), with 78 days of data before it. */
export const NOW = new Date('2026-03-20T12:00:00Z');

/** bench/query/dataset.ts's persons per project (`user-N` is person N there). */
const PERSONS = 200_000;

/** The person now behind `e.distinct_id`, with `pdi` the deduplicated person_distinct_ids LEFT JOINed. */
export function actorSql(): string {
  // A LEFT JOIN without a match gives the default UUID (join_use_nulls is off).
  return "if(pdi.person_id = toUUID('00000000-0000-0000-0000-000000000000'), e.person_id, pdi.person_id)";
}

/** A literal DateTime64(6, 'UTC'). */
export function sqlTime(text: string): string {
  return `toDateTime64('${text}', 6, 'UTC')`;
}

/** Project 1's events of `condition` between `from` and `to` (both included), on `e`. */
export function eventsWhere(condition: string, from: string, to: string): string {
  return `e.project_id = 1 AND ${condition} AND e.timestamp >= ${sqlTime(from)} AND e.timestamp <= ${sqlTime(to)}`;
}

/**
 * Writes person_distinct_ids for both projects: `user-N` → person N (version 1) except when N % 97 = 0 (no
 * row), and for N % 50 = 1 a version-2 row → person N − 1 (merged into the previous person). Two inserts, so
 * FINAL has versions to choose between until the parts merge.
 */
export async function writePersonDistinctIds(store: ChdbClient): Promise<void> {
  const person = (n: string): string => `reinterpretAsUUID(toUInt64(${n}))`;
  await store.command(`
    INSERT INTO person_distinct_ids (project_id, distinct_id, person_id, version)
    SELECT project, concat('user-', toString(number)), ${person('number')}, 1
    FROM numbers(${PERSONS}) ARRAY JOIN [1, 2] AS project
    WHERE number % 97 != 0`);
  await store.command(`
    INSERT INTO person_distinct_ids (project_id, distinct_id, person_id, version)
    SELECT project, concat('user-', toString(number)), ${person('number - 1')}, 2
    FROM numbers(${PERSONS}) ARRAY JOIN [1, 2] AS project
    WHERE number % 50 = 1`);
}

/**
 * Rows as sorted lines of text: numbers (64-bit integers arrive quoted from the printed SQL's settings, and
 * averages may differ in their last bits by summation order) to 12 significant digits.
 */
export function normalise(rows: readonly unknown[][]): string[] {
  const text = (v: unknown): unknown => {
    if (typeof v === 'number') return Number(v.toPrecision(12));
    if (typeof v === 'string' && /^-?\d+(\.\d+)?(e[-+]?\d+)?$/.test(v))
      return Number(Number(v).toPrecision(12));
    if (Array.isArray(v)) return v.map(text);
    return v;
  };
  return rows.map((row) => JSON.stringify(row.map(text))).sort();
}
