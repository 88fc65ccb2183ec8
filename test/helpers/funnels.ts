/**
 * FunnelsQuery tests: events written per person, the query object built from step names, the answer read
 * back per breakdown value, and ClickHouse's own `windowFunnel` over the store tables as the hand-written
 * check of the step counts.
 */
import type { TableReader } from '../../src/core/ports.ts';
import { handSql, type InsightAnswer, type TestEvent } from './insights.ts';

/** An event of `person` (its distinct id) at an ISO time. */
export function ev(
  person: string,
  event: string,
  timestamp: string,
  properties: Record<string, unknown> = {},
): TestEvent {
  return { event, distinctId: person, timestamp, properties };
}

export function steps(...events: string[]): Record<string, unknown>[] {
  return events.map((event) => ({ kind: 'EventsNode', event }));
}

export function funnel(
  series: readonly unknown[],
  dateRange: { date_from: string; date_to: string },
  funnelsFilter: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { kind: 'FunnelsQuery', series, dateRange, funnelsFilter, ...extra };
}

/** The rows of one breakdown value (or all rows without a breakdown), as [step, event, count, rate, avg, median]. */
function rowsOf(a: InsightAnswer, value?: string | null): unknown[][] {
  if (a.columns[0] !== 'breakdown_value') return a.rows;
  return a.rows.filter((r) => r[0] === value).map((r) => r.slice(1));
}

export function countsOf(a: InsightAnswer, value?: string | null): number[] {
  return rowsOf(a, value).map((r) => Number(r[2]));
}

export function avgsOf(a: InsightAnswer, value?: string | null): (number | null)[] {
  return rowsOf(a, value).map((r) => (r[4] === null ? null : Number(r[4])));
}

export function mediansOf(a: InsightAnswer, value?: string | null): (number | null)[] {
  return rowsOf(a, value).map((r) => (r[5] === null ? null : Number(r[5])));
}

/** The breakdown values in answer order. */
export function valuesOf(a: InsightAnswer): (string | null)[] {
  return [...new Set(a.rows.map((r) => r[0] as string | null))];
}

export interface HandFunnel {
  /** Per step, a ClickHouse condition on the raw `events` row `e` (e.g. `e.event = 'buy'`). */
  readonly steps: readonly string[];
  readonly windowSeconds: number;
  /** `''` (ordered), `'strict_order'`, … : windowFunnel's mode. */
  readonly mode?: string;
  readonly from: string;
  readonly to: string;
  /** A condition every event must meet. */
  readonly where?: string;
  readonly project?: number;
}

/**
 * Step counts by ClickHouse's windowFunnel over the raw tables: persons as the newest distinct-id row says
 * (merged persons once), events in [from, to].
 */
export async function handCounts(store: TableReader, f: HandFunnel): Promise<number[]> {
  const mode = f.mode ? `, '${f.mode}'` : '';
  const counts = f.steps.map((_, i) => `countIf(level >= ${i + 1})`).join(', ');
  const rows = await handSql(
    store,
    `SELECT ${counts} FROM (
       SELECT if(pdi.person_id IS NULL OR pdi.person_id = toUUIDOrZero(''), e.person_id, pdi.person_id) AS actor,
              windowFunnel(${f.windowSeconds * 1_000_000}${mode})(toUInt64(toUnixTimestamp64Micro(e.timestamp)), ${f.steps.join(', ')}) AS level
       FROM events AS e FINAL
       LEFT JOIN (SELECT distinct_id, argMax(person_id, version) AS person_id FROM person_distinct_ids FINAL
                  WHERE project_id = {project:UInt64} GROUP BY distinct_id) AS pdi ON pdi.distinct_id = e.distinct_id
       WHERE e.project_id = {project:UInt64}
         AND e.timestamp >= toDateTime64('${f.from}', 6, 'UTC') AND e.timestamp <= toDateTime64('${f.to}', 6, 'UTC')
         ${f.where ? `AND (${f.where})` : ''}
       GROUP BY actor)`,
    f.project ?? 1,
  );
  return (rows[0] as unknown[]).map(Number);
}
