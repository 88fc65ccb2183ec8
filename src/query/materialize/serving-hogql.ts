/**
 * `debug.hogql` of a materialized run (SPEC §4): the dialect query over the stored table (named
 * `materialized.<endpoint>_v<version>`) that answers what `executeServing` answers, the run's values
 * inlined. It is for a person to read and to check by hand; nothing runs it.
 */
import type { ParamValue } from '../clickhouse/variables.ts';
import {
  printDialect,
  selectQuery,
  type ColumnExpr,
  type Expr,
  type OrderItem,
  type SelectQuery,
} from '../dialect/mod.ts';
import type { InsightServing, ServingOutput, ServingPlan, SqlServing } from './serving.ts';
import { call } from './sql-parts.ts';

/** A value moved to the start of its bucket; the value read as a time in UTC, as the run reads it. */
const BUCKET_CALL: Readonly<Record<string, (e: Expr) => Expr>> = {
  hour: (e) => call('toStartOfHour', [time(e)]),
  day: (e) => call('toStartOfDay', [time(e)]),
  week: (e) => call('toStartOfWeek', [time(e), number(0)]),
  month: (e) => call('toStartOfMonth', [time(e)]),
};

function time(e: Expr): Expr {
  return call('toDateTime64', [e, number(6), { kind: 'string', value: 'UTC' }]);
}

export function servingHogql(
  plan: ServingPlan,
  endpointName: string,
  version: number,
  variables: Readonly<Record<string, ParamValue>>,
): string {
  const from: SelectQuery['from'] = {
    kind: 'from',
    table: {
      kind: 'table',
      database: 'materialized',
      name: `${endpointName}_v${version}`,
      alias: null,
      final: false,
      sample: null,
    },
    joins: [],
  };
  const query = plan.kind === 'sql' ? sqlQuery(plan, from) : insightQuery(plan, from, variables);
  return printDialect(query, { inline: variables });
}

function sqlQuery(plan: SqlServing, from: SelectQuery['from']): SelectQuery {
  const stored = (i: number): Expr => field(plan.stored[i]!.name);
  const conditions: Expr[] = plan.filters.map((f) => {
    const value: Expr = { kind: 'placeholder', name: f.variable };
    return {
      kind: 'binary',
      op: f.op,
      left: stored(f.column),
      right: f.bucket ? BUCKET_CALL[f.bucket]!(value) : value,
    };
  });
  const merged = plan.mode === 'reaggregate';
  const exprOf = (o: ServingOutput): Expr => {
    if (o.kind === 'value') return stored(o.stored);
    if (o.kind === 'avg') {
      return {
        kind: 'binary',
        op: '/',
        left: call('sum', [stored(o.sum)]),
        right: call('sum', [stored(o.count)]),
      };
    }
    return call(o.kind, [stored(o.stored)]);
  };
  const columns: ColumnExpr[] = plan.outputs.slice(0, plan.visible).map((o) => {
    const e = exprOf(o);
    return e.kind === 'field' && e.chain[0] === o.name ? e : { kind: 'alias', expr: e, alias: o.name };
  });
  const orderBy: OrderItem[] = plan.order.map((item) => ({
    kind: 'orderItem',
    expr:
      item.output < plan.visible
        ? field(plan.outputs[item.output]!.name)
        : exprOf(plan.outputs[item.output]!),
    descending: item.descending,
    nulls: item.nulls,
  }));
  let limit = plan.limit;
  if (plan.emptyMarker !== null) {
    const marker = stored(plan.emptyMarker);
    if (merged) {
      // Merged without GROUP BY, the engine too answers one row over no kept rows.
      conditions.unshift({ kind: 'binary', op: '=', left: marker, right: number(0) });
    } else {
      // At most one stored row per value: it, or else the row over no rows.
      const matched = and(conditions.splice(0));
      conditions.push(
        matched ? { kind: 'or', operands: [matched, eq(marker, number(1))] } : eq(marker, number(1)),
      );
      orderBy.push({ kind: 'orderItem', expr: marker, descending: false, nulls: null });
      limit = 1;
    }
  }
  return selectQuery({
    distinct: plan.distinct,
    columns,
    from,
    where: and(conditions),
    groupBy: merged && plan.keys.length > 0 ? plan.keys.map((k) => exprOf(plan.outputs[k]!)) : null,
    orderBy: orderBy.length > 0 ? orderBy : null,
    limit: limit === null ? null : number(limit),
    offset: plan.offset > 0 ? number(plan.offset) : null,
  });
}

function insightQuery(
  plan: InsightServing,
  from: SelectQuery['from'],
  variables: Readonly<Record<string, ParamValue>>,
): SelectQuery {
  const stored = (i: number): Expr => field(plan.stored[i]!.name);
  const conditions: Expr[] = [];
  const selecting = plan.breakdown !== null && Object.hasOwn(variables, plan.breakdown.variable);
  if (plan.part !== null) conditions.push(eq(stored(plan.part), number(selecting ? 1 : 0)));
  if (selecting) {
    const value = variables[plan.breakdown.variable];
    const column = stored(plan.breakdown.column);
    conditions.push(
      value === null || value === ''
        ? { kind: 'isNull', not: false, operand: column }
        : eq(column, { kind: 'string', value: String(value) }),
    );
  }
  if (plan.hideOther && plan.breakdownColumn !== null) {
    // A null breakdown value is kept: only `Other` is left out.
    const isOther: Expr = {
      kind: 'binary',
      op: '!=',
      left: stored(plan.breakdownColumn),
      right: { kind: 'string', value: 'Other' },
    };
    conditions.push(call('ifNull', [isOther, { kind: 'boolean', value: true }]));
  }
  return selectQuery({
    columns: plan.columns.map((i) => stored(i)),
    from,
    where: and(conditions),
  });
}

function field(name: string): Expr {
  return { kind: 'field', chain: [name] };
}

function number(n: number): Expr {
  return { kind: 'number', text: String(n) };
}

function eq(left: Expr, right: Expr): Expr {
  return { kind: 'binary', op: '=', left, right };
}

function and(conditions: Expr[]): Expr | null {
  if (conditions.length === 0) return null;
  return conditions.length === 1 ? conditions[0]! : { kind: 'and', operands: conditions };
}
