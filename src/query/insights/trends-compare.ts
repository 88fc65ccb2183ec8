/**
 * Comparing with a previous period (`compareFilter: {compare: true, compare_to}`, PostHog's): the answer
 * then holds the rows of the range (`compare_label` `current`) and, after them, the same rows computed for
 * an earlier range (`previous`) — the range of the same length just before it, or the range moved back by
 * `compare_to` (`-1w`, `-14d`, `-1y`, `-30h`, …). The previous rows' dates are their own.
 *
 * The earlier range is an expression of the run's range (`date_from − length`), so it moves with the
 * `date_from` / `date_to` variables and is bound like them.
 */
import type { Expr } from '../dialect/mod.ts';
import { parseRelativeOrAbsolute, type ParsedDate } from './date-range.ts';
import type { CompileContext } from './kind.ts';
import { invalidInsight, type ObjectReader } from './reader.ts';
import { num, sql } from './template.ts';

/** How far back the previous period is: its own length (null), or a fixed shift. */
export interface Compare {
  readonly shift: { readonly count: number; readonly unit: 'h' | 'd' | 'w' | 'm' | 'q' | 'y' } | null;
}

const UNITS = ['h', 'd', 'w', 'm', 'q', 'y'] as const;

/** `compareFilter`: null when not comparing (`compare_to` alone changes nothing, PostHog's rule). */
export function readCompareFilter(f: ObjectReader | undefined, dateFrom: string | null): Compare | null {
  if (!f) return null;
  f.only(['compare', 'compare_to']);
  const compare = f.boolean('compare', false);
  const to = f.string('compare_to');
  if (!compare) return null;
  if (dateFrom === 'all') {
    throw invalidInsight(
      f.at('compare'),
      "Comparing is not supported with date_from 'all': the range has no earlier period of its own.",
    );
  }
  if (to === undefined) return { shift: null };
  const parsed: ParsedDate | null = parseRelativeOrAbsolute(to);
  if (
    parsed?.kind !== 'relative' ||
    parsed.pin !== null ||
    parsed.count === 0 ||
    !(UNITS as readonly string[]).includes(parsed.unit)
  ) {
    throw invalidInsight(
      f.at('compare_to'),
      `'${f.at('compare_to')}' is ${JSON.stringify(to).slice(0, 32)}; it takes how far back the previous period is: -Nh, -Nd, -Nw, -Nm, -Nq or -Ny.`,
    );
  }
  return { shift: { count: parsed.count, unit: parsed.unit as (typeof UNITS)[number] } };
}

/** The run's context moved back to the previous period. */
export function previousContext(ctx: CompileContext, compare: Compare): CompileContext {
  const back = (at: Expr): Expr => {
    const s = compare.shift;
    if (s === null) {
      // The range's own length, to the microsecond: both ends are included.
      return sql.expr`${at} - toIntervalMicrosecond(dateDiff('microsecond', ${ctx.dateFrom()}, ${ctx.dateTo()}) + 1)`;
    }
    const n = num(s.unit === 'q' ? 13 * s.count : s.count);
    switch (s.unit) {
      case 'h':
        return sql.expr`${at} - toIntervalHour(${n})`;
      case 'd':
        return sql.expr`${at} - toIntervalDay(${n})`;
      case 'w':
      case 'q':
        return sql.expr`${at} - toIntervalWeek(${n})`;
      case 'm':
        return sql.expr`${at} - toIntervalMonth(${n})`;
      case 'y':
        return sql.expr`${at} - toIntervalYear(${n})`;
    }
  };
  return {
    now: ctx.now,
    selection: ctx.selection,
    dateFrom: () => back(ctx.dateFrom()),
    dateTo: () => back(ctx.dateTo()),
  };
}
