/**
 * An insight's date range (SPEC §4, PostHog's `QueryDateRange`), resolved when a run starts, in UTC (the
 * project timezone). `date_from` / `date_to` are absolute (`YYYY-MM-DD`, ISO date and time; no offset means
 * UTC) or relative to now (`-Nh`, `-Nd`, `-Nw`, `-Nm`, `-Nq`, `-Ny`, `-NM` minutes, with an optional
 * `Start` / `End`; `dStart`, `mStart`, `yStart`), and `date_from` may be `all` (the project's first event).
 *
 * Without `explicitDate`, `date_from` starts at the start of its interval (an `-Nh` range at the start of an
 * hour) and `date_to` ends at the end of its day (its hour with the hour interval), so every bucket of the
 * range is whole. With it, both are used as written. The range includes both ends.
 */
import type { Expr } from '../dialect/mod.ts';
import { sql } from './template.ts';

export type Interval = 'hour' | 'day' | 'week' | 'month';
export const INTERVALS: readonly Interval[] = ['hour', 'day', 'week', 'month'];

type Unit = 'M' | 'h' | 'd' | 'w' | 'm' | 'q' | 'y';

export type ParsedDate =
  | { readonly kind: 'absolute'; readonly at: Date; readonly dateOnly: boolean }
  | {
      readonly kind: 'relative';
      readonly count: number;
      readonly unit: Unit;
      readonly pin: 'Start' | 'End' | null;
    }
  | { readonly kind: 'all' };

const RELATIVE = /^-?(\d{1,6})?([Mhdwmqy])(Start|End)?$/;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** The form of a `date_from` / `date_to` value, or null when it is none Weir reads. */
export function parseRelativeOrAbsolute(text: string): ParsedDate | null {
  if (text === 'all') return { kind: 'all' };
  const rel = RELATIVE.exec(text);
  if (rel) {
    // `dStart` is today's start; `-3d` three days back. A count without a sign is read as back, too.
    return {
      kind: 'relative',
      count: rel[1] === undefined ? 0 : Number(rel[1]),
      unit: rel[2] as Unit,
      pin: (rel[3] as 'Start' | 'End' | undefined) ?? null,
    };
  }
  const d = DATE_ONLY.exec(text);
  if (d) {
    const at = new Date(Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3])));
    if (at.getUTCMonth() !== Number(d[2]) - 1 || at.getUTCDate() !== Number(d[3])) return null;
    return { kind: 'absolute', at, dateOnly: true };
  }
  const t = DATE_TIME.exec(text);
  if (t) {
    const iso = `${t[1]}-${t[2]}-${t[3]}T${t[4]}:${t[5]}:${t[6] ?? '00'}${t[7] ?? ''}${t[8] ?? 'Z'}`;
    const ms = Date.parse(iso);
    if (Number.isNaN(ms)) return null;
    return { kind: 'absolute', at: new Date(ms), dateOnly: false };
  }
  return null;
}

export interface ResolvedRange {
  /** The first instant of the range, or `all`: from the project's first event (resolved by the query). */
  readonly from: Date | 'all';
  /** The last instant of the range (included). */
  readonly to: Date;
}

export interface RangeOptions {
  readonly interval: Interval;
  readonly now: Date;
  /** @default '-7d' */
  readonly defaultFrom?: string;
}

/** Resolves a range at `now` (see the file comment). Values must have been checked by `parseRelativeOrAbsolute`. */
export function resolveRange(
  range: { readonly dateFrom: string | null; readonly dateTo: string | null; readonly explicitDate: boolean },
  options: RangeOptions,
): ResolvedRange {
  const { interval, now } = options;
  const fromText = range.dateFrom ?? options.defaultFrom ?? '-7d';
  const fromParsed = parseRelativeOrAbsolute(fromText);
  const toParsed = range.dateTo === null ? null : parseRelativeOrAbsolute(range.dateTo);
  if (!fromParsed || (range.dateTo !== null && !toParsed)) throw new Error('unchecked date range');

  let to: Date;
  if (toParsed === null) to = now;
  else if (toParsed.kind === 'all') throw new Error("'all' is not an end");
  else to = toParsed.kind === 'absolute' ? toParsed.at : relative(toParsed, now);
  if (!range.explicitDate || (toParsed?.kind === 'absolute' && toParsed.dateOnly)) {
    to =
      interval === 'hour' && !(toParsed?.kind === 'absolute' && toParsed.dateOnly)
        ? endOf('hour', to)
        : endOf('day', to);
  }

  if (fromParsed.kind === 'all') return { from: 'all', to };
  let from = fromParsed.kind === 'absolute' ? fromParsed.at : relative(fromParsed, now);
  if (!range.explicitDate) {
    // A relative start is at the start of its day (its hour for -Nh), then of the interval's bucket.
    if (fromParsed.kind === 'relative')
      from = startOf(fromParsed.unit === 'h' || fromParsed.unit === 'M' ? 'hour' : 'day', from);
    from = startOf(interval, from);
  }
  return { from, to };
}

function relative(p: Extract<ParsedDate, { kind: 'relative' }>, now: Date): Date {
  const d = new Date(now.getTime());
  const n = p.count;
  switch (p.unit) {
    case 'M':
      d.setUTCMinutes(d.getUTCMinutes() - n);
      break;
    case 'h':
      d.setUTCHours(d.getUTCHours() - n);
      break;
    case 'd':
      d.setUTCDate(d.getUTCDate() - n);
      break;
    case 'w':
      d.setUTCDate(d.getUTCDate() - 7 * n);
      break;
    case 'm':
      return pin(addMonths(d, -n), p);
    case 'q':
      d.setUTCDate(d.getUTCDate() - 13 * 7 * n);
      break;
    case 'y':
      return pin(addMonths(d, -12 * n), p);
  }
  return pin(d, p);
}

/** `Start` / `End` pin the fields below the unit: `mStart` is the first of the month at 00:00. */
function pin(d: Date, p: Extract<ParsedDate, { kind: 'relative' }>): Date {
  if (p.pin === null) return d;
  const unit: Interval | 'year' | 'minute' =
    p.unit === 'h'
      ? 'hour'
      : p.unit === 'd'
        ? 'day'
        : p.unit === 'w'
          ? 'week'
          : p.unit === 'y'
            ? 'year'
            : p.unit === 'M'
              ? 'minute'
              : 'month';
  return p.pin === 'Start' ? startOf(unit, d) : endOf(unit, d);
}

/** Adds months as a calendar does, keeping the day within the target month (Mar 31 − 1 month = Feb 28/29). */
function addMonths(d: Date, months: number): Date {
  const day = d.getUTCDate();
  const out = new Date(d.getTime());
  out.setUTCDate(1);
  out.setUTCMonth(out.getUTCMonth() + months);
  const last = new Date(Date.UTC(out.getUTCFullYear(), out.getUTCMonth() + 1, 0)).getUTCDate();
  out.setUTCDate(Math.min(day, last));
  return out;
}

/** The start of the bucket holding `d`: weeks start on Sunday. */
export function startOf(unit: Interval | 'year' | 'minute', d: Date): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  switch (unit) {
    case 'minute':
      return new Date(Math.floor(d.getTime() / 60_000) * 60_000);
    case 'hour':
      return new Date(Math.floor(d.getTime() / 3_600_000) * 3_600_000);
    case 'day':
      return new Date(Date.UTC(y, m, d.getUTCDate()));
    case 'week':
      return new Date(Date.UTC(y, m, d.getUTCDate() - d.getUTCDay()));
    case 'month':
      return new Date(Date.UTC(y, m, 1));
    case 'year':
      return new Date(Date.UTC(y, 0, 1));
  }
}

/** The last microsecond of the bucket holding `d` (as a Date, to the millisecond: .999). */
export function endOf(unit: Interval | 'year' | 'minute', d: Date): Date {
  const start = startOf(unit, d);
  return new Date(next(unit, start).getTime() - 1);
}

/** The start of the bucket after the one starting at `start`. */
export function next(unit: Interval | 'year' | 'minute', start: Date): Date {
  switch (unit) {
    case 'minute':
      return new Date(start.getTime() + 60_000);
    case 'hour':
      return new Date(start.getTime() + 3_600_000);
    case 'day':
      return new Date(start.getTime() + 86_400_000);
    case 'week':
      return new Date(start.getTime() + 7 * 86_400_000);
    case 'month':
      return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    case 'year':
      return new Date(Date.UTC(start.getUTCFullYear() + 1, 0, 1));
  }
}

/**
 * A bound end as the text of a DateTime64(6, 'UTC') parameter. An end made by `endOf` (…59.999) becomes
 * …59.999999, so no event of the last millisecond is left out.
 */
export function dateTimeParam(d: Date, isEnd: boolean): string {
  const text = d.toISOString().replace('T', ' ').replace('Z', '');
  return isEnd && text.endsWith('.999') ? `${text}999` : `${text}000`;
}

// ------------------------------------------------------------------------------------- SQL pieces

/** The start of the bucket of `ts` as DateTime64 in UTC (weeks from Sunday: ClickHouse's week mode 0). */
export function bucketStart(interval: Interval, ts: Expr): Expr {
  switch (interval) {
    case 'hour':
      return sql.expr`toStartOfHour(${ts})`;
    case 'day':
      return sql.expr`toStartOfDay(${ts})`;
    case 'week':
      return sql.expr`toDateTime(toStartOfWeek(${ts}, 0), 'UTC')`;
    case 'month':
      return sql.expr`toDateTime(toStartOfMonth(${ts}), 'UTC')`;
  }
}

/** `n` intervals as a ClickHouse interval value. */
export function intervalOf(interval: Interval, n: Expr): Expr {
  switch (interval) {
    case 'hour':
      return sql.expr`toIntervalHour(${n})`;
    case 'day':
      return sql.expr`toIntervalDay(${n})`;
    case 'week':
      return sql.expr`toIntervalWeek(${n})`;
    case 'month':
      return sql.expr`toIntervalMonth(${n})`;
  }
}

/** A bucket's start as the `date` of an answer: `YYYY-MM-DD`, or `YYYY-MM-DD HH:MM:SS` for hours. */
export function bucketLabel(interval: Interval, start: Expr): Expr {
  return interval === 'hour'
    ? sql.expr`formatDateTime(${start}, '%Y-%m-%d %H:%i:%S', 'UTC')`
    : sql.expr`formatDateTime(${start}, '%Y-%m-%d', 'UTC')`;
}
