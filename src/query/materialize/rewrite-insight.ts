/**
 * What an insight version stores (SPEC §4): the insight's answer for its own date range, computed at the
 * refresh. Its only variable on a materialized version is the breakdown property (one breakdown), so with
 * one breakdown the stored table holds two parts: the insight's own answer (part 0: its breakdown limit and
 * `Other`, for a run without the variable) and the same query with a breakdown limit of 10000 (part 1),
 * whose rows of one value a run selects. Selecting from a wider answer is what a direct run with the
 * variable computes: each kind applies the selection to a value's own rows (trends to its events, funnels
 * and retention to the value attributed to an actor), which the wider answer holds as they are. Values past
 * the 10000th are summed into its `Other`, so a run selecting one of them answers no rows.
 */
import type { BoundVariable } from '../clickhouse/variables.ts';
import { selectQuery, type Query } from '../dialect/mod.ts';
import {
  compileInsightRun,
  planInsightRun,
  type CheckedInsightQuery,
  type PreparedInsightRun,
} from '../insights/insight.ts';
import type { InsightServing } from './serving.ts';
import { call } from './sql-parts.ts';

export const MATERIALIZED_BREAKDOWN_LIMIT = 10_000;

export interface InsightRewrite {
  readonly query: Query;
  readonly bound: Map<string, BoundVariable>;
  readonly serving: InsightServing;
}

export function rewriteInsight(
  insight: CheckedInsightQuery,
  now: Date,
  database: string | undefined,
): InsightRewrite {
  const own = prepare(insight, now, database);
  const columns = own.compiled.resolved.columns;
  const breakdowns = insight.checked.base.breakdown?.breakdowns ?? [];
  const breakdownColumn = own.breakdownColumn === null ? null : columns.indexOf(own.breakdownColumn);
  const base: Omit<InsightServing, 'stored' | 'part' | 'breakdown'> = {
    kind: 'insight',
    columns: columns.map((_, i) => i),
    breakdownColumn: breakdownColumn === -1 ? null : breakdownColumn,
    hideOther: own.hideOther,
  };
  if (breakdowns.length !== 1 || base.breakdownColumn === null) {
    return {
      query: own.compiled.ast,
      bound: own.bound,
      serving: {
        ...base,
        stored: columns.map((name) => ({ name, type: null })),
        part: null,
        breakdown: null,
      },
    };
  }
  const spec = insight.checked.base.breakdown!;
  const wide: CheckedInsightQuery = {
    ...insight,
    checked: {
      ...insight.checked,
      base: { ...insight.checked.base, breakdown: { ...spec, limit: MATERIALIZED_BREAKDOWN_LIMIT } },
    },
  };
  const all = prepare(wide, now, database);
  const bound = new Map([...own.bound, ...all.bound]);
  // Each part keeps its own rows' order (rowNumberInAllBlocks of an ordered subquery), the parts in turn.
  const part = (query: Query, n: number): Query =>
    selectQuery({
      columns: [
        { kind: 'star', table: null },
        { kind: 'alias', expr: { kind: 'number', text: String(n) }, alias: 'weir_part' },
        { kind: 'alias', expr: call('rowNumberInAllBlocks', []), alias: 'weir_row' },
      ],
      from: { kind: 'from', table: { kind: 'tableSubquery', query, alias: null }, joins: [] },
    });
  const query = selectQuery({
    columns: [
      ...columns.map((name) => ({ kind: 'field' as const, chain: [name] })),
      { kind: 'field', chain: ['weir_part'] },
    ],
    from: {
      kind: 'from',
      table: {
        kind: 'tableSubquery',
        query: { kind: 'unionAll', queries: [part(own.compiled.ast, 0), part(all.compiled.ast, 1)] },
        alias: null,
      },
      joins: [],
    },
    orderBy: [
      { kind: 'orderItem', expr: { kind: 'field', chain: ['weir_part'] }, descending: false, nulls: null },
      { kind: 'orderItem', expr: { kind: 'field', chain: ['weir_row'] }, descending: false, nulls: null },
    ],
  });
  return {
    query,
    bound,
    serving: {
      ...base,
      stored: [...columns, 'weir_part'].map((name) => ({ name, type: null })),
      part: columns.length,
      breakdown: { variable: breakdowns[0]!.property, column: base.breakdownColumn },
    },
  };
}

/** The insight's run without variables, for the range as of `now`. */
function prepare(insight: CheckedInsightQuery, now: Date, database: string | undefined): PreparedInsightRun {
  return compileInsightRun(planInsightRun(insight, {}, { now, materialized: true, database }), database);
}
