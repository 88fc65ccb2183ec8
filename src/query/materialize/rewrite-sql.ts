/**
 * The rewrite of a SQL version into what the engine stores (SPEC §4) and how a run is served from it.
 *
 * Each variable's predicate leaves WHERE and its column joins SELECT (and GROUP BY, when the query
 * aggregates), so the stored table keeps one row per group and per value of that column; a run filters
 * those rows by its values. ORDER BY, LIMIT and OFFSET move to the run: they apply to the rows a run keeps.
 * When a range variable filters an aggregate query, a run keeps several buckets of one group, so each
 * aggregate is stored in a form that merges again (avg as a sum and a count) and the column is kept at the
 * version's bucket (for times) to bound the stored rows.
 *
 * The stored columns get names a person can read in `debug.hogql`: the query is wrapped in an outer SELECT
 * that renames the inner columns, whose own aliases are Weir's (`__w_…`) so that none can capture a name
 * the query uses (ClickHouse aliases are visible in the whole query).
 */
import type { VariableType } from '../../core/ports.ts';
import {
  numberValue,
  printDialectExpr,
  selectQuery,
  type ColumnExpr,
  type Expr,
  type Query,
  type SelectQuery,
} from '../dialect/mod.ts';
import type { Bucket, ServingFilter, ServingOrder, ServingOutput, SqlServing } from './serving.ts';
import {
  call,
  conjuncts,
  hasAggregate,
  hasPlaceholder,
  hasWindow,
  isTemporal,
  lifted,
  partialOf,
  shownExpr,
  type Lifted,
} from './sql-parts.ts';

export interface SqlRewrite {
  /** The query the engine runs to make the stored table (before resolving). */
  readonly query: Query;
  readonly serving: SqlServing;
}

export type Cannot = { readonly cannot: string };

const BUCKET_FUNCTION: Readonly<Record<Bucket, (e: Expr) => Expr>> = {
  hour: (e) => call('toStartOfHour', [e]),
  day: (e) => call('toStartOfDay', [e]),
  // Weeks start on Sunday, as insights' do (mode 0).
  week: (e) => call('toStartOfWeek', [e, { kind: 'number', text: '0' }]),
  month: (e) => call('toStartOfMonth', [e]),
};

/** One column the stored query selects: its inner expression and its stored (outer) name. */
interface Column {
  readonly expr: ColumnExpr;
  readonly name: string;
}

class Columns {
  readonly list: Column[] = [];
  readonly #taken = new Set<string>();
  #inner = 0;

  /** Adds an inner column (aliased by Weir unless it has an alias) under a readable stored name; its index. */
  add(expr: ColumnExpr, wanted: string): number {
    const inner: ColumnExpr =
      expr.kind === 'alias' ? expr : { kind: 'alias', expr, alias: `__w_${this.#inner++}` };
    let base = wanted.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
    if (!/^[A-Za-z]/.test(base)) base = `c_${base}`;
    let name = base;
    for (let n = 2; this.#taken.has(name.toLowerCase()); n++) name = `${base}_${n}`;
    this.#taken.add(name.toLowerCase());
    this.list.push({ expr: inner, name });
    return this.list.length - 1;
  }
}

export function rewriteSql(
  ast: Query,
  columnNames: readonly string[],
  declared: Readonly<Record<string, VariableType>>,
  bucket: Bucket,
): SqlRewrite | Cannot {
  if (!hasPlaceholder(ast)) return unchanged(ast, columnNames);
  if (ast.kind !== 'select') return { cannot: 'A UNION ALL with variables cannot be materialized.' };
  const q = ast;
  const refuse = (reason: string): Cannot => ({ cannot: `${reason}.` });
  if (q.columns.some((c) => c.kind === 'star'))
    return refuse('A query selecting * cannot be materialized with variables: name its columns');
  if (q.groupByModifier)
    return refuse(`GROUP BY … WITH ${q.groupByModifier.toUpperCase()} cannot be materialized with variables`);
  if (q.limitBy) return refuse('LIMIT … BY cannot be materialized with variables');
  if (hasWindow([q.columns, q.orderBy, q.having])) {
    return refuse(
      'A window function (OVER) reads rows that a variable would filter out: it cannot be materialized with variables',
    );
  }
  const limit = literal(q.limit);
  const offset = literal(q.offset);
  if (limit === undefined || offset === undefined)
    return refuse('The LIMIT and OFFSET of a materialized query must be numbers');

  // The variables' predicates, by the column they compare; the other conjuncts stay.
  const kept: Expr[] = [];
  const dims = new Map<string, { expr: Expr; predicates: Lifted[] }>();
  for (const c of q.where ? conjuncts(q.where) : []) {
    const p = hasPlaceholder(c) ? lifted(c) : undefined;
    if (!p) {
      kept.push(c);
      continue;
    }
    const key = printDialectExpr(p.expr);
    const dim = dims.get(key) ?? { expr: p.expr, predicates: [] };
    dim.predicates.push(p);
    dims.set(key, dim);
  }
  const aggregating = q.groupBy !== null || hasAggregate([q.columns, q.having, q.orderBy]);
  let ranged = false;
  for (const dim of dims.values()) {
    const ops = new Set(dim.predicates.map((p) => p.op));
    if (ops.has('=') && ops.size > 1) {
      return refuse(
        `The column ${shownExpr(dim.expr)} is compared to variables both with = and with a range`,
      );
    }
    if (!ops.has('=')) ranged = true;
  }
  const mode = aggregating && ranged ? 'reaggregate' : 'rows';
  if (q.having && (mode === 'reaggregate' || q.groupBy === null)) {
    return refuse(
      mode === 'reaggregate'
        ? 'HAVING cannot be materialized with a range variable: it would apply to each bucket, not to the range'
        : 'HAVING without GROUP BY cannot be materialized with variables',
    );
  }

  const columns = new Columns();
  const outputs: ServingOutput[] = [];
  const exprOf = (c: ColumnExpr): Expr => (c.kind === 'alias' ? c.expr : c);
  // The answer's columns.
  for (let i = 0; i < q.columns.length; i++) {
    const c = q.columns[i]!;
    const name = columnNames[i] ?? `column_${i + 1}`;
    if (mode === 'rows' || !hasAggregate(exprOf(c))) {
      outputs.push({ kind: 'value', name, stored: columns.add(c, name) });
      continue;
    }
    const partial = partialOf(exprOf(c));
    if ('cannot' in partial) return refuse(capitalise(partial.cannot));
    if (partial.merge === 'avg') {
      outputs.push({
        kind: 'avg',
        name,
        sum: columns.add(partial.sum, `${name}_sum`),
        count: columns.add(partial.count, `${name}_count`),
      });
    } else {
      outputs.push({ kind: partial.merge, name, stored: columns.add(partial.partial, name) });
    }
  }
  const visible = outputs.length;
  const find = (e: Expr): number | undefined => {
    if (e.kind === 'number') {
      const n = numberValue(e);
      return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= visible ? n - 1 : undefined;
    }
    const text = printDialectExpr(e);
    for (let i = 0; i < visible; i++) {
      const c = q.columns[i]!;
      if (c.kind === 'alias' && e.kind === 'field' && e.chain.length === 1 && e.chain[0] === c.alias)
        return i;
      if (printDialectExpr(exprOf(c)) === text) return i;
    }
    return undefined;
  };
  // GROUP BY expressions not among the answer's columns still make groups when they are merged again.
  if (mode === 'reaggregate') {
    for (const g of q.groupBy ?? []) {
      if (find(g) === undefined) {
        outputs.push({
          kind: 'value',
          name: `key_${outputs.length - visible + 1}`,
          stored: columns.add(g, `key_${outputs.length - visible + 1}`),
        });
      }
    }
  }
  const order: ServingOrder[] = [];
  for (const item of q.orderBy ?? []) {
    let output = find(item.expr);
    if (output === undefined) {
      if (q.distinct)
        return refuse(
          `With DISTINCT, ORDER BY ${shownExpr(item.expr)} must be a selected column to be materialized`,
        );
      const name = `order_${order.length + 1}`;
      if (mode === 'rows' || !hasAggregate(item.expr)) {
        outputs.push({ kind: 'value', name, stored: columns.add(item.expr, name) });
      } else {
        const partial = partialOf(item.expr);
        if ('cannot' in partial) return refuse(`ORDER BY: ${partial.cannot}`);
        if (partial.merge === 'avg') {
          outputs.push({
            kind: 'avg',
            name,
            sum: columns.add(partial.sum, `${name}_sum`),
            count: columns.add(partial.count, `${name}_count`),
          });
        } else {
          outputs.push({ kind: partial.merge, name, stored: columns.add(partial.partial, name) });
        }
      }
      output = outputs.length - 1;
    }
    order.push({ output, descending: item.descending, nulls: item.nulls });
  }

  // The variables' columns, a range's at the bucket when rows are merged across it.
  const filters: ServingFilter[] = [];
  const dimExprs: Expr[] = [];
  for (const dim of dims.values()) {
    const variables = dim.predicates.map((p) => p.variable);
    const bucketed =
      mode === 'reaggregate' && dim.predicates[0]!.op !== '=' && isTemporal(dim.expr, variables, declared);
    const expr = bucketed ? BUCKET_FUNCTION[bucket](dim.expr) : dim.expr;
    dimExprs.push(expr);
    const column = columns.add(expr, bucketed ? `${variables[0]}_${bucket}` : variables[0]!);
    for (const p of dim.predicates)
      filters.push({ column, variable: p.variable, op: p.op, bucket: bucketed ? bucket : null });
  }
  const innerColumns = columns.list.map((c) => c.expr);
  const where =
    kept.length === 0 ? null : kept.length === 1 ? kept[0]! : { kind: 'and' as const, operands: kept };
  const inner: SelectQuery = {
    ...q,
    columns: innerColumns,
    where,
    groupBy: aggregating ? [...(q.groupBy ?? []), ...dimExprs] : null,
    orderBy: null,
    limit: null,
    offset: null,
  };
  let source: Query = inner;
  let emptyMarker: number | null = null;
  if (aggregating && q.groupBy === null) {
    // The query over no rows answers one row (count() 0, …); the engine computes it once, marked.
    emptyMarker = columns.add({ kind: 'number', text: '0' }, 'weir_empty');
    const dimSet = new Set(dimExprs);
    const empty: SelectQuery = {
      ...inner,
      columns: [
        ...innerColumns.map((c) =>
          c.kind === 'alias' && dimSet.has(c.expr) ? { ...c, expr: { kind: 'null' as const } } : c,
        ),
        alias({ kind: 'number', text: '1' }, columns.list[emptyMarker]!),
      ],
      where: { kind: 'boolean', value: false },
      groupBy: null,
    };
    source = {
      kind: 'unionAll',
      queries: [
        {
          ...inner,
          columns: [...innerColumns, alias({ kind: 'number', text: '0' }, columns.list[emptyMarker]!)],
        },
        empty,
      ],
    };
  }
  const outer = selectQuery({
    columns: columns.list.map((c) => {
      const innerName = (c.expr as { alias: string }).alias;
      const field: Expr = { kind: 'field', chain: [innerName] };
      return innerName === c.name ? field : { kind: 'alias', expr: field, alias: c.name };
    }),
    from: { kind: 'from', table: { kind: 'tableSubquery', query: source, alias: null }, joins: [] },
  });
  return {
    query: outer,
    serving: {
      kind: 'sql',
      stored: columns.list.map((c) => ({ name: c.name, type: null })),
      filters,
      mode,
      outputs,
      visible,
      keys: mode === 'reaggregate' ? outputs.flatMap((o, i) => (o.kind === 'value' ? [i] : [])) : [],
      distinct: q.distinct,
      order,
      limit,
      offset: offset ?? 0,
      emptyMarker,
    },
  };
}

/** A query without variables is stored as it is, ordered and limited: a run pages through its rows. */
function unchanged(ast: Query, columnNames: readonly string[]): SqlRewrite {
  const outputs: ServingOutput[] = columnNames.map((name, i) => ({ kind: 'value', name, stored: i }));
  return {
    query: ast,
    serving: {
      kind: 'sql',
      stored: columnNames.map((name) => ({ name, type: null })),
      filters: [],
      mode: 'rows',
      outputs,
      visible: outputs.length,
      keys: [],
      distinct: false,
      order: [],
      limit: null,
      offset: 0,
      emptyMarker: null,
    },
  };
}

function alias(expr: Expr, column: Column): ColumnExpr {
  return { kind: 'alias', expr, alias: (column.expr as { alias: string }).alias };
}

/** A non-negative integer literal's value; null for no clause; undefined for anything else. */
function literal(e: Expr | null): number | null | undefined {
  if (e === null) return null;
  if (e.kind !== 'number') return undefined;
  const n = numberValue(e);
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
