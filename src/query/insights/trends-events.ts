/**
 * The events a pass of a trend reads, in one scan for all its series: filtered by the range, the series'
 * events and every property filter before the person join (so the join only sees the rows that count),
 * each row tagged with the series it belongs to (`s`; an event of two series is two rows), its breakdown
 * value (`bd`) and what the series' math aggregates (`x0`, …, `actor`).
 *
 * The time-series weekly_active / monthly_active pass keeps one row per series × value × person × day (hour
 * with the hour interval) instead, from `date_from` − 30 days on: what the rolling windows are counted from.
 */
import { printDialectExpr, type ColumnExpr, type Expr, type SelectQuery } from '../dialect/mod.ts';
import type { Breakdown, EventsNode } from './common.ts';
import { actor, breakdownValue, eventIs, filtersExpr } from './events.ts';
import { selectionCondition, type CompileContext } from './kind.ts';
import { alias, and, array, num, or, sql, str, tuple } from './template.ts';
import type { CheckedTrends } from './trends-types.ts';
import { ACTIVE_DAYS, mathAggregate, mathInput, type Aggregate } from './trends-math.ts';

/** A part of the answer computed from one scan of the events. */
export interface Pass {
  /** Indices into the query's series. */
  readonly series: readonly number[];
  /** The time-series weekly_active / monthly_active pass: rows are persons' active days. */
  readonly active: boolean;
}

/** An aggregate state a cell keeps, shared by the series of the pass whose maths read the same input. */
export interface StateColumn {
  readonly name: string;
  readonly aggregate: Aggregate;
  /** The events column aggregated, or null (`count`). */
  readonly input: string | null;
  readonly series: readonly number[];
}

export interface PassEvents {
  readonly query: SelectQuery;
  readonly states: readonly StateColumn[];
}

/** The breakdown value of an event: one value, or an array of them with several breakdowns. */
export function breakdownExpr(breakdowns: readonly Breakdown[]): Expr {
  return breakdowns.length === 1 ? breakdownValue(breakdowns[0]!) : array(breakdowns.map(breakdownValue));
}

/** The longest window of the pass's weekly_active / monthly_active series, in days (0 without any). */
export function windowDays(q: CheckedTrends, series: readonly number[]): number {
  return Math.max(0, ...series.map((i) => ACTIVE_DAYS[q.series[i]!.math] ?? 0));
}

export function passEvents(q: CheckedTrends, pass: Pass, ctx: CompileContext): PassEvents {
  const nodes = pass.series.map((i) => q.series[i]!);
  const inner: ColumnExpr[] = [alias(sql.expr`e.timestamp`, 'ts')];
  const outer: ColumnExpr[] = [];
  const inputs = new Map<string, string>();
  const states = new Map<string, StateColumn>();
  let needsActor = false;
  pass.series.forEach((index, k) => {
    const node = nodes[k]!;
    const input = mathInput(node);
    let column: string | null = null;
    if (input.kind === 'actor') {
      needsActor = true;
      column = 'actor';
    } else if (input.kind === 'expr') {
      const key = printDialectExpr(input.expr);
      column = inputs.get(key) ?? `x${inputs.size}`;
      if (!inputs.has(key)) {
        inputs.set(key, column);
        inner.push(alias(input.expr, column));
        outer.push(alias(sql.expr`e.${sql.name(column)}`, column));
      }
    }
    const aggregate = mathAggregate(node.math);
    const key = `${aggregate.name}(${aggregate.params.join(',')})(${column ?? ''})`;
    const state = states.get(key);
    if (state) states.set(key, { ...state, series: [...state.series, index] });
    else states.set(key, { name: `st${states.size}`, aggregate, input: column, series: [index] });
  });

  const breakdown = q.base.breakdown;
  const bd = breakdown ? breakdownExpr(breakdown.breakdowns) : null;
  if (bd) {
    inner.push(alias(bd, 'bd'));
    outer.unshift(sql.expr`e.bd AS bd`);
  }
  if (needsActor) {
    inner.push(sql.expr`e.distinct_id AS distinct_id`, sql.expr`e.person_id AS person_id`);
    outer.push(alias(actor(), 'actor'));
  }

  // Each series' own condition; the time condition differs per series only for a total-value
  // weekly_active / monthly_active, whose window ends at date_to whatever date_from is.
  const days = windowDays(q, pass.series);
  const totalActive = q.totalValue && days > 0;
  const conditions = nodes.map((node) =>
    and(
      eventIs(node.event),
      filtersExpr(node.properties, ctx.now),
      totalActive ? seriesTime(node, ctx) : null,
    ),
  );
  const from = pass.active
    ? sql.expr`${ctx.dateFrom()} - toIntervalDay(${num(days)})`
    : totalActive
      ? sql.expr`least(${ctx.dateFrom()}, ${ctx.dateTo()} - toIntervalDay(${num(days)}))`
      : ctx.dateFrom();
  const where = and(
    sql.expr`e.timestamp >= ${from}`,
    sql.expr`e.timestamp <= ${ctx.dateTo()}`,
    nodes.length > 1 ? eventsIn(nodes) : null,
    filtersExpr(q.base.properties, ctx.now),
    bd ? selectionCondition(ctx, bd) : null,
    or(...conditions),
  );
  const several = pass.series.length > 1;
  if (several) {
    // The series an event belongs to, as a list: ARRAY JOIN makes a row for each.
    inner.push(
      alias(sql.expr`arrayFilter((i, c) -> c, ${array(pass.series.map(num))}, ${array(conditions)})`, 'ss'),
    );
  } else {
    outer.unshift(alias(num(pass.series[0]!), 's'));
  }
  if (several) outer.unshift(sql.expr`s`);

  const events = sql.select`SELECT ${inner} FROM events AS e WHERE ${where}`;
  let query: SelectQuery;
  if (pass.active) {
    // One row per person and active day (hour): the rolling windows count distinct persons of these.
    const unit = q.interval === 'hour' ? sql.expr`toStartOfHour(e.ts)` : sql.expr`toStartOfDay(e.ts)`;
    outer.push(alias(unit, 'u'));
    query = several
      ? sql.select`SELECT ${outer} FROM ${events} AS e ANY LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id ARRAY JOIN e.ss AS s GROUP BY ${groupKeys(bd !== null)}`
      : sql.select`SELECT ${outer} FROM ${events} AS e ANY LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id GROUP BY ${groupKeys(bd !== null)}`;
  } else {
    outer.push(sql.expr`e.ts AS ts`);
    if (needsActor) {
      query = several
        ? sql.select`SELECT ${outer} FROM ${events} AS e ANY LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id ARRAY JOIN e.ss AS s`
        : sql.select`SELECT ${outer} FROM ${events} AS e ANY LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id`;
    } else {
      query = several
        ? sql.select`SELECT ${outer} FROM ${events} AS e ARRAY JOIN e.ss AS s`
        : sql.select`SELECT ${outer} FROM ${events} AS e`;
    }
  }
  return { query, states: [...states.values()] };
}

function groupKeys(breakdown: boolean): Expr[] {
  return [sql.expr`s`, ...(breakdown ? [sql.expr`bd`] : []), sql.expr`actor`, sql.expr`u`];
}

/** A series' own time condition when its window is not the range (total-value weekly/monthly active). */
function seriesTime(node: EventsNode, ctx: CompileContext): Expr {
  const days = ACTIVE_DAYS[node.math];
  return days === undefined
    ? sql.expr`e.timestamp >= ${ctx.dateFrom()}`
    : sql.expr`e.timestamp > ${ctx.dateTo()} - toIntervalDay(${num(days)})`;
}

/** `e.event IN (…)` when every series names its event: lets the scan skip the other events' granules. */
function eventsIn(nodes: readonly EventsNode[]): Expr | null {
  if (nodes.some((n) => n.event === null)) return null;
  const names = [...new Set(nodes.map((n) => n.event!))];
  return names.length === 1 ? eventIs(names[0]!) : sql.expr`e.event IN ${tuple(names.map(str))}`;
}
