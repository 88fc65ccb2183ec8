/**
 * The resolver: checks every name of a parsed query against what Weir serves, and rewrites the tree into
 * the query ClickHouse runs. A new tree is built; the parsed one is left as it was (its dialect text is the
 * `hogql` of a run). What changes:
 * - each reference to a Weir table becomes a subquery over the store table, confined to the caller's project
 *   and deduplicated (store-table.ts); a CTE reference stays a CTE reference; anything else in FROM is refused
 *   (table functions, other databases, `system.*`, unknown names);
 * - `properties.$x`, `properties['x']`, `properties.a.b` and the same on every JSON column become
 *   `JSONExtract(col, 'x', 'Nullable(String)')`: the value as text (strings decoded, numbers and booleans as
 *   written, objects and arrays as JSON), NULL when the key is missing or null — one parse per access;
 * - a property whose definition gives it a type (Numeric, DateTime, Boolean) is read as that type, as HogQL
 *   does: `toFloat`, `toDateTime`, `toBool` of the text, NULL when a value does not convert;
 * - `person.properties.x` on events reads `person_properties` (the person as the event saw it), `person.id`
 *   reads `person_id`; PostHog's virtual fields (`pdi`, `poe`, `person.created_at`, `group_N`, `session`) and
 *   the `sessions` table read the other tables through joins added when used (virtual.ts);
 * - PREWHERE is folded into WHERE (a subquery has no PREWHERE of its own to give);
 * - every function must be on the allow-list (functions.ts); `*` stands only for columns or in `count(*)`.
 * Placeholders stay placeholders: the printer binds them as query parameters.
 */
import {
  numberValue,
  printDialectExpr,
  selectQuery,
  type ArrayJoin,
  type ColumnExpr,
  type Expr,
  type Field,
  type FromClause,
  type Join,
  type OrderItem,
  type Query,
  type SampleClause,
  type SelectQuery,
  type Span,
  type TableExpr,
  type WindowSpec,
  type WithItem,
} from '../dialect/mod.ts';
import { QueryResolveError, listed, shown } from './errors.ts';
import { baseName, functionKind, REFUSED_HINTS } from './functions.ts';
import { hogqlCall, hogqlOverload } from './hogql-functions.ts';
import { hogqlxTuple } from './hogqlx.ts';
import { inlineAliases } from './inline-aliases.ts';
import { DERIVED_TABLES, TABLE_NAMES, tableSpec, type PropertyOwner, type TableSpec } from './schema.ts';
import { Scope, type ColumnInfo, type LazyJoin, type Source } from './scope.ts';
import { storeTableQuery } from './store-table.ts';
import {
  expressionOn,
  parsedOnce,
  type ExpressionField,
  type JoinedColumn,
  type LazyJoinSpec,
  type VirtualField,
} from './virtual.ts';

/** A project's property types (PropertyTypes of src/core/property-types.ts fits). */
export interface PropertyTypeLookup {
  event(name: string): string | undefined;
  person(name: string): string | undefined;
}

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
  const resolver = new Resolver(options.database ?? 'default', options.properties);
  const out = resolver.query(query, new Scope(null), true);
  return { query: out.query, variables: [...resolver.variables], columns: out.columns.map((c) => c.name) };
}

interface OutColumn {
  readonly name: string;
  readonly info: ColumnInfo;
}

interface Resolved {
  readonly query: Query;
  readonly columns: readonly OutColumn[];
}

/** A JSON column, or keys read from one: more keys can follow (`properties['a']['b']`). */
interface JsonRef {
  readonly column: Field;
  readonly keys: readonly Expr[];
  /** Whose property definitions type its keys. */
  readonly owner?: PropertyOwner;
}

const PLAIN: ColumnInfo = { json: false };
const NULLABLE: ColumnInfo = { json: false, nullable: true };
/** Aggregates whose first argument is a time: a DateTime, or an unsigned number of seconds. */
const TIMED_AGGREGATES = new Set([
  'windowfunnel',
  'sequencematch',
  'sequencecount',
  'sequencenextnode',
  'sequencematchevents',
]);
/** Time window functions take a DateTime, not a DateTime64 (HogQL's FIRST_ARG_DATETIME_FUNCTIONS). */
const TIME_WINDOWS = new Set(['tumble', 'tumblestart', 'tumbleend', 'hop', 'hopstart', 'hopend']);
const TABLE_LIST = TABLE_NAMES.join(', ');
/**
 * Functions that parse their argument as text (HogQL's `_STRING_INPUT_CONVERSIONS`, and ClickHouse's own
 * names of the same): a typed property given to one is left as text, or the parse would refuse a number.
 */
const PARSES_TEXT =
  /^(?:to(?:u?int\d*|float(?:32|64)?|decimal\d*)or(?:zero|null|default)|parsedatetime\w*)$/i;

class Resolver {
  readonly variables = new Set<string>();
  readonly #database: string;
  /** Rewritten nodes that are a JSON column or a read from one. */
  readonly #json = new WeakMap<Expr, JsonRef>();
  /** The SELECT of each scope, and the names it gives inside expressions (`(a + 1 AS b) * 2`), found when asked. */
  readonly #selects = new WeakMap<Scope, SelectQuery>();
  readonly #inlineAliases = new WeakMap<Scope, ReadonlySet<string>>();
  readonly #properties: PropertyTypeLookup | undefined;
  /** Set while resolving the arguments of a function that parses text (PARSES_TEXT). */
  #textArgs = false;
  /** Set while resolving a JOIN's ON: its comparisons are left as written (nullSafe). */
  #inJoinOn = false;
  /** Rewritten nodes that are an expression field (`team_id`, `$virt_…`), with the field's name. */
  readonly #expressionFields = new WeakMap<Expr, string>();
  /** Rewritten references to a column of a subquery or CTE that may be NULL. */
  readonly #nullable = new WeakSet<Expr>();
  /** Set while resolving a window's PARTITION BY, ORDER BY and frame. */
  #inWindow = false;
  /** The column alias whose expression is being resolved, in which its own name is the table's column. */
  #defining: string | null = null;

  constructor(database: string, properties: PropertyTypeLookup | undefined) {
    this.#database = database;
    this.#properties = properties;
  }

  /** `top`: the query whose result a caller reads (and its UNION ALL members), not one nested inside it. */
  query(q: Query, parent: Scope, top = false): Resolved {
    if (q.kind === 'select') return this.select(q, parent, top);
    const members = withSharedCtes(q.queries).map((m) => this.query(m, new Scope(parent), top));
    return { query: { ...q, queries: members.map((m) => m.query) }, columns: members[0]!.columns };
  }

  private select(s: SelectQuery, parent: Scope, top: boolean): Resolved {
    if (s.withTotals) {
      throw new QueryResolveError(
        'WITH TOTALS is not supported: a result has no place for a totals row; use WITH ROLLUP, or UNION ALL a total',
        s.pos,
      );
    }
    const scope = new Scope(parent);
    this.#selects.set(scope, s);
    // A WITH query is there for FROM to read; a WITH expression stands for its expression where its name is
    // used, so its names are those of the FROM (`WITH event AS boo SELECT boo FROM events`).
    const withItems = s.with.map((w) => (w.kind === 'withQuery' ? this.withItem(w, scope) : w));
    for (const w of s.with) if (w.kind === 'withExpr') scope.values.add(w.name);
    for (const c of s.columns) if (c.kind === 'alias') scope.aliases.add(c.alias);
    for (const j of s.from?.joins ?? [])
      if (j.kind === 'arrayJoin') for (const i of j.items) if (i.kind === 'alias') scope.aliases.add(i.alias);
    for (const w of s.window) scope.windows.add(w.name);

    const from = s.from ? this.from(s.from, scope) : null;
    withItems.forEach((w, i) => {
      if (w.kind === 'withExpr') withItems[i] = this.withItem(w, scope);
    });
    const outColumns: OutColumn[] = [];
    let columns = s.columns.map((c) => this.column(c, scope, outColumns, top));
    const prewhere = s.prewhere ? this.expr(s.prewhere, scope) : null;
    const where = s.where ? this.expr(s.where, scope) : null;
    const rewritten: SelectQuery = {
      ...s,
      with: withItems,
      columns,
      from,
      prewhere: null,
      where: prewhere && where ? { kind: 'and', operands: [prewhere, where] } : (prewhere ?? where),
      groupBy: s.groupBy && this.exprs(s.groupBy, scope),
      having: s.having && this.expr(s.having, scope),
      window: s.window.map((w) => ({ ...w, spec: this.windowSpec(w.spec, scope) })),
      orderBy: s.orderBy && this.orderItems(s.orderBy, scope),
      limitBy: s.limitBy && {
        ...s.limitBy,
        limit: this.expr(s.limitBy.limit, scope),
        offset: s.limitBy.offset && this.expr(s.limitBy.offset, scope),
        by: this.exprs(s.limitBy.by, scope),
      },
      limit: s.limit && this.expr(s.limit, scope),
      offset: s.offset && this.expr(s.offset, scope),
    };
    if (scope.lazyJoins.size > 0 && from !== null) {
      // The joined tables share column names with the query's own (`person_id`): a name the query left
      // unqualified is qualified with its table, or ClickHouse would find it ambiguous.
      for (const u of scope.unqualified) qualify(u.ref, u.source);
      // A bare `*` would take the joined tables' columns too: it stands for the query's own tables only.
      columns = columns.flatMap((c) =>
        c.kind === 'star' && c.table === null
          ? scope.sources.flatMap((src) => (src.name === null ? [] : [{ ...c, table: [src.name] }]))
          : [c],
      );
      const lazy = [...scope.lazyJoins.values()].map((l) => l.join);
      return {
        query: { ...rewritten, columns, from: { ...from, joins: [...from.joins, ...lazy] } },
        columns: outColumns,
      };
    }
    return { query: rewritten, columns: outColumns };
  }

  private withItem(w: WithItem, scope: Scope): WithItem {
    if (w.kind === 'withQuery') {
      const out = this.query(w.query, new Scope(scope));
      scope.ctes.set(w.name, { name: w.name, columns: columnMap(out.columns) });
      return { ...w, query: out.query };
    }
    const expr = this.expr(w.expr, scope);
    scope.values.add(w.name);
    return { ...w, expr };
  }

  // -------------------------------------------------------------------------------------------- FROM

  private from(f: FromClause, scope: Scope): FromClause {
    const table = this.tableExpr(f.table, scope);
    const joins = f.joins.map((j) =>
      j.kind === 'arrayJoin' ? this.arrayJoin(j, scope) : this.join(j, scope),
    );
    return { ...f, table, joins };
  }

  /** Rewrites a table expression and adds what it yields to the scope's sources. */
  private tableExpr(t: TableExpr, scope: Scope): TableExpr {
    let rewritten: TableExpr;
    let source: Source;
    switch (t.kind) {
      case 'tableFunction': {
        if (t.name !== 'numbers') {
          throw new QueryResolveError(
            `table functions are not allowed (${shown(t.name)}): a query reads only the tables ${TABLE_LIST} and numbers(…)`,
            t.pos,
          );
        }
        rewritten = { ...t, args: this.numbersArgs(t.args, t.pos) };
        source = {
          name: t.alias ?? 'numbers',
          description: 'numbers(…)',
          columns: new Map([['number', PLAIN]]),
          types: new Map([['number', 'UInt64']]),
        };
        break;
      }
      case 'tableSubquery': {
        const out = this.query(t.query, new Scope(scope));
        rewritten = { ...t, query: out.query };
        source = derivedSource(t.alias, `subquery ${t.alias ?? '(unnamed)'}`, out.columns);
        break;
      }
      case 'table': {
        if (t.database !== null) {
          throw new QueryResolveError(
            `${shown(`${t.database}.${t.name}`)} is not reachable: a query reads only the tables ${TABLE_LIST}`,
            t.pos,
          );
        }
        const name = t.alias ?? t.name;
        const cte = scope.cte(t.name);
        const sample = t.sample && this.sampleFilter(t.sample, t.name);
        if (cte) {
          if (sample) throw sampleRefused(t.name, t.sample?.pos);
          rewritten = { ...t, final: false, sample: null };
          source = derivedSource(
            name,
            `CTE ${shown(t.name)}`,
            [...cte.columns].map(([n, info]) => ({ name: n, info })),
          );
          break;
        }
        const derived = DERIVED_TABLES.get(t.name);
        if (derived !== undefined) {
          if (sample) throw sampleRefused(t.name, t.sample?.pos);
          const out = this.query(parsedOnce(derived), new Scope(null));
          rewritten = { kind: 'tableSubquery', query: out.query, alias: name, pos: t.pos };
          source = { ...derivedSource(name, `table ${t.name}`, out.columns) };
          break;
        }
        const spec = tableSpec(t.name);
        if (!spec) throw unknownTable(t.name, t.pos);
        const stored = storeTableQuery(spec, this.#database);
        rewritten = {
          kind: 'tableSubquery',
          query: sample ? sample(stored) : stored,
          alias: name,
          pos: t.pos,
        };
        source = tableSource(spec, name);
        break;
      }
    }
    if (source.name !== null && scope.source(source.name)) {
      throw new QueryResolveError(
        `two tables of this FROM are called ${shown(source.name)}; give one of them another alias`,
        t.pos,
      );
    }
    scope.sources.push(source);
    return rewritten;
  }

  /**
   * `SAMPLE`, as PostHog's events table samples (`SAMPLE BY cityHash64(distinct_id)`): the events of a share
   * of the distinct ids, the same share for the same ratio and offset; the share from the offset to offset +
   * ratio of [0, 1), so an offset of 1 or more leaves nothing (as ClickHouse's sampling key range would). The
   * other store tables sample by their key alike. `SAMPLE n` above 1 asks for about n rows: the share n / (the
   * table's rows). `SAMPLE 1` reads everything, on any table. Null when nothing is left out; otherwise what
   * wraps the table's query.
   */
  private sampleFilter(s: SampleClause, table: string): ((q: SelectQuery) => SelectQuery) | null {
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
    return (stored) => {
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
    };
  }

  private join(j: Join, scope: Scope): Join {
    const table = this.tableExpr(j.table, scope);
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
    const inJoinOn = this.#inJoinOn;
    this.#inJoinOn = true;
    try {
      return { ...j, table, on: j.on && this.expr(j.on, scope) };
    } finally {
      this.#inJoinOn = inJoinOn;
    }
  }

  private arrayJoin(j: ArrayJoin, scope: Scope): ArrayJoin {
    return {
      ...j,
      items: j.items.map((i) =>
        i.kind === 'alias' ? { ...i, expr: this.expr(i.expr, scope) } : this.expr(i, scope),
      ),
    };
  }

  // ---------------------------------------------------------------------------------------- columns

  private column(c: ColumnExpr, scope: Scope, out: OutColumn[], top: boolean): ColumnExpr {
    if (c.kind === 'alias') {
      const defining = this.#defining;
      this.#defining = c.alias;
      try {
        const expr = this.expr(c.expr, scope);
        out.push({ name: c.alias, info: this.infoOf(expr) });
        return { ...c, expr };
      } finally {
        this.#defining = defining;
      }
    }
    if (c.kind === 'star') {
      const sources = c.table === null ? scope.sources : [this.starSource(c.table, scope, c.pos)];
      if (sources.length === 0) throw new QueryResolveError("'*' needs a FROM clause", c.pos);
      for (const s of sources) for (const [name, info] of s.columns) out.push({ name, info });
      return c;
    }
    const expr = this.expr(c, scope);
    const field = this.#expressionFields.get(expr);
    if (field !== undefined && !out.some((o) => o.name === field) && !scope.aliases.has(field)) {
      // An expression field is a column of its own name, as in PostHog, and not of the expression's text.
      out.push({ name: field, info: this.infoOf(expr) });
      return { kind: 'alias', expr, alias: field, pos: c.pos };
    }
    const ref = this.#json.get(expr);
    const key = ref?.keys.at(-1);
    if (!top && c.kind === 'field' && key?.kind === 'string' && this.freeName(key.value, scope, out)) {
      // As HogQL names it: a property read in a subquery or CTE is a column named by its key, so the query
      // around reads `button_text` from `SELECT properties.button_text …`.
      out.push({ name: key.value, info: this.infoOf(expr) });
      return { kind: 'alias', expr, alias: key.value, pos: c.pos };
    }
    out.push({ name: columnName(c, expr), info: this.infoOf(expr) });
    return expr;
  }

  /**
   * Whether a SELECT may call a column by this name without changing what another name of it means:
   * ClickHouse reads an alias before a column, so it must be no column, alias or value seen there.
   */
  private freeName(name: string, scope: Scope, out: readonly OutColumn[]): boolean {
    if (out.some((o) => o.name === name) || scope.isValue(name) || scope.cte(name)) return false;
    return !scope.sources.some(
      (s) =>
        s.name === name || s.columns.has(name) || hasOwn(s.virtual, name) || hasOwn(s.joinedColumns, name),
    );
  }

  private starSource(table: readonly string[], scope: Scope, pos: Span | undefined): Source {
    const source = table.length === 1 ? scope.source(table[0]!) : undefined;
    if (!source) {
      throw new QueryResolveError(`${shown(table.join('.'))}.* names no table of this FROM clause`, pos);
    }
    return source;
  }

  private infoOf(expr: Expr): ColumnInfo {
    const ref = this.#json.get(expr);
    if (ref !== undefined && ref.keys.length === 0) return { json: true, properties: ref.owner };
    return this.mayBeNull(expr) ? NULLABLE : PLAIN;
  }

  // ------------------------------------------------------------------------------------ expressions

  private exprs(list: readonly Expr[], scope: Scope): Expr[] {
    return list.map((e) => this.expr(e, scope));
  }

  private orderItems(items: readonly OrderItem[], scope: Scope): OrderItem[] {
    return items.map((o) => ({ ...o, expr: this.expr(o.expr, scope) }));
  }

  private windowSpec(w: WindowSpec, scope: Scope): WindowSpec {
    const inWindow = this.#inWindow;
    this.#inWindow = true;
    try {
      return this.windowSpecParts(w, scope);
    } finally {
      this.#inWindow = inWindow;
    }
  }

  private windowSpecParts(w: WindowSpec, scope: Scope): WindowSpec {
    return {
      ...w,
      partitionBy: w.partitionBy && this.exprs(w.partitionBy, scope),
      orderBy: w.orderBy && this.orderItems(w.orderBy, scope),
      frame: w.frame && {
        ...w.frame,
        start: { ...w.frame.start, offset: w.frame.start.offset && this.expr(w.frame.start.offset, scope) },
        end: w.frame.end && {
          ...w.frame.end,
          offset: w.frame.end.offset && this.expr(w.frame.end.offset, scope),
        },
      },
    };
  }

  expr(e: Expr, scope: Scope): Expr {
    switch (e.kind) {
      case 'number':
      case 'string':
      case 'boolean':
      case 'null':
        return e;
      case 'placeholder':
        this.variables.add(e.name);
        return e;
      case 'field':
        return this.field(e, scope);
      case 'star':
        throw new QueryResolveError(
          "'*' stands only for all columns (SELECT *, SELECT t.*) or in count(*)",
          e.pos,
        );
      case 'call':
        return this.call(e, scope);
      case 'lambda': {
        scope.lambdas.push(new Set(e.params));
        try {
          return { ...e, body: this.expr(e.body, scope) };
        } finally {
          scope.lambdas.pop();
        }
      }
      case 'array':
      case 'tuple':
        return { ...e, items: this.exprs(e.items, scope) };
      case 'index':
        return this.index(e.object, e.index, e, scope);
      case 'tupleAccess': {
        const object = this.expr(e.object, scope);
        const ref = this.#json.get(object);
        if (ref === undefined) return { ...e, object };
        // A position is an element of a JSON array, 1-based as ClickHouse counts: `properties.arr.1` (HogQL's chain).
        const key: Expr =
          typeof e.element === 'number' ? { kind: 'number', text: String(e.element) } : str(e.element);
        return this.extract({ column: ref.column, keys: [...ref.keys, key] }, e.pos);
      }
      case 'binary':
        return this.nullSafe(
          this.numberAsText({
            ...e,
            left: this.expr(e.left, scope),
            right: this.inRight(e.op, e.right, scope),
          }),
        );
      case 'and':
      case 'or':
        return { ...e, operands: this.exprs(e.operands, scope) };
      case 'concat':
        return { ...e, operands: this.exprs(e.operands, scope).map(textOrEmpty) };
      case 'not':
      case 'negate':
      case 'isNull':
        return { ...e, operand: this.expr(e.operand, scope) };
      case 'between': {
        const between: Expr = {
          ...e,
          expr: this.expr(e.expr, scope),
          low: this.expr(e.low, scope),
          high: this.expr(e.high, scope),
        };
        // As HogQL: a comparison with a missing value is false, not NULL.
        const nullable =
          !this.#inJoinOn && [between.expr, between.low, between.high].some((x) => this.mayBeNull(x));
        return nullable ? call('ifNull', [between, ZERO]) : between;
      }
      case 'ternary':
        return {
          ...e,
          condition: this.expr(e.condition, scope),
          whenTrue: this.expr(e.whenTrue, scope),
          whenFalse: this.expr(e.whenFalse, scope),
        };
      case 'case':
        return {
          ...e,
          subject: e.subject && this.expr(e.subject, scope),
          branches: e.branches.map((b) => ({
            ...b,
            when: this.expr(b.when, scope),
            result: this.expr(b.result, scope),
          })),
          otherwise: e.otherwise && this.expr(e.otherwise, scope),
        };
      case 'interval':
        return { ...e, value: this.expr(e.value, scope) };
      case 'cast':
        return { ...e, expr: this.expr(e.expr, scope) };
      case 'subquery':
        return { ...e, query: this.query(e.query, new Scope(scope)).query };
      case 'alias':
        return { ...e, expr: this.expr(e.expr, scope) };
      case 'tag':
      case 'dict':
        return this.expr(hogqlxTuple(e), scope);
    }
  }

  /**
   * A comparison as HogQL means it when a side may be NULL (a property, which is NULL when missing, or a NULL
   * written in the query): NULL is a value like any other, so `properties.x != 'a'` holds for an event without
   * `x`, `properties.x = NULL` is `isNull(properties.x)`, and `<`, `LIKE`, … on a missing value are false rather
   * than NULL (HogQL's printer; PostHog's `is_not` filters count missing values the same way). Columns that are
   * never NULL keep the plain comparison, which the engine's indexes read.
   */
  private nullSafe(b: Expr & { kind: 'binary' }): Expr {
    const equality =
      b.op === '=' || b.op === 'like' || b.op === 'ilike' || b.op === 'regex' || b.op === 'iRegex';
    const inequality =
      b.op === '!=' ||
      b.op === 'notLike' ||
      b.op === 'notILike' ||
      b.op === 'notRegex' ||
      b.op === 'notIRegex';
    const ordered = b.op === '<' || b.op === '<=' || b.op === '>' || b.op === '>=';
    const value = regexCall(b);
    if (!(equality || inequality || ordered) || this.#inJoinOn) return value;
    if (!this.mayBeNull(b.left) && !this.mayBeNull(b.right)) return value;
    const [left, right] = [b.left, b.right];
    if (ordered) return call('ifNull', [value, ZERO]);
    if (left.kind === 'null' || right.kind === 'null') {
      const other = left.kind === 'null' ? right : left;
      return call(equality ? 'isNull' : 'isNotNull', [other]);
    }
    const literal = (x: Expr): boolean => x.kind === 'string' || x.kind === 'number' || x.kind === 'boolean';
    if (literal(left) || literal(right)) return call('ifNull', [value, equality ? ZERO : ONE]);
    const both = equality
      ? { kind: 'and' as const, operands: [call('isNull', [left]), call('isNull', [right])] }
      : { kind: 'or' as const, operands: [call('isNotNull', [left]), call('isNotNull', [right])] };
    return call('ifNull', [value, both]);
  }

  /**
   * A property read as text compared with a number literal (`properties.code = 10`) compares with the number's
   * text, as docs/hogql.md says: the engine finds no common type for a String and a number and refuses the
   * query, where HogQL users expect the comparison to hold for `"10"` (and `10`, whose text is the same).
   */
  private numberAsText(b: Expr & { kind: 'binary' }): Expr & { kind: 'binary' } {
    if (!COMPARISONS.has(b.op)) return b;
    const text = (x: Expr): boolean => x.kind === 'call' && x.name === 'JSONExtract' && this.mayBeNull(x);
    if (text(b.left) && numberLiteral(b.right)) return { ...b, right: asText(b.right) };
    if (text(b.right) && numberLiteral(b.left)) return { ...b, left: asText(b.left) };
    return b;
  }

  /** Whether an expression may be NULL as far as the resolver knows: a NULL literal, or a property read. */
  private mayBeNull(e: Expr): boolean {
    if (e.kind === 'null' || this.#nullable.has(e)) return true;
    const ref = this.#json.get(e);
    return ref !== undefined && ref.keys.length > 0;
  }

  /**
   * `numbers(count)` or `numbers(offset, count)`: whole numbers written in the query, or constant expressions of
   * them (`numbers(dateDiff('day', toDate('2024-01-01'), today()))`), never reading a table or a variable. A
   * literal count is checked here; a computed one is checked by the engine as it folds it (`throwIf` runs only
   * when the count is over the bound).
   */
  private numbersArgs(args: readonly Expr[], pos: Span | undefined): Expr[] {
    const usage =
      'numbers() takes a count, or an offset and a count: whole numbers, or expressions of constants, such as numbers(10), numbers(5, 10)';
    if ((args.length !== 1 && args.length !== 2) || !args.every(isConstant))
      throw new QueryResolveError(usage, pos);
    const resolved = args.map((a) => this.expr(a, new Scope(null)));
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

  /** The right side of IN: a bare name there would be read by ClickHouse as a table, so say what to write. */
  private inRight(op: string, right: Expr, scope: Scope): Expr {
    if ((op === 'in' || op === 'notIn') && right.kind === 'field' && right.chain.length === 1) {
      const name = right.chain[0]!;
      if (scope.cte(name) || tableSpec(name)) {
        throw new QueryResolveError(
          `IN takes a list or a subquery: write IN (SELECT … FROM ${name})`,
          right.pos,
        );
      }
    }
    return this.expr(right, scope);
  }

  private index(objectNode: Expr, indexNode: Expr, e: Expr, scope: Scope): Expr {
    const object = this.expr(objectNode, scope);
    const index = this.expr(indexNode, scope);
    const ref = this.#json.get(object);
    if (ref !== undefined) return this.extract({ column: ref.column, keys: [...ref.keys, index] }, e.pos);
    return { kind: 'index', object, index, pos: e.pos };
  }

  private call(e: Expr & { kind: 'call' }, scope: Scope): Expr {
    // HogQL's own names become the calls HogQL means, which are then checked like any call.
    const meant = hogqlCall(e);
    if (meant !== e) return this.expr(meant, scope);
    const kind = functionKind(e.name);
    if (kind === undefined) {
      const hint = REFUSED_HINTS[e.name.toLowerCase()];
      throw new QueryResolveError(
        hint
          ? `function ${shown(e.name)} is not allowed: ${hint}`
          : `unknown function ${shown(e.name)} (or one a query may not call)`,
        e.pos,
      );
    }
    if (e.over !== null && kind === 'scalar') {
      throw new QueryResolveError(
        `${shown(e.name)} is not an aggregate or window function: it takes no OVER`,
        e.pos,
      );
    }
    if (e.over?.kind === 'windowRef' && !scope.windows.has(e.over.name)) {
      throw new QueryResolveError(
        `no window ${shown(e.over.name)} is defined in this query's WINDOW clause`,
        e.over.pos,
      );
    }
    const isCountStar =
      e.name.toLowerCase() === 'count' &&
      e.args.length === 1 &&
      e.args[0]!.kind === 'star' &&
      e.args[0].table === null;
    const textArgs = this.#textArgs;
    this.#textArgs = PARSES_TEXT.test(e.name);
    let args: Expr[];
    try {
      args = isCountStar ? e.args : this.exprs(e.args, scope);
    } finally {
      this.#textArgs = textArgs;
    }
    if (e.name.toLowerCase() === 'concat') args = args.map(textOrEmpty);
    if (
      (TIMED_AGGREGATES.has(baseName(e.name)) || TIME_WINDOWS.has(e.name.toLowerCase())) &&
      args.length > 0
    ) {
      // These take a DateTime (or an unsigned number of seconds), not the DateTime64 `timestamp` is.
      args = [call('toDateTime', [args[0]!]), ...args.slice(1)];
    }
    return {
      ...e,
      name: hogqlOverload(e.name, args),
      params: e.params && this.exprs(e.params, scope),
      args,
      over: e.over?.kind === 'windowSpec' ? this.windowSpec(e.over, scope) : e.over,
    };
  }

  private field(node: Field, scope: Scope): Expr {
    const [head, ...rest] = node.chain as [string, ...string[]];
    if (scope.isLambdaParam(head)) return node;
    if (rest.length > 0) {
      const source = scope.source(head);
      if (source) return this.columnRef(source, [head], rest[0]!, rest.slice(1), node, scope);
    }
    const owner = scope.sources.find(
      (s) => s.columns.has(head) || hasOwn(s.virtual, head) || hasOwn(s.joinedColumns, head),
    );
    if (owner) {
      const ref = this.columnRef(owner, [], head, rest, node, scope);
      // A column alias of this SELECT is meant where its name stands alone (outside its own definition), as
      // in HogQL and ClickHouse: it must not become a column of the table once joins qualify names.
      const alias = rest.length === 0 && scope.aliases.has(head) && this.#defining !== head;
      if (alias && this.#inWindow && owner.name !== null) {
        // A window orders and partitions by columns, as in HogQL; ClickHouse would read the alias there
        // (min(timestamp) OVER (ORDER BY timestamp) AS timestamp), so the column is named with its table.
        qualify(ref, owner.name);
        return ref;
      }
      if (owner.name !== null && !alias) scope.unqualified.push({ source: owner.name, ref });
      return ref;
    }
    if (scope.isValue(head) || this.isInlineAlias(head, scope)) return node;
    throw unknownColumn(node, scope);
  }

  private columnRef(
    source: Source,
    qualifier: string[],
    name: string,
    rest: string[],
    node: Field,
    scope: Scope,
  ): Expr {
    const info = source.columns.get(name);
    if (info === undefined) {
      const virtual = hasOwn(source.virtual, name) ? source.virtual![name]! : undefined;
      if (virtual !== undefined) return this.virtualRef(source, qualifier, name, virtual, rest, node, scope);
      const joined = hasOwn(source.joinedColumns, name) ? source.joinedColumns![name]! : undefined;
      if (joined !== undefined) return this.joinedColumnRef(source, name, joined, rest, node, scope);
      const at = node.chain.lastIndexOf(name);
      const property = source.columns.get('properties')?.json
        ? `; a property is read as ${[...node.chain.slice(0, at), 'properties', ...node.chain.slice(at)].join('.')}`
        : '';
      throw new QueryResolveError(
        `${source.description} has no column ${shown(name)}; its columns are ${listed([...source.columns.keys()])}${property}`,
        node.pos,
      );
    }
    const field: Field = { kind: 'field', chain: [...qualifier, name], pos: node.pos };
    if (info.nullable && rest.length === 0) this.#nullable.add(field);
    if (info.json) {
      const ref: JsonRef = { column: field, keys: rest.map(str), owner: info.properties };
      if (rest.length > 0) return this.extract(ref, node.pos);
      this.#json.set(field, ref);
      return field;
    }
    if (rest.length === 0) return field;
    const type = source.types.get(name);
    if (type !== undefined) {
      throw new QueryResolveError(
        `${shown(name)} is a ${type}, not JSON: it has no field ${shown(rest[0]!)}`,
        node.pos,
      );
    }
    // An element of a tuple column of a subquery or CTE.
    return { kind: 'field', chain: [...qualifier, name, ...rest], pos: node.pos };
  }

  /** `pdi.person_id`, `person.created_at`, `group_0.properties.name`, `session.$session_duration`, `poe.id`. */
  private virtualRef(
    source: Source,
    qualifier: string[],
    name: string,
    virtual: VirtualField,
    rest: string[],
    node: Field,
    scope: Scope,
  ): Expr {
    if (virtual.kind === 'expression') return this.expressionRef(source, name, virtual, rest, node);
    const [part, ...more] = rest;
    if (virtual.kind === 'columns') {
      if (part !== undefined && hasOwn(virtual.columns, part)) {
        return this.columnRef(source, qualifier, virtual.columns[part]!, more, node, scope);
      }
      if (part !== undefined && hasOwn(virtual.expressions, part)) {
        return this.expressionRef(source, part, virtual.expressions![part]!, more, node);
      }
      if (part !== undefined && virtual.otherwise !== undefined) {
        const via = this.lazyJoin(source, virtual.otherwise.field, scope, node);
        const target = this.lazyJoin(via, name, scope, node, virtual.otherwise.join);
        return this.columnRef(target, [target.name!], part, more, node, scope);
      }
      throw new QueryResolveError(
        part === undefined
          ? `${shown(name)} is not a column: ${virtual.hint}`
          : `there is no ${name}.${part}: ${virtual.hint}`,
        node.pos,
      );
    }
    if (part === undefined) {
      const columns = listed(joinedColumnNames(virtual.join));
      throw new QueryResolveError(
        `${shown(name)} is not a column: read one of its fields (${name}.<field>: ${columns})`,
        node.pos,
      );
    }
    const target = this.lazyJoin(source, name, scope, node, virtual.join);
    return this.columnRef(target, [target.name!], part, more, node, scope);
  }

  /** `team_id`, `$virt_initial_channel_type`: an expression over the table's own columns (virtual.ts). */
  private expressionRef(
    source: Source,
    name: string,
    virtual: ExpressionField,
    rest: string[],
    node: Field,
  ): Expr {
    if (rest.length > 0) {
      throw new QueryResolveError(`${shown(name)} is a value: it has no field ${shown(rest[0]!)}`, node.pos);
    }
    if (source.name === null) {
      throw new QueryResolveError(
        `${shown(name)} needs its table to have a name: give it an alias`,
        node.pos,
      );
    }
    // Read in a scope of its table alone, as PostHog isolates an expression field's scope: its names are the
    // table's, whatever the query around has, and a joined table (`pdi.person`) is found by its alias too.
    const isolated = new Scope(null);
    isolated.sources.push(source);
    const expr = this.expr(expressionOn(virtual, source.name), isolated);
    if (isolated.lazyJoins.size > 0) throw new Error(`the expression field ${name} reads through a join`);
    this.#expressionFields.set(expr, name);
    return expr;
  }

  /** `last_seen_at` on persons: a column of a join, named as the table's own. */
  private joinedColumnRef(
    source: Source,
    name: string,
    joined: JoinedColumn,
    rest: string[],
    node: Field,
    scope: Scope,
  ): Expr {
    const target = this.lazyJoin(source, name, scope, node, joined.join);
    return this.columnRef(target, [target.name!], joined.column, rest, node, scope);
  }

  /**
   * The table a lazy join makes visible, joining it to the SELECT the first time (once per owner and field):
   * `LEFT JOIN (<its query, resolved>) AS <owner>__<field> ON …`. Without `spec`, the join must exist already.
   */
  private lazyJoin(source: Source, field: string, scope: Scope, node: Field, spec?: LazyJoinSpec): Source {
    if (source.name === null) {
      throw new QueryResolveError(
        `${shown(field)} needs its table to have a name: give it an alias`,
        node.pos,
      );
    }
    const alias = `${source.name}__${field}`;
    const made = scope.lazyJoins.get(alias);
    if (made !== undefined) return made.source;
    const join = spec ?? (source.virtual?.[field]?.kind === 'join' ? source.virtual[field].join : undefined);
    if (join === undefined) throw new Error(`no lazy join ${field} on ${source.description}`);
    const out = this.query(parsedOnce(join.text), new Scope(null));
    const columns = new Map<string, ColumnInfo>();
    for (const c of out.columns) {
      if (!columns.has(c.name)) {
        columns.set(
          c.name,
          c.info.json ? { json: true, properties: join.properties ?? c.info.properties } : c.info,
        );
      }
    }
    const lazy: LazyJoin = {
      join: {
        kind: 'join',
        type: 'left',
        strictness: null,
        table: { kind: 'tableSubquery', query: out.query, alias },
        on: join.on(source.name, alias),
        using: null,
      },
      source: {
        name: alias,
        description: join.description,
        columns,
        types: new Map(),
        virtual: join.virtual,
        joinedColumns: join.joinedColumns,
      },
    };
    scope.lazyJoins.set(alias, lazy);
    return lazy.source;
  }

  /**
   * Whether `name` is named inside an expression of this scope's SELECT. Looked for only when a name is
   * otherwise unknown, so a query without such names pays nothing for them.
   */
  private isInlineAlias(name: string, scope: Scope): boolean {
    let names = this.#inlineAliases.get(scope);
    if (names === undefined) {
      const select = this.#selects.get(scope);
      names = select === undefined ? new Set() : inlineAliases(select);
      this.#inlineAliases.set(scope, names);
    }
    return names.has(name);
  }

  private extract(ref: JsonRef, pos: Span | undefined): Expr {
    const extraction: Expr = {
      ...call('JSONExtract', [ref.column, ...ref.keys, str('Nullable(String)')]),
      pos,
    };
    const typed = this.typed(ref, extraction);
    this.#json.set(typed, ref);
    return typed;
  }

  /**
   * A property read as its definition types it, as HogQL's property swapper does (transforms/property_types.py):
   * only a top-level key of event or person properties, and never as the argument of a function that parses
   * text itself.
   */
  private typed(ref: JsonRef, text: Expr): Expr {
    const key = ref.keys.length === 1 ? ref.keys[0]! : undefined;
    if (this.#properties === undefined || this.#textArgs || key?.kind !== 'string') return text;
    let type: string | undefined;
    if (ref.owner === 'event') type = this.#properties.event(key.value);
    else if (ref.owner === 'person') type = this.#properties.person(key.value);
    switch (type) {
      case 'Numeric':
        return call('accurateCastOrNull', [text, str('Float64')]);
      case 'DateTime':
        return call('parseDateTime64BestEffortOrNull', [text, { kind: 'number', text: '6' }, str('UTC')]);
      case 'Boolean':
        return call('toBool', [
          call('transform', [
            text,
            { kind: 'array', items: [str('true'), str('false')] },
            {
              kind: 'array',
              items: [
                { kind: 'number', text: '1' },
                { kind: 'number', text: '0' },
              ],
            },
            { kind: 'null' },
          ]),
        ]);
      default:
        return text;
    }
  }
}

const COMPARISONS = new Set(['=', '!=', '<', '<=', '>', '>=']);

/** A number written in the query, or its negation. */
function numberLiteral(e: Expr): boolean {
  return e.kind === 'number' || (e.kind === 'negate' && e.operand.kind === 'number');
}

/** A number literal as the engine writes the number: `10`, `1.5`, `-3`, `1000` for `1e3`. */
function asText(e: Expr): Expr {
  const number = e.kind === 'negate' ? e.operand : e;
  const written = number.kind === 'number' ? number.text : '';
  const sign = e.kind === 'negate' ? '-' : '';
  // Digits alone are kept as written, whatever their size; anything else is the number's shortest text.
  return str(/^\d+$/.test(written) ? `${sign}${written}` : String(Number(`${sign}${written}`)));
}

const ZERO: Expr = { kind: 'number', text: '0' };
const ONE: Expr = { kind: 'number', text: '1' };

function str(value: string): Expr {
  return { kind: 'string', value };
}

function call(name: string, args: Expr[]): Expr {
  return { kind: 'call', name, params: null, args, distinct: false, over: null };
}

/**
 * Puts a table's name before the column a resolved reference reads, in place: the nodes are the resolver's
 * own, made for this query (a column, or a JSON read or typed read of one).
 */
function qualify(ref: Expr, table: string): void {
  if (ref.kind === 'field') {
    if (ref.chain.length === 1) (ref as { chain: string[] }).chain = [table, ref.chain[0]!];
    return;
  }
  if (ref.kind === 'call' && ref.args.length > 0) qualify(ref.args[0]!, table);
}

/**
 * The most rows `numbers()` may make. It reads nothing of any project, so it is confined by nature; the bound
 * keeps it from being a way to spend the engine's time and memory (a cross join with events, say) beyond what
 * the run limits catch late.
 */
export const MAX_NUMBERS = 1_000_000;

/**
 * A part of a concatenation as HogQL's printer makes it: as text, and a missing value as '' (`concat('v',
 * properties.$os_version)` is 'v' for an event without it, not NULL).
 */
function textOrEmpty(e: Expr): Expr {
  if (e.kind === 'string' || e.kind === 'number') return e;
  return call('ifNull', [call('toString', [e]), str('')]);
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

/** An expression of constants alone: no column, variable, subquery or `*` anywhere in it. */
function isConstant(e: unknown): boolean {
  if (Array.isArray(e)) return e.every(isConstant);
  if (typeof e !== 'object' || e === null) return true;
  const kind = (e as { kind?: unknown }).kind;
  if (kind === 'field' || kind === 'placeholder' || kind === 'subquery' || kind === 'star') return false;
  return Object.entries(e).every(([k, v]) => k === 'pos' || isConstant(v));
}

function hasOwn(record: Readonly<Record<string, unknown>> | undefined, key: string): boolean {
  return record !== undefined && Object.hasOwn(record, key);
}

/** The fields a lazy join offers, for messages: the columns its query names. */
function joinedColumnNames(spec: LazyJoinSpec): string[] {
  const q = parsedOnce(spec.text);
  const first = q.kind === 'select' ? q : null;
  if (first === null || first.columns.some((c) => c.kind === 'star')) return ['its columns'];
  return first.columns.map((c) => (c.kind === 'alias' ? c.alias : printDialectExpr(c)));
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

function columnMap(columns: readonly OutColumn[]): Map<string, ColumnInfo> {
  const map = new Map<string, ColumnInfo>();
  for (const c of columns) if (!map.has(c.name)) map.set(c.name, c.info);
  return map;
}

function derivedSource(name: string | null, description: string, columns: readonly OutColumn[]): Source {
  return { name, description, columns: columnMap(columns), types: new Map() };
}

/**
 * The name of an unaliased column: a plain column keeps its name (`e.event` is `event`, as ClickHouse names
 * it), anything else is its dialect text (`count()`, `properties.$browser`).
 */
function columnName(original: Expr, rewritten: Expr): string {
  if (original.kind === 'field' && rewritten.kind === 'field') return rewritten.chain.at(-1)!;
  return printDialectExpr(original);
}

/** A regex operator as the match() call HogQL prints; any other comparison as it is. */
function regexCall(b: Expr & { kind: 'binary' }): Expr {
  if (b.op !== 'regex' && b.op !== 'notRegex' && b.op !== 'iRegex' && b.op !== 'notIRegex') return b;
  const insensitive = b.op === 'iRegex' || b.op === 'notIRegex';
  const pattern = insensitive ? call('concat', [str('(?i)'), b.right]) : b.right;
  const match = { ...call('match', [b.left, pattern]), ...(b.pos ? { pos: b.pos } : {}) };
  return b.op === 'notRegex' || b.op === 'notIRegex' ? { kind: 'not', operand: match } : match;
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

function unknownColumn(node: Field, scope: Scope): QueryResolveError {
  const name = node.chain[0]!;
  const known = new Set<string>();
  for (const s of scope.sources) for (const c of s.columns.keys()) known.add(c);
  for (const a of scope.aliases) known.add(a);
  const near = [...known].find((k) => k.toLowerCase() === name.toLowerCase());
  let reason = `unknown column ${shown(name)}`;
  if (near) reason += `; did you mean ${shown(near)}?`;
  else if (scope.outerHas(name))
    reason +=
      ': a subquery cannot use the columns of the query around it (correlated subqueries are not supported)';
  else if (scope.sources.length === 0) reason += ' (this SELECT has no FROM clause)';
  else reason += `; the columns here are ${listed([...known])}`;
  return new QueryResolveError(reason, node.pos);
}
