/**
 * FROM: each table expression becomes what ClickHouse reads and adds what it yields to the scope's sources.
 * A Weir table becomes a subquery over its store table, confined to the caller's project and deduplicated
 * (store-table.ts), sampled as SAMPLE asks; a derived table (`sessions`) the query that makes it; a CTE
 * reference stays a CTE reference; `numbers(…)` is bounded; anything else is refused (other table functions,
 * other databases, `system.*`, unknown names).
 */
import {
  numberValue,
  selectQuery,
  type ArrayJoin,
  type Expr,
  type FromClause,
  type Join,
  type SampleClause,
  type SelectQuery,
  type Span,
  type TableExpr,
  type TableFunction,
  type TableRef,
} from '../dialect/mod.ts';
import type { Context, OutColumn } from './context.ts';
import { QueryResolveError, shown } from './errors.ts';
import { expr } from './expressions.ts';
import { call, ONE, str } from './nodes.ts';
import { DERIVED_TABLES, DERIVED_VIRTUAL_FIELDS, TABLE_NAMES, tableSpec, type TableSpec } from './schema.ts';
import { hasOwn, PLAIN, Scope, type ColumnInfo, type Source } from './scope.ts';
import { storeTableQuery } from './store-table.ts';
import { parsedOnce } from './virtual.ts';

const TABLE_LIST = TABLE_NAMES.join(', ');

/**
 * The most rows `numbers()` may make. It reads nothing of any project, so it is confined by nature; the bound
 * keeps it from being a way to spend the engine's time and memory (a cross join with events, say) beyond what
 * the run limits catch late.
 */
export const MAX_NUMBERS = 1_000_000;

export function from(cx: Context, f: FromClause, scope: Scope): FromClause {
  const table = tableExpr(cx, f.table, scope);
  const joins = f.joins.map((j) => (j.kind === 'arrayJoin' ? arrayJoin(cx, j, scope) : join(cx, j, scope)));
  return { ...f, table, joins };
}

/** A table expression rewritten, and what it yields. */
interface Table {
  readonly rewritten: TableExpr;
  readonly source: Source;
}

/** Rewrites a table expression and adds what it yields to the scope's sources. */
function tableExpr(cx: Context, t: TableExpr, scope: Scope): TableExpr {
  let table: Table;
  switch (t.kind) {
    case 'tableFunction':
      table = tableFunction(cx, t);
      break;
    case 'tableSubquery': {
      const out = cx.query(t.query, new Scope(scope));
      table = {
        rewritten: { ...t, query: out.query },
        source: derivedSource(t.alias, `subquery ${t.alias ?? '(unnamed)'}`, out.columns),
      };
      break;
    }
    case 'table':
      table = namedTable(cx, t, scope);
      break;
  }
  const { rewritten, source } = table;
  if (source.name !== null && scope.source(source.name)) {
    throw new QueryResolveError(
      `two tables of this FROM are called ${shown(source.name)}; give one of them another alias`,
      t.pos,
    );
  }
  scope.sources.push(source);
  return rewritten;
}

function tableFunction(cx: Context, t: TableFunction): Table {
  if (t.name !== 'numbers') {
    throw new QueryResolveError(
      `table functions are not allowed (${shown(t.name)}): a query reads only the tables ${TABLE_LIST} and numbers(…)`,
      t.pos,
    );
  }
  return {
    rewritten: { ...t, args: numbersArgs(cx, t.args, t.pos) },
    source: {
      name: t.alias ?? 'numbers',
      description: 'numbers(…)',
      columns: new Map([['number', PLAIN]]),
      types: new Map([['number', 'UInt64']]),
    },
  };
}

/** A table named in FROM: a CTE, a derived table, or a store table. */
function namedTable(cx: Context, t: TableRef, scope: Scope): Table {
  if (t.database !== null) {
    throw new QueryResolveError(
      `${shown(`${t.database}.${t.name}`)} is not reachable: a query reads only the tables ${TABLE_LIST}`,
      t.pos,
    );
  }
  const name = t.alias ?? t.name;
  const cte = scope.cte(t.name);
  const sample = t.sample && sampleFilter(t.sample, t.name);
  if (cte) {
    if (sample) throw sampleRefused(t.name, t.sample?.pos);
    return {
      rewritten: { ...t, final: false, sample: null },
      source: {
        ...derivedSource(
          name,
          `CTE ${shown(t.name)}`,
          [...cte.columns].map(([n, info]) => ({ name: n, info })),
        ),
        repeats: cte.repeats,
      },
    };
  }
  const derived = DERIVED_TABLES.get(t.name);
  if (derived !== undefined) {
    if (sample) throw sampleRefused(t.name, t.sample?.pos);
    const out = cx.query(parsedOnce(derived), new Scope(null));
    return {
      rewritten: { kind: 'tableSubquery', query: out.query, alias: name, pos: t.pos },
      source: {
        ...derivedSource(name, `table ${t.name}`, out.columns),
        virtual: DERIVED_VIRTUAL_FIELDS.get(t.name),
      },
    };
  }
  const spec = tableSpec(t.name);
  if (!spec) throw unknownTable(t.name, t.pos);
  const stored = storeTableQuery(spec, cx.database);
  return {
    rewritten: {
      kind: 'tableSubquery',
      query: sample ? sample(stored) : stored,
      alias: name,
      pos: t.pos,
    },
    source: tableSource(spec, name),
  };
}

/**
 * `SAMPLE`, as PostHog's events table samples (`SAMPLE BY cityHash64(distinct_id)`): the events of a share
 * of the distinct ids, the same share for the same ratio and offset; the share from the offset to offset +
 * ratio of [0, 1), so an offset of 1 or more leaves nothing (as ClickHouse's sampling key range would). The
 * other store tables sample by their key alike. `SAMPLE n` above 1 asks for about n rows: the share n / (the
 * table's rows). `SAMPLE 1` reads everything, on any table. Null when nothing is left out; otherwise what
 * wraps the table's query.
 */
function sampleFilter(s: SampleClause, table: string): ((q: SelectQuery) => SelectQuery) | null {
  const value = (e: Expr): number => {
    const n = e.kind === 'binary' ? ratioPart(e.left) / ratioPart(e.right) : ratioPart(e);
    if (!Number.isFinite(n) || n < 0)
      throw new QueryResolveError('a SAMPLE ratio is a number, 0 or more', e.pos);
    return n;
  };
  const ratio = value(s.ratio);
  const offset = s.offset ? value(s.offset) : 0;
  if (ratio >= 1 && offset === 0 && (ratio === 1 || s.ratio.kind === 'binary')) return null;
  const key = hasOwn(SAMPLE_KEYS, table) ? SAMPLE_KEYS[table] : undefined;
  if (key === undefined) throw sampleRefused(table, s.pos);
  return (stored) => sampled(stored, key, ratio, offset);
}

/** The rows of a store table's query whose key falls in the share from `offset` to `offset + ratio`. */
function sampled(stored: SelectQuery, key: string, ratio: number, offset: number): SelectQuery {
  const from = (q: SelectQuery): FromClause => ({
    kind: 'from',
    table: { kind: 'tableSubquery', query: q, alias: null },
    joins: [],
  });
  // The point of [0, 1) each distinct id falls on.
  const point: Expr = {
    kind: 'binary',
    op: '/',
    left: call('cityHash64', [{ kind: 'field', chain: [key] }]),
    right: { kind: 'number', text: '18446744073709551616' },
  };
  const rows: Expr = {
    kind: 'subquery',
    query: selectQuery({ columns: [call('count', [])], from: from(stored) }),
  };
  const share: Expr = ratio > 1 ? { kind: 'binary', op: '/', left: num(ratio), right: rows } : num(ratio);
  const end: Expr = offset === 0 ? share : { kind: 'binary', op: '+', left: num(offset), right: share };
  const below: Expr = { kind: 'binary', op: '<', left: point, right: end };
  const where: Expr =
    offset === 0
      ? below
      : { kind: 'and', operands: [{ kind: 'binary', op: '>=', left: point, right: num(offset) }, below] };
  return selectQuery({ columns: [{ kind: 'star', table: null }], from: from(stored), where });
}

function join(cx: Context, j: Join, scope: Scope): Join {
  const table = tableExpr(cx, j.table, scope);
  const joined = scope.sources.at(-1)!;
  for (const name of j.using ?? []) {
    const earlier = scope.sources.slice(0, -1).some((s) => s.columns.has(name));
    if (!joined.columns.has(name) || !earlier) {
      throw new QueryResolveError(
        `USING ${shown(name)}: the column must be in the joined table and in a table before it`,
        j.pos,
      );
    }
  }
  // A join's keys stay plain equalities: ClickHouse finds the keys of a join only in `a = b` terms, and
  // HogQL does not rewrite comparisons in join constraints either.
  return cx.nulls.joinOn(() => ({ ...j, table, on: j.on && expr(cx, j.on, scope) }));
}

function arrayJoin(cx: Context, j: ArrayJoin, scope: Scope): ArrayJoin {
  return {
    ...j,
    items: j.items.map((i) =>
      i.kind === 'alias' ? { ...i, expr: expr(cx, i.expr, scope) } : expr(cx, i, scope),
    ),
  };
}

/**
 * `numbers(count)` or `numbers(offset, count)`: whole numbers written in the query, or constant expressions of
 * them (`numbers(dateDiff('day', toDate('2024-01-01'), today()))`), never reading a table or a variable. A
 * literal count is checked here; a computed one is checked by the engine as it folds it (`throwIf` runs only
 * when the count is over the bound).
 */
function numbersArgs(cx: Context, args: readonly Expr[], pos: Span | undefined): Expr[] {
  const usage =
    'numbers() takes a count, or an offset and a count: whole numbers, or expressions of constants, such as numbers(10), numbers(5, 10)';
  if ((args.length !== 1 && args.length !== 2) || !args.every(isConstant))
    throw new QueryResolveError(usage, pos);
  const resolved = args.map((a) => expr(cx, a, new Scope(null)));
  const count = resolved.at(-1)!;
  if (count.kind === 'number') {
    const n = numberValue(count);
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new QueryResolveError(usage, pos);
    if (n > MAX_NUMBERS)
      throw new QueryResolveError(`numbers() makes at most ${MAX_NUMBERS} rows; this asks for ${n}`, pos);
    return resolved;
  }
  const bound: Expr = { kind: 'number', text: String(MAX_NUMBERS) };
  const guarded = call('if', [
    { kind: 'binary', op: '<=', left: count, right: bound },
    count,
    call('throwIf', [ONE, str(`numbers() makes at most ${MAX_NUMBERS} rows`)]),
  ]);
  return [...resolved.slice(0, -1), guarded];
}

/** An expression of constants alone: no column, variable, subquery or `*` anywhere in it. */
function isConstant(e: unknown): boolean {
  if (Array.isArray(e)) return e.every(isConstant);
  if (typeof e !== 'object' || e === null) return true;
  const kind = (e as { kind?: unknown }).kind;
  if (kind === 'field' || kind === 'placeholder' || kind === 'subquery' || kind === 'star') return false;
  return Object.entries(e).every(([k, v]) => k === 'pos' || isConstant(v));
}

/** A table's columns and types as a Source holds them: made once per table, and only read after. */
const tableColumns = new WeakMap<TableSpec, Pick<Source, 'columns' | 'types'>>();

function tableSource(spec: TableSpec, name: string): Source {
  let made = tableColumns.get(spec);
  if (made === undefined) {
    made = {
      columns: new Map(
        spec.columns.map((c) => [c.name, c.json === true ? { json: true, properties: c.properties } : PLAIN]),
      ),
      types: new Map(spec.columns.map((c) => [c.name, c.type])),
    };
    tableColumns.set(spec, made);
  }
  return {
    name,
    description: `table ${spec.name}`,
    ...made,
    virtual: spec.virtual,
    joinedColumns: spec.joinedColumns,
  };
}

export function columnMap(columns: readonly OutColumn[]): Map<string, ColumnInfo> {
  const map = new Map<string, ColumnInfo>();
  for (const c of columns) if (!map.has(c.name)) map.set(c.name, c.info);
  return map;
}

function derivedSource(name: string | null, description: string, columns: readonly OutColumn[]): Source {
  const map = columnMap(columns);
  return { name, description, columns: map, repeats: map.size < columns.length, types: new Map() };
}

function ratioPart(e: Expr): number {
  if (e.kind !== 'number')
    throw new QueryResolveError('a SAMPLE ratio is a number or a fraction of two', e.pos);
  return Number(numberValue(e));
}

function num(n: number): Expr {
  return { kind: 'number', text: String(n) };
}

/** What each store table samples by: events as PostHog's do, the others by their key. */
const SAMPLE_KEYS: Readonly<Record<string, string>> = {
  events: 'distinct_id',
  persons: 'id',
  person_distinct_ids: 'distinct_id',
  groups: 'key',
  raw_groups: 'key',
};

function sampleRefused(table: string, pos: Span | undefined): QueryResolveError {
  return new QueryResolveError(
    `${shown(table)} cannot be sampled: SAMPLE reads a share of a store table (${Object.keys(SAMPLE_KEYS).join(', ')}); SAMPLE 1 reads all of any table`,
    pos,
  );
}

function unknownTable(name: string, pos: Span | undefined): QueryResolveError {
  const near = TABLE_NAMES.find((t) => t.toLowerCase() === name.toLowerCase());
  const hint = near ? `; did you mean ${shown(near)}?` : `; the tables are ${TABLE_LIST}`;
  return new QueryResolveError(`unknown table ${shown(name)}${hint}`, pos);
}
