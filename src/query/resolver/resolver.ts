/**
 * The resolver: checks every name of a parsed query against what Weir serves, and rewrites the tree into
 * the query ClickHouse runs. A new tree is built; the parsed one is left as it was (its dialect text is the
 * `hogql` of a run). What changes, and where:
 * - each reference to a Weir table becomes a subquery over the store table, confined to the caller's project
 *   and deduplicated (store-table.ts); a CTE reference stays a CTE reference; anything else in FROM is refused
 *   (table functions, other databases, `system.*`, unknown names); SAMPLE reads a share of a table (tables.ts);
 * - `properties.$x`, `properties['x']`, `properties.a.b` and the same on every JSON column become
 *   `JSONExtract(col, 'x', 'Nullable(String)')`: the value as text (strings decoded, numbers and booleans as
 *   written, objects and arrays as JSON), NULL when the key is missing or null — one parse per access;
 * - a property whose definition gives it a type (Numeric, DateTime, Boolean) is read as that type, as HogQL
 *   does: `toFloat`, `toDateTime`, `toBool` of the text, NULL when a value does not convert (properties.ts);
 * - a comparison with what may be NULL is made NULL-safe, as HogQL prints it (null-safety.ts);
 * - `person.properties.x` on events reads `person_properties` (the person as the event saw it), `person.id`
 *   reads `person_id`; PostHog's virtual fields (`pdi`, `poe`, `person.created_at`, `group_N`, `session`) and
 *   the `sessions` table read the other tables through joins added when used (virtual.ts, virtual-fields.ts);
 * - PREWHERE is folded into WHERE (a subquery has no PREWHERE of its own to give; prewhere.ts);
 * - every function must be on the allow-list (functions.ts); `*` stands only for columns or in `count(*)`
 *   (expressions.ts, columns.ts).
 * Placeholders stay placeholders: the printer binds them as query parameters.
 */
import type { Expr, Field, FromClause, Query, SelectQuery, WithItem } from '../dialect/mod.ts';
import { column } from './columns.ts';
import type { Context, OutColumn, Resolved } from './context.ts';
import { QueryResolveError } from './errors.ts';
import { expr, exprs, orderItems, windowSpec } from './expressions.ts';
import { columnRef, qualify } from './fields.ts';
import { NullSafety } from './null-safety.ts';
import { foldPrewhere } from './prewhere.ts';
import { Properties, type PropertyTypeLookup } from './properties.ts';
import { Scope, type Source } from './scope.ts';
import { distinctTableAliases } from './table-aliases.ts';
import { columnMap, from } from './tables.ts';

export type { PropertyTypeLookup } from './properties.ts';
export { MAX_NUMBERS } from './tables.ts';

export interface ResolveOptions {
  /** The database of the store tables. @default 'default' */
  readonly database?: string;
  /** The caller's property types; without them every property reads as text. */
  readonly properties?: PropertyTypeLookup;
}

export interface ResolvedQuery {
  /** The query as ClickHouse runs it (placeholders still unbound). */
  readonly query: Query;
  /** The variables the query uses, in order of first use. */
  readonly variables: readonly string[];
  /** The names of the result's columns, as a person reads them (an alias, a column, or the expression). */
  readonly columns: readonly string[];
}

export function resolveQuery(query: Query, options: ResolveOptions = {}): ResolvedQuery {
  const cx = new Resolution(options.database ?? 'default', options.properties);
  const out = resolve(cx, query, new Scope(null), true);
  return { query: out.query, variables: [...cx.variables], columns: out.columns.map((c) => c.name) };
}

/** The state of one resolution; its methods are the passes that call back into one another (context.ts). */
class Resolution implements Context {
  readonly database: string;
  readonly variables = new Set<string>();
  readonly properties: Properties;
  readonly nulls: NullSafety;
  readonly selects = new WeakMap<Scope, SelectQuery>();
  readonly inlineAliases = new WeakMap<Scope, ReadonlySet<string>>();
  readonly expressionFields = new WeakMap<Expr, string>();
  inWindow = false;
  defining: string | null = null;

  constructor(database: string, types: PropertyTypeLookup | undefined) {
    this.database = database;
    this.properties = new Properties(types);
    this.nulls = new NullSafety(this.properties);
  }

  query(q: Query, parent: Scope, top?: boolean): Resolved {
    return resolve(this, q, parent, top);
  }

  expr(e: Expr, scope: Scope): Expr {
    return expr(this, e, scope);
  }

  columnRef(
    source: Source,
    qualifier: string[],
    name: string,
    rest: string[],
    node: Field,
    scope: Scope,
  ): Expr {
    return columnRef(this, source, qualifier, name, rest, node, scope);
  }
}

/** `top`: the query whose result a caller reads (and its UNION ALL members), not one nested inside it. */
function resolve(cx: Context, q: Query, parent: Scope, top = false): Resolved {
  if (q.kind === 'select') return select(cx, q, parent, top);
  const members = withSharedCtes(q.queries).map((m) => resolve(cx, m, new Scope(parent), top));
  return { query: { ...q, queries: members.map((m) => m.query) }, columns: members[0]!.columns };
}

function select(cx: Context, s: SelectQuery, parent: Scope, top: boolean): Resolved {
  if (s.withTotals) {
    throw new QueryResolveError(
      'WITH TOTALS is not supported: a result has no place for a totals row; use WITH ROLLUP, or UNION ALL a total',
      s.pos,
    );
  }
  const scope = new Scope(parent);
  cx.selects.set(scope, s);
  // A WITH query is there for FROM to read; a WITH expression stands for its expression where its name is
  // used, so its names are those of the FROM (`WITH event AS boo SELECT boo FROM events`).
  const withItems = s.with.map((w) => (w.kind === 'withQuery' ? withItem(cx, w, scope) : w));
  for (const w of s.with) if (w.kind === 'withExpr') scope.values.add(w.name);
  for (const c of s.columns) if (c.kind === 'alias') scope.aliases.add(c.alias);
  for (const j of s.from?.joins ?? [])
    if (j.kind === 'arrayJoin') for (const i of j.items) if (i.kind === 'alias') scope.aliases.add(i.alias);
  for (const w of s.window) scope.windows.add(w.name);

  const fromClause = s.from ? from(cx, s.from, scope) : null;
  withItems.forEach((w, i) => {
    if (w.kind === 'withExpr') withItems[i] = withItem(cx, w, scope);
  });
  const outColumns: OutColumn[] = [];
  const columns = s.columns.flatMap((c) => column(cx, c, scope, outColumns, top));
  const prewhere = s.prewhere ? expr(cx, s.prewhere, scope) : null;
  const where = s.where ? expr(cx, s.where, scope) : null;
  const rewritten: SelectQuery = {
    ...s,
    with: withItems,
    columns,
    from: fromClause,
    prewhere: null,
    where: foldPrewhere(prewhere, where),
    groupBy: s.groupBy && exprs(cx, s.groupBy, scope),
    having: s.having && expr(cx, s.having, scope),
    window: s.window.map((w) => ({ ...w, spec: windowSpec(cx, w.spec, scope) })),
    orderBy: s.orderBy && orderItems(cx, s.orderBy, scope),
    limitBy: s.limitBy && {
      ...s.limitBy,
      limit: expr(cx, s.limitBy.limit, scope),
      offset: s.limitBy.offset && expr(cx, s.limitBy.offset, scope),
      by: exprs(cx, s.limitBy.by, scope),
    },
    limit: s.limit && expr(cx, s.limit, scope),
    offset: s.offset && expr(cx, s.offset, scope),
  };
  const joined =
    scope.lazyJoins.size > 0 && fromClause !== null ? withLazyJoins(rewritten, fromClause, scope) : rewritten;
  return { query: distinctTableAliases(joined, scope), columns: outColumns };
}

/** A SELECT with the joins its virtual fields made added to its FROM. */
function withLazyJoins(rewritten: SelectQuery, fromClause: FromClause, scope: Scope): SelectQuery {
  // The joined tables share column names with the query's own (`person_id`): a name the query left
  // unqualified is qualified with its table, or ClickHouse would find it ambiguous.
  for (const u of scope.unqualified) qualify(u.ref, u.source);
  // A bare `*` would take the joined tables' columns too: it stands for the query's own tables only.
  const columns = rewritten.columns.flatMap((c) =>
    c.kind === 'star' && c.table === null
      ? scope.sources.flatMap((src) => (src.name === null ? [] : [{ ...c, table: [src.name] }]))
      : [c],
  );
  const lazy = [...scope.lazyJoins.values()].map((l) => l.join);
  return { ...rewritten, columns, from: { ...fromClause, joins: [...fromClause.joins, ...lazy] } };
}

function withItem(cx: Context, w: WithItem, scope: Scope): WithItem {
  if (w.kind === 'withQuery') {
    const out = resolve(cx, w.query, new Scope(scope));
    const columns = columnMap(out.columns);
    scope.ctes.set(w.name, { name: w.name, columns, repeats: columns.size < out.columns.length });
    return { ...w, query: out.query };
  }
  const resolved = expr(cx, w.expr, scope);
  scope.values.add(w.name);
  return { ...w, expr: resolved };
}

/**
 * The members of a UNION ALL, each with the WITH of the first, as HogQL reads `WITH a AS (…) SELECT … FROM a
 * UNION ALL SELECT … FROM a`: the WITH belongs to the whole union (ClickHouse gives it to the first SELECT only).
 * A member's own WITH item of the same name stays its own.
 */
function withSharedCtes(queries: readonly Query[]): Query[] {
  let first = queries[0]!;
  while (first.kind !== 'select') first = first.queries[0]!;
  const shared = first.with;
  if (shared.length === 0) return [...queries];
  return queries.map((m, i) => {
    if (i === 0 || m.kind !== 'select') return m;
    const own = new Set(m.with.map((w) => w.name));
    return { ...m, with: [...shared.filter((w) => !own.has(w.name)), ...m.with] };
  });
}
