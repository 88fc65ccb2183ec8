/**
 * The ServingPlan: how a run of a materialized version is answered from its stored table (SPEC §4). It is
 * plain JSON data, structured-cloneable, because it is posted to the query actors (worker threads) beside
 * each run; `planMaterialization` (rewrite.ts) makes it, `executeServing` (execute.ts) follows it and
 * `servingHogql` (serving-hogql.ts) shows it as the dialect query over the materialization.
 *
 * The stored table keeps one row per group of the query and per value of each variable's column (a range
 * variable's column at its bucket). A run keeps the rows its variables select, then either answers them as
 * they are (`rows`: no range variable over an aggregate, so each kept row is one answer row) or groups them
 * again and merges their partial aggregates (`reaggregate`: a range spans several buckets), then orders,
 * applies the query's own LIMIT and the page.
 */
import type { MaterializationBucket } from '../../core/ports.ts';

export type Bucket = MaterializationBucket;

/** The comparisons a variable's predicate can make (analysis.ts), its column on the left. */
export type FilterOp = '=' | '>=' | '>' | '<' | '<=';

/**
 * One column of the stored table (the Parquet object), in order. Plans name stored columns by their index:
 * names are for a person (servingHogql), and a query's own column names may repeat.
 */
export interface StoredColumn {
  readonly name: string;
  /** Its ClickHouse type; null until the plan is described (`describeMaterialization`). */
  readonly type: string | null;
}

/**
 * A variable's predicate, applied to the stored rows: `column op value`. With a `bucket`, the column holds
 * the start of each bucket and the value is moved to the start of its own bucket first, so whole buckets
 * are kept: `>=` and `<` from / before the value's bucket, `<=` and `>` up to / after it. The answer is then
 * the direct answer for the value moved to its bucket's start (`>=`, `<`) or to its bucket's last instant
 * (`<=`, `>`).
 */
export interface ServingFilter {
  /** The stored column's index. */
  readonly column: number;
  readonly variable: string;
  readonly op: FilterOp;
  readonly bucket: Bucket | null;
}

/**
 * A column of the answer (or a hidden one, kept for ORDER BY):
 * - `value`: a stored column as it is (a group key; any column when rows are answered as they are);
 * - `sum` / `min` / `max`: a partial aggregate merged over the rows of a group (count, countIf, sum, sumIf
 *   are summed; min and max are taken again);
 * - `avg`: a sum and a count, each summed, then divided.
 */
export type ServingOutput =
  | { readonly kind: 'value'; readonly name: string; readonly stored: number }
  | { readonly kind: 'sum' | 'min' | 'max'; readonly name: string; readonly stored: number }
  | { readonly kind: 'avg'; readonly name: string; readonly sum: number; readonly count: number };

export interface ServingOrder {
  /** An index into `outputs`. */
  readonly output: number;
  readonly descending: boolean;
  /** As written; null is ClickHouse's default (NULLs last, NaN with them). */
  readonly nulls: 'first' | 'last' | null;
}

export interface SqlServing {
  readonly kind: 'sql';
  readonly stored: readonly StoredColumn[];
  readonly filters: readonly ServingFilter[];
  readonly mode: 'rows' | 'reaggregate';
  /** The answer's columns first (`visible` of them), then hidden ones ORDER BY needs. */
  readonly outputs: readonly ServingOutput[];
  readonly visible: number;
  /** `reaggregate`: the outputs (indexes) a group is made of: every `value` output. */
  readonly keys: readonly number[];
  /** SELECT DISTINCT: equal answer rows are answered once. */
  readonly distinct: boolean;
  readonly order: readonly ServingOrder[];
  /** The query's own LIMIT (the ceiling of every page) and OFFSET. */
  readonly limit: number | null;
  readonly offset: number;
  /**
   * A query with aggregates and no GROUP BY answers one row even over no rows: the stored table holds that
   * row (the query over no rows, computed by the engine) marked by this column, answered when no other
   * row is kept. Null for other queries.
   */
  readonly emptyMarker: number | null;
}

export interface InsightServing {
  readonly kind: 'insight';
  readonly stored: readonly StoredColumn[];
  /** The answer's columns: the stored ones but `part`, by index. */
  readonly columns: readonly number[];
  /**
   * An insight with one breakdown keeps two parts: 0 is the insight's own answer (its breakdown limit and
   * `Other`), for a run without the breakdown variable; 1 the same query with a breakdown limit of 10000,
   * whose rows a run selects by the variable's value. Null without a single breakdown (then no variable).
   */
  readonly part: number | null;
  readonly breakdown: {
    /** The variable: the breakdown property's name (`$browser`). */
    readonly variable: string;
    readonly column: number;
  } | null;
  /** The answer's breakdown column, where `Other` tells that values were past the limit (hasMore). */
  readonly breakdownColumn: number | null;
  /** `breakdown_hide_other_aggregation`: rows of `Other` are left out (hasMore still tells of them). */
  readonly hideOther: boolean;
}

export type ServingPlan = SqlServing | InsightServing;

/** What a served run answers (as a direct run: the page's rows, and whether the query has more). */
export interface ServedResult {
  readonly columns: string[];
  readonly types: string[];
  readonly rows: unknown[][];
  readonly hasMore: boolean;
}

/** Whether every stored column's type is known: a plan is served only once described. */
export function isDescribed(plan: ServingPlan): boolean {
  return plan.stored.every((c) => c.type !== null);
}

/** The plan with the stored columns' ClickHouse types, in stored order (what DESCRIBE of the query says). */
export function withStoredTypes<P extends ServingPlan>(plan: P, types: readonly string[]): P {
  if (types.length !== plan.stored.length) {
    throw new Error(`the stored table has ${plan.stored.length} columns; ${types.length} types were given`);
  }
  return { ...plan, stored: plan.stored.map((c, i) => ({ name: c.name, type: types[i]! })) };
}
