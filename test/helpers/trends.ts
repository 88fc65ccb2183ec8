/**
 * Trends test helpers: PostHog's trends fixture (reference §5.1), reading an answer's rows back as one list
 * of values per series (and breakdown value), and hand-written ClickHouse SQL shapes the tests check
 * answers against.
 */
import type { TableReader } from '../../src/core/ports.ts';
import { handSql, type InsightAnswer, type TestEvent } from './insights.ts';

/** reference §5.1: four persons' pageviews and pageleaves at 12:00 UTC, with `$browser` and `prop`. */
export const POSTHOG_PEOPLE: Record<
  string,
  { browser: string; prop: number; pageviews: number[]; pageleaves: number[] }
> = {
  p1: { browser: 'Chrome', prop: 10, pageviews: [11, 12, 13, 15, 17, 19], pageleaves: [11, 12, 13] },
  p2: { browser: 'Firefox', prop: 20, pageviews: [9, 12], pageleaves: [13] },
  p3: { browser: 'Edge', prop: 30, pageviews: [12], pageleaves: [13] },
  p4: { browser: 'Safari', prop: 40, pageviews: [15], pageleaves: [16] },
};

/** The fixture's events: each person's properties on the event (`$browser`, `prop`) and on the person. */
export function posthogFixture(): TestEvent[] {
  const out: TestEvent[] = [];
  for (const [id, p] of Object.entries(POSTHOG_PEOPLE)) {
    for (const [event, days] of [
      ['$pageview', p.pageviews],
      ['$pageleave', p.pageleaves],
    ] as const) {
      for (const day of days) {
        out.push({
          event,
          distinctId: id,
          timestamp: `2020-01-${String(day).padStart(2, '0')}T12:00:00Z`,
          properties: { $browser: p.browser, prop: p.prop },
          personProperties: { $browser: p.browser, prop: p.prop },
        });
      }
    }
  }
  return out;
}

/** `YYYY-MM-DD` of the days from `from` (inclusive), `count` of them. */
export function days(from: string, count: number): string[] {
  const start = Date.parse(`${from}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) => new Date(start + i * 86_400_000).toISOString().slice(0, 10));
}

/** The column index of a name in an answer. */
function col(a: InsightAnswer, name: string): number {
  const i = a.columns.indexOf(name);
  if (i < 0) throw new Error(`no column ${name} in ${a.columns.join(', ')}`);
  return i;
}

/** The answer's `value`s of one series (and one breakdown value, compared as JSON), in row order. */
export function valuesOf(a: InsightAnswer, series: number, breakdown?: unknown): number[] {
  const s = col(a, 'series_index');
  const v = col(a, 'value');
  const b = a.columns.indexOf('breakdown_value');
  return a.rows
    .filter(
      (r) =>
        r[s] === series && (breakdown === undefined || JSON.stringify(r[b]) === JSON.stringify(breakdown)),
    )
    .map((r) => Number(r[v]));
}

/** The breakdown values of one series, in row order, each once. */
export function breakdownsOf(a: InsightAnswer, series: number): unknown[] {
  const s = col(a, 'series_index');
  const b = col(a, 'breakdown_value');
  const seen: string[] = [];
  const out: unknown[] = [];
  for (const r of a.rows) {
    if (r[s] !== series || seen.includes(JSON.stringify(r[b]))) continue;
    seen.push(JSON.stringify(r[b]));
    out.push(r[b]);
  }
  return out;
}

/** The `date` column, in row order, of one series (and breakdown value). */
export function datesOf(a: InsightAnswer, series: number, breakdown?: unknown): string[] {
  const s = col(a, 'series_index');
  const d = col(a, 'date');
  const b = a.columns.indexOf('breakdown_value');
  return a.rows
    .filter(
      (r) =>
        r[s] === series && (breakdown === undefined || JSON.stringify(r[b]) === JSON.stringify(breakdown)),
    )
    .map((r) => String(r[d]));
}

/**
 * Hand-written SQL answering one list of values per interval: `select` gives `(bucket, value)` rows over
 * `events AS e FINAL` (with `pdi`, the newest person of each distinct id, joined); the buckets of
 * `[from, to]` are zero-filled with WITH FILL. `step` is a ClickHouse interval (`INTERVAL 1 DAY`).
 */
export async function handSeries(
  store: TableReader,
  o: {
    readonly value: string;
    readonly where: string;
    readonly bucket?: string;
    readonly from: string;
    readonly to: string;
    readonly step?: string;
  },
): Promise<number[]> {
  const bucket = o.bucket ?? 'toStartOfDay(e.timestamp)';
  const rows = await handSql(
    store,
    `SELECT b, toFloat64(${o.value}) AS v
     FROM events AS e FINAL
     LEFT JOIN (SELECT distinct_id, argMax(person_id, version) AS person_id FROM person_distinct_ids FINAL
                WHERE project_id = {project:UInt64} GROUP BY distinct_id) AS pdi ON pdi.distinct_id = e.distinct_id
     WHERE e.project_id = {project:UInt64} AND ${o.where}
     GROUP BY ${bucket} AS b
     ORDER BY b WITH FILL FROM toDateTime('${o.from}', 'UTC') TO toDateTime('${o.to}', 'UTC') STEP ${o.step ?? 'INTERVAL 1 DAY'}`,
  );
  return rows.map((r) => Number(r[1]));
}

/** The person now behind an event, in hand-written SQL (pdi is joined by handSeries). */
export const HAND_ACTOR =
  "if(pdi.person_id = toUUID('00000000-0000-0000-0000-000000000000'), e.person_id, pdi.person_id)";
