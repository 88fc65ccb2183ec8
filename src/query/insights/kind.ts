/**
 * What an insight kind (trends.ts, funnels.ts, retention.ts) provides: reading its query object, the date
 * range a run covers, and the dialect query that computes its answer table (SPEC §4). insight.ts dispatches
 * on `kind` and binds a run's values.
 */
import type { Expr, Query } from '../dialect/mod.ts';
import type { InsightBase } from './common.ts';
import type { ResolvedRange } from './date-range.ts';
import type { ObjectReader } from './reader.ts';
import { sql } from './template.ts';

export type InsightKind = 'TrendsQuery' | 'FunnelsQuery' | 'RetentionQuery';
export const INSIGHT_KINDS: readonly InsightKind[] = ['TrendsQuery', 'FunnelsQuery', 'RetentionQuery'];

/** A kind's checked query: its own fields, and the base every kind has. */
export interface CheckedInsight {
  readonly base: InsightBase;
}

/** The run's `date_from` / `date_to` magic variables (`YYYY-MM-DD`), when given: they replace the range's ends. */
export interface DateOverrides {
  readonly dateFrom?: string;
  readonly dateTo?: string;
}

/**
 * Which rows of a single breakdown a run asks for (the magic variable named by the breakdown property):
 * one value (`{variables.breakdown_value}`, a String), or the null value (`""` or null).
 */
export type BreakdownSelection = { readonly kind: 'value' } | { readonly kind: 'null' };

export interface CompileContext {
  /** When the run started: what relative dates in filters are resolved against. */
  readonly now: Date;
  /** The first instant of the range (DateTime64(6, 'UTC')); a new node at each call. */
  dateFrom(): Expr;
  /** The last instant of the range, included (DateTime64(6, 'UTC')); a new node at each call. */
  dateTo(): Expr;
  /** Set when the run selects one breakdown value; `selects(expr)` is then the condition on a value. */
  readonly selection: BreakdownSelection | null;
}

/** The condition that a breakdown value (Nullable(String)) is the selected one, or null without selection. */
export function selectionCondition(ctx: CompileContext, value: Expr): Expr | null {
  if (!ctx.selection) return null;
  return ctx.selection.kind === 'null'
    ? sql.expr`${value} IS NULL`
    : sql.expr`ifNull(${value} = {variables.breakdown_value}, false)`;
}

export interface CompiledInsight {
  readonly query: Query;
  /** The name of the `breakdown_value` column when the answer has one (hasMore reads it for `Other`). */
  readonly breakdownColumn: string | null;
}

export interface InsightKindSpec<Q extends CheckedInsight> {
  readonly kind: InsightKind;
  /** Checks every field (`q.path` is `query`): 400 `invalid_query` with `attr` the field's path. */
  read(q: ObjectReader): Q;
  /** The range a run covers, resolved at `now` with the run's date variables. */
  range(q: Q, overrides: DateOverrides, now: Date): ResolvedRange;
  /** The dialect query whose rows are the answer, in SPEC §4's columns and order. */
  compile(q: Q, ctx: CompileContext): CompiledInsight;
}

/** The value a breakdown's `Other` row carries (SPEC §4): values past `breakdown_limit` are summed into it. */
export const OTHER = 'Other';
