/**
 * What each trends `math` (SPEC §4) aggregates, and how. Every math is kept as an aggregate *state* per
 * series × breakdown value × interval (`countState`, `uniqExactState`, `quantileState(0.9)`, …), so the rows
 * of the values past the breakdown limit can be merged into `Other` afterwards (`…Merge`) without reading
 * the events again: `Other` is the math over the other values' events (distinct persons across them for
 * `dau`, their median for `median`), which for `total` and `sum` is the sum of their rows.
 */
import type { Call, Expr } from '../dialect/mod.ts';
import type { EventsNode, Math } from './common.ts';
import { propertyValue } from './events.ts';
import { num, sql } from './template.ts';

/** Maths that count distinct persons over a window of days ending with each interval. */
export const ACTIVE_DAYS: Readonly<Partial<Record<Math, number>>> = { weekly_active: 7, monthly_active: 30 };

export function isActive(math: Math): boolean {
  return ACTIVE_DAYS[math] !== undefined;
}

/** What a series aggregates per row: nothing (a count), the person behind the event, or an expression. */
export type MathInput =
  { readonly kind: 'none' } | { readonly kind: 'actor' } | { readonly kind: 'expr'; readonly expr: Expr };

/** An aggregate function with its parameters (`quantile` with the level). */
export interface Aggregate {
  readonly name: string;
  readonly params: readonly number[];
}

const QUANTILES: Readonly<Partial<Record<Math, number>>> = {
  median: 0.5,
  p75: 0.75,
  p90: 0.9,
  p95: 0.95,
  p99: 0.99,
};

/** The row input of a series' math. Inputs are read from the filtered events (alias `e`). */
export function mathInput(node: EventsNode): MathInput {
  switch (node.math) {
    case 'total':
      return { kind: 'none' };
    case 'dau':
    case 'weekly_active':
    case 'monthly_active':
      return { kind: 'actor' };
    case 'unique_session':
      // A missing or empty session id is no session (PostHog's `$session_id` column is '' then).
      return { kind: 'expr', expr: sql.expr`nullIf(${propertyValue('$session_id', 'event')}, '')` };
    case 'unique_group': {
      const column: Expr = { kind: 'field', chain: ['e', `$group_${node.mathGroupTypeIndex ?? 0}`] };
      return { kind: 'expr', expr: sql.expr`nullIf(${column}, '')` };
    }
    default:
      // A property read as a number: text that is no number counts as missing (PostHog's toFloat).
      return {
        kind: 'expr',
        expr: sql.expr`toFloat64OrNull(${propertyValue(node.mathProperty ?? '', node.mathPropertyType)})`,
      };
  }
}

export function mathAggregate(math: Math): Aggregate {
  switch (math) {
    case 'total':
      return { name: 'count', params: [] };
    case 'dau':
    case 'weekly_active':
    case 'monthly_active':
    case 'unique_session':
    case 'unique_group':
      return { name: 'uniqExact', params: [] };
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
      return { name: math, params: [] };
    default:
      return { name: 'quantile', params: [QUANTILES[math] ?? 0.5] };
  }
}

function aggregateCall(name: string, params: readonly number[], args: Expr[]): Call {
  return {
    kind: 'call',
    name,
    params: params.length === 0 ? null : params.map(num),
    args,
    distinct: false,
    over: null,
  };
}

/** `<agg>State[If](input[, cond])`: the state a cell keeps. */
export function stateOf(agg: Aggregate, input: Expr | null, cond: Expr | null): Expr {
  const args = [...(input ? [input] : []), ...(cond ? [cond] : [])];
  return aggregateCall(`${agg.name}State${cond ? 'If' : ''}`, agg.params, args);
}

/** `<agg>Merge[If](state[, cond])`: states of several cells as one. */
export function mergeOf(agg: Aggregate, state: Expr, cond: Expr | null): Expr {
  return aggregateCall(`${agg.name}Merge${cond ? 'If' : ''}`, agg.params, cond ? [state, cond] : [state]);
}

/**
 * A state's (or merged state's) number as the answer's Float64: none (an interval whose property values
 * were all missing) is 0, as PostHog's `ifNull(…, 0)`.
 */
export function valueOf(aggregated: Expr): Expr {
  return sql.expr`ifNull(toFloat64(${aggregated}), 0)`;
}

/** `finalizeAggregation(state)` as the answer's number. */
export function finalValue(state: Expr): Expr {
  return valueOf(sql.expr`finalizeAggregation(${state})`);
}
