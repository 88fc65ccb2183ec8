/**
 * RetentionQuery (SPEC §4): for each cohort interval of the range, how many of the actors who did the
 * target event then (recurring), or did it for the first time ever then (first time), did the returning
 * event 0, 1, … totalIntervals − 1 intervals later. Reading is in retention-read.ts, the query in
 * retention-sql.ts; this file holds the range, which differs from the other kinds' (PostHog's
 * `QueryDateRangeWithIntervals`): it is made of whole periods, and the one holding `date_to` is the last.
 */
import { type ResolvedRange, next, resolveRange, startOf } from './date-range.ts';
import type { DateOverrides, InsightKindSpec } from './kind.ts';
import { type CheckedRetention, readRetention } from './retention-read.ts';
import { compileRetention } from './retention-sql.ts';

export type { CheckedRetention } from './retention-read.ts';

export const retention: InsightKindSpec<CheckedRetention> = {
  kind: 'RetentionQuery',
  read: readRetention,
  range: retentionRange,
  compile: compileRetention,
};

/**
 * The range's end is the end of the period holding `date_to` (now when absent); its start is `date_from`'s
 * period when given, else `totalIntervals` periods before the end. `to` is the last instant included (the
 * framework binds it as …59.999999).
 */
export function retentionRange(q: CheckedRetention, overrides: DateOverrides, now: Date): ResolvedRange {
  const period = q.interval;
  const dateFrom = overrides.dateFrom ?? q.base.dateRange.dateFrom;
  const resolved = resolveRange(
    {
      dateFrom: dateFrom ?? 'all',
      dateTo: overrides.dateTo ?? q.base.dateRange.dateTo,
      explicitDate: q.base.dateRange.explicitDate,
    },
    { interval: period, now },
  );
  const end = next(period, startOf(period, resolved.to));
  const to = new Date(end.getTime() - 1);
  if (dateFrom === null) return { from: back(period, end, q.totalIntervals), to };
  if (resolved.from === 'all') return { from: 'all', to };
  return { from: startOf(period, resolved.from), to };
}

/** `n` periods before `end` (a period's start). */
function back(period: CheckedRetention['interval'], end: Date, n: number): Date {
  switch (period) {
    case 'hour':
      return new Date(end.getTime() - n * 3_600_000);
    case 'day':
      return new Date(end.getTime() - n * 86_400_000);
    case 'week':
      return new Date(end.getTime() - n * 7 * 86_400_000);
    case 'month':
      return new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - n, 1));
  }
}
