/**
 * From a pass's events to its cells — one row per series × breakdown value × interval holding the math's
 * aggregate state — and, with a breakdown, to the values kept: each value's total over the range ranks it
 * within its series (highest first, ties by the value, ascending), and the states of the values past the
 * limit are merged into one `Other` row per interval. All in one read of the events: the ranking is window
 * functions over the cells, not a second query.
 */
import type { Expr, SelectQuery } from '../dialect/mod.ts';
import { bucketStart, intervalOf, type Interval } from './date-range.ts';
import type { CompileContext } from './kind.ts';
import { alias, array, num, sql, str } from './template.ts';
import type { CheckedTrends } from './trends-types.ts';
import type { Pass, PassEvents, StateColumn } from './trends-events.ts';
import { ACTIVE_DAYS, finalValue, mergeOf, stateOf, valueOf } from './trends-math.ts';

/**
 * The start of every interval of the range, from the interval of `date_from` to that of `date_to`
 * (Array(DateTime('UTC'))): the answer has a row for each, zero-filled.
 */
export function bucketsExpr(interval: Interval, ctx: CompileContext): Expr {
  const first = bucketStart(interval, ctx.dateFrom());
  const count = sql.expr`toUInt64(dateDiff(${str(interval)}, ${bucketStart(interval, ctx.dateFrom())}, ${bucketStart(interval, ctx.dateTo())}) + 1)`;
  return sql.expr`arrayMap(n -> ${first} + ${intervalOf(interval, sql.expr`n`)}, range(${count}))`;
}

/** `f(column)` of the series the row is of: one column serves all, else by `s`. */
export function bySeries(states: readonly StateColumn[], f: (column: StateColumn) => Expr): Expr {
  if (states.length === 1) return f(states[0]!);
  const branches = states.flatMap((c) => [sql.expr`has(${array(c.series.map(num))}, s)`, f(c)]);
  return sql.expr`multiIf(${branches}, 0)`;
}

function field(name: string): Expr {
  return { kind: 'field', chain: [name] };
}

/**
 * `s, [bd,] [bucket,] st0, …` grouped: one row per series × value × interval (no interval with a
 * total-value display).
 */
export function cellsQuery(q: CheckedTrends, pass: Pass, ev: PassEvents, ctx: CompileContext): SelectQuery {
  const several = ev.states.length > 1;
  const states = ev.states.map((c) =>
    alias(
      stateOf(
        c.aggregate,
        c.input === null ? null : field(c.input),
        several ? sql.expr`has(${array(c.series.map(num))}, s)` : null,
      ),
      c.name,
    ),
  );
  const keys: Expr[] = [sql.expr`s`, ...(q.base.breakdown ? [sql.expr`bd`] : [])];
  if (q.totalValue) {
    return sql.select`SELECT ${keys}, ${states} FROM ${ev.query} AS ev GROUP BY ${keys}`;
  }
  let bucket: Expr;
  if (pass.active) {
    // A day (hour) counts in every interval whose window — the N days ending with the interval — holds it.
    const days = pass.series.map((i) => ACTIVE_DAYS[q.series[i]!.math] ?? 0);
    const n =
      new Set(days).size === 1
        ? num(days[0]!)
        : sql.expr`${array(days.map(num))}[indexOf(${array(pass.series.map(num))}, s)]`;
    const end = sql.expr`b + ${intervalOf(q.interval, num(1))}`;
    bucket = sql.expr`arrayJoin(arrayFilter(b -> ${end} > u AND ${end} - toIntervalDay(${n}) <= u, ${bucketsExpr(q.interval, ctx)}))`;
  } else {
    bucket = bucketStart(q.interval, sql.expr`ts`);
  }
  return sql.select`SELECT ${keys}, ${bucket} AS bucket, ${states} FROM ${ev.query} AS ev GROUP BY ${keys}, bucket`;
}

/**
 * With a breakdown: `s, other, key, rank, [bucket,] value`, where `other` rows (key null / []) merge the values
 * ranked past the limit. `rank` is the value's place in its series (1 first); null takes a place like any
 * value and is ordered after the real ones when the answer is sorted.
 */
export function rankedQuery(q: CheckedTrends, ev: PassEvents, cells: SelectQuery): SelectQuery {
  const limit = num(q.base.breakdown!.limit);
  const time = q.totalValue ? [] : [sql.expr`bucket`];
  const stateColumns = ev.states.map((c) => field(c.name));
  const value = bySeries(ev.states, (c) => finalValue(field(c.name)));
  const valued = sql.select`SELECT s, bd, ${time}, ${stateColumns}, ${value} AS v, sum(v) OVER (PARTITION BY s, bd) AS total FROM ${cells} AS c`;
  const ranked = sql.select`SELECT s, bd, ${time}, ${stateColumns}, v, dense_rank() OVER (PARTITION BY s ORDER BY total DESC, bd ASC) AS r FROM ${valued} AS c`;
  // Only the Other rows merge states; a kept value's row is its own cell, already finalized.
  const merged = bySeries(ev.states, (c) =>
    valueOf(mergeOf(c.aggregate, field(c.name), sql.expr`r > ${limit}`)),
  );
  const empty = q.base.breakdown!.breakdowns.length === 1 ? sql.expr`NULL` : sql.expr`[]`;
  return sql.select`SELECT s, r > ${limit} AS other, if(other, ${empty}, bd) AS key, if(other, ${num(q.base.breakdown!.limit + 1)}, any(r)) AS rank, ${time}, if(other, ${merged}, any(v)) AS value FROM ${ranked} AS c GROUP BY s, other, key, ${time}`;
}
