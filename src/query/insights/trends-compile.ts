/**
 * A TrendsQuery as one dialect query: the answer table of SPEC §4 (`series_index`, `series`,
 * [`breakdown_value`], `date`, `value`), every interval of the range present and zero-filled, ordered by
 * series, breakdown rank (real values by total, then null, then Other) and date.
 *
 * The series are answered in as few reads of the events as the maths allow: one pass for every series
 * counted per interval, and one more for the weekly / monthly active series of a time series (their rows
 * reach back before the range). Each pass goes events → cells (trends-cells.ts) → rows; passes are joined
 * by UNION ALL. `value` is Float64 for every math.
 */
import type { Expr, OrderItem, Query, SelectQuery } from '../dialect/mod.ts';
import { bucketLabel } from './date-range.ts';
import { OTHER, type CompileContext, type CompiledInsight } from './kind.ts';
import { array, num, sql, str } from './template.ts';
import type { CheckedTrends } from './trends-types.ts';
import { bucketsExpr, bySeries, cellsQuery, rankedQuery } from './trends-cells.ts';
import { passEvents, type Pass } from './trends-events.ts';
import { previousContext, type Compare } from './trends-compare.ts';
import { formulaRows } from './trends-formula.ts';
import { finalValue, isActive } from './trends-math.ts';

/** The label of a series: its custom name, else its event, else `All events` (PostHog's). */
export function seriesLabel(q: CheckedTrends, index: number): string {
  const node = q.series[index]!;
  // An empty custom name is no name (PostHog's clients send "" after clearing the field).
  return node.customName || (node.event ?? 'All events');
}

/** Which series are answered by which read of the events. */
export function plan(q: CheckedTrends): Pass[] {
  const all = q.series.map((_, i) => i);
  if (q.totalValue) return [{ series: all, active: false }];
  const active = all.filter((i) => isActive(q.series[i]!.math));
  const plain = all.filter((i) => !isActive(q.series[i]!.math));
  return [
    ...(plain.length > 0 ? [{ series: plain, active: false }] : []),
    ...(active.length > 0 ? [{ series: active, active: true }] : []),
  ];
}

/** A value at a bucket from a group's arrays of buckets and values: 0 where the bucket had no events. */
function valueAt(buckets: Expr, values: Expr): Expr {
  return sql.expr`if(indexOf(${buckets}, bucket) = 0, 0, ${values}[indexOf(${buckets}, bucket)])`;
}

/**
 * One pass's rows: `si, [other, key, rank,] [bucket,] val`, zero-filled. Without a breakdown, a series
 * with no events still has its rows (the series list is joined with what the pass found).
 */
function passRows(q: CheckedTrends, pass: Pass, ctx: CompileContext): SelectQuery {
  const ev = passEvents(q, pass, ctx);
  const cells = cellsQuery(q, pass, ev, ctx);
  const seriesList = sql.query`SELECT arrayJoin(${array(pass.series.map(num))}) AS i`;
  if (q.base.breakdown) {
    const ranked = rankedQuery(q, ev, cells);
    if (q.totalValue) {
      return sql.select`SELECT toUInt32(s) AS si, other, key, rank, value AS val FROM ${ranked} AS r`;
    }
    const groups = sql.query`SELECT s, other, key, rank, groupArray(bucket) AS bs, groupArray(value) AS vs FROM ${ranked} AS r GROUP BY s, other, key, rank`;
    return sql.select`SELECT toUInt32(s) AS si, other, key, rank, bucket, ${valueAt(sql.expr`bs`, sql.expr`vs`)} AS val FROM ${groups} AS g ARRAY JOIN (${bucketsExpr(q.interval, ctx)}) AS bucket`;
  }
  const value = bySeries(ev.states, (c) => finalValue({ kind: 'field', chain: [c.name] }));
  if (q.totalValue) {
    const values = sql.query`SELECT s, ${value} AS v FROM ${cells} AS c`;
    return sql.select`SELECT toUInt32(sl.i) AS si, g.v AS val FROM ${seriesList} AS sl LEFT JOIN ${values} AS g ON sl.i = g.s`;
  }
  const groups = sql.query`SELECT s, groupArray(bucket) AS bs, groupArray(${value}) AS vs FROM ${cells} AS c GROUP BY s`;
  return sql.select`SELECT toUInt32(sl.i) AS si, bucket, ${valueAt(sql.expr`g.bs`, sql.expr`g.vs`)} AS val FROM ${seriesList} AS sl LEFT JOIN ${groups} AS g ON sl.i = g.s ARRAY JOIN (${bucketsExpr(q.interval, ctx)}) AS bucket`;
}

/** The rows of the series (or of the formulas) for the range of `ctx`: `si, [other, key, rank,] [bucket,] val`. */
function answerRows(q: CheckedTrends, ctx: CompileContext): Query {
  const parts = plan(q).map((pass) => passRows(q, pass, ctx));
  const rows: Query = parts.length === 1 ? parts[0]! : { kind: 'unionAll', queries: parts };
  if (q.formulas.length === 0) return rows;
  return formulaRows(rows, q.formulas, q.series.length, {
    breakdown: q.base.breakdown !== null,
    time: !q.totalValue,
  });
}

/** The current and the previous period's rows, each with `cmp` (0 current, 1 previous). */
function comparedRows(q: CheckedTrends, ctx: CompileContext, compare: Compare): Query {
  const columns: Expr[] = [
    sql.expr`si`,
    ...(q.base.breakdown ? [sql.expr`other`, sql.expr`key`, sql.expr`rank`] : []),
    ...(q.totalValue ? [] : [sql.expr`bucket`]),
    sql.expr`val`,
  ];
  const current = sql.query`SELECT ${columns}, 0 AS cmp FROM ${answerRows(q, ctx)} AS r`;
  const previous = sql.query`SELECT ${columns}, 1 AS cmp FROM ${answerRows(q, previousContext(ctx, compare))} AS r`;
  return { kind: 'unionAll', queries: [current, previous] };
}

export function compileTrends(q: CheckedTrends, ctx: CompileContext): CompiledInsight {
  const breakdown = q.base.breakdown;
  const time = !q.totalValue;
  const rows = q.compare ? comparedRows(q, ctx, q.compare) : answerRows(q, ctx);
  const labels =
    q.formulas.length > 0
      ? array(q.formulas.map((f) => str(f.label)))
      : array(q.series.map((_, i) => str(seriesLabel(q, i))));
  const partition: Expr[] = [sql.expr`si`];
  const columns: Expr[] = [sql.expr`si AS series_index`, sql.expr`${labels}[si + 1] AS series`];
  const order: Expr[] = [sql.expr`si`];
  if (q.compare) {
    columns.push(sql.expr`if(cmp = 0, 'current', 'previous') AS compare_label`);
    partition.unshift(sql.expr`cmp`);
    // PostHog's order: every current series, then every previous one.
    order.unshift(sql.expr`cmp`);
  }
  if (breakdown) {
    const several = breakdown.breakdowns.length > 1;
    const other = several ? array(breakdown.breakdowns.map(() => str(OTHER))) : str(OTHER);
    columns.push(sql.expr`if(other, ${other}, key) AS breakdown_value`);
    partition.push(sql.expr`other`, sql.expr`key`);
    // Real values first (by rank: total, then value), then null, then Other.
    const isNull = several ? sql.expr`arrayAll(x -> x IS NULL, key)` : sql.expr`key IS NULL`;
    order.push(sql.expr`other`, isNull, sql.expr`rank`);
  }
  if (time) {
    columns.push(sql.expr`${bucketLabel(q.interval, sql.expr`bucket`)} AS date`);
    order.push(sql.expr`bucket`);
  }
  columns.push(
    q.cumulative
      ? sql.expr`sum(val) OVER (PARTITION BY ${partition} ORDER BY bucket ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS value`
      : sql.expr`val AS value`,
  );
  const orderItems = order.map((expr): OrderItem => ({
    kind: 'orderItem',
    expr,
    descending: false,
    nulls: null,
  }));
  const query = sql.query`SELECT ${columns} FROM ${rows} AS t ORDER BY ${orderItems}`;
  return { query, breakdownColumn: breakdown ? 'breakdown_value' : null };
}
