/**
 * The AST of Weir's SQL dialect: one tree used by the resolver, the materialization analysis and the printers.
 * Every node is a plain object tagged by `kind`. Parsed nodes carry `pos` (where they start and end in the
 * text); nodes built by code (insights, rewrites) may leave it out. Nothing here knows tables or functions:
 * names are kept as written and the resolver decides what they mean.
 *
 * Normalised by the parser, so that equal queries make equal trees: `==` is `=`, `<>` is `!=`, `MOD` is `%`,
 * `x::T` is a `cast` like `CAST(x AS T)`, `LEFT OUTER JOIN` is a `left` join, `FROM a, b` is a `cross` join,
 * `LIMIT m, n` is `LIMIT n OFFSET m`, `INTERVAL '7 day'` is `INTERVAL 7 DAY`, parentheses leave no node.
 * HogQL's `a ?? b` is `ifNull(a, b)`; its regex operators are binary nodes (`~` is `=~`, `~*` is `=~*`), which
 * the resolver makes the `match()` calls HogQL prints, NULL-safe as a comparison is.
 */

/** Where a parsed node is: offsets [start, end) in UTF-16 units, and the 1-based line and column of its start. */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly line: number;
  readonly column: number;
}

interface Node {
  /** Absent on nodes built by code rather than parsed. */
  pos?: Span;
}

// ---------------------------------------------------------------------------------------------- queries

/** A whole query: one SELECT, or several joined by UNION ALL, or by other set operators. */
export type Query = SelectQuery | UnionAllQuery | SetOperationQuery;

export interface UnionAllQuery extends Node {
  kind: 'unionAll';
  /** Two or more; a member is itself a union only when the text put one in parentheses. */
  queries: Query[];
}

/** How two queries of a set operation combine; plain `UNION` is `UNION DISTINCT`, as in HogQL. */
export type SetOperator = 'UNION ALL' | 'UNION DISTINCT' | 'INTERSECT' | 'INTERSECT DISTINCT' | 'EXCEPT';

/**
 * Queries joined by set operators other than UNION ALL alone (`a UNION DISTINCT b EXCEPT c`): kept in the
 * order written, as HogQL keeps them, so ClickHouse applies its own precedence (INTERSECT binds tighter).
 */
export interface SetOperationQuery extends Node {
  kind: 'setOperation';
  /** Two or more; a member is itself a set operation only when the text put one in parentheses. */
  queries: Query[];
  /** `operators[i]` joins `queries[i]` and `queries[i + 1]`; not all of them UNION ALL. */
  operators: SetOperator[];
}

export interface SelectQuery extends Node {
  kind: 'select';
  /** `WITH …` items, in order; empty when there is no WITH. */
  with: WithItem[];
  distinct: boolean;
  /** One or more; an `alias` wraps a column that has a name. */
  columns: ColumnExpr[];
  from: FromClause | null;
  prewhere: Expr | null;
  where: Expr | null;
  groupBy: Expr[] | null;
  /**
   * `GROUP BY … WITH ROLLUP` / `WITH CUBE`; or `GROUP BY GROUPING SETS ((a), (a, b), ())`, when `groupBy`
   * holds one `tuple` per set (a set of one expression, or of none, is a tuple all the same).
   */
  groupByModifier: 'rollup' | 'cube' | 'groupingSets' | null;
  /** `GROUP BY … WITH TOTALS` (adds a row to the result). */
  withTotals: boolean;
  having: Expr | null;
  /** `WINDOW w AS (…)` definitions; empty when there is no WINDOW clause. */
  window: NamedWindow[];
  orderBy: OrderItem[] | null;
  /** `LIMIT n [OFFSET m] BY exprs`. */
  limitBy: LimitBy | null;
  limit: Expr | null;
  offset: Expr | null;
  /** `LIMIT n WITH TIES`: rows equal to the last one in ORDER BY are kept too. */
  limitWithTies: boolean;
}

/**
 * A SELECT with every clause absent but those given: for code that builds queries (the parser fills a query
 * clause by clause; the resolver and endpoint runs wrap queries), so a new clause is added in one place.
 */
export function selectQuery(
  parts: Pick<SelectQuery, 'columns'> & Partial<Omit<SelectQuery, 'kind'>>,
): SelectQuery {
  return {
    kind: 'select',
    with: [],
    distinct: false,
    from: null,
    prewhere: null,
    where: null,
    groupBy: null,
    groupByModifier: null,
    withTotals: false,
    having: null,
    window: [],
    orderBy: null,
    limitBy: null,
    limit: null,
    offset: null,
    limitWithTies: false,
    ...parts,
  };
}

/** `WITH name AS (SELECT …)`: a named subquery the query can select FROM. */
export interface WithQuery extends Node {
  kind: 'withQuery';
  name: string;
  query: Query;
}

/** `WITH expr AS name`: a named expression (ClickHouse's form); `expr` may be a scalar subquery. */
export interface WithExpr extends Node {
  kind: 'withExpr';
  name: string;
  expr: Expr;
}

export type WithItem = WithQuery | WithExpr;

/** The first table and what is joined to it, left to right. */
export interface FromClause extends Node {
  kind: 'from';
  table: TableExpr;
  joins: JoinClause[];
}

/**
 * A named table, kept as written: `database` is set for `db.table` (so `system.tables` arrives as
 * `{database: 'system', name: 'tables'}`), and a name may also be a WITH query's. The resolver decides.
 */
export interface TableRef extends Node {
  kind: 'table';
  database: string | null;
  name: string;
  alias: string | null;
  /** `FROM t FINAL`. */
  final: boolean;
  /** `FROM t SAMPLE 1/10 [OFFSET 1/2]`. */
  sample: SampleClause | null;
}

/** `SAMPLE ratio [OFFSET ratio]`: each a number or a fraction of two (`1/10`), as ClickHouse writes them. */
export interface SampleClause extends Node {
  kind: 'sample';
  ratio: Expr;
  offset: Expr | null;
}

/** `FROM file('x')`, `FROM numbers(10)`: parsed so that the resolver can refuse it by name. */
export interface TableFunction extends Node {
  kind: 'tableFunction';
  name: string;
  args: Expr[];
  alias: string | null;
}

export interface TableSubquery extends Node {
  kind: 'tableSubquery';
  query: Query;
  alias: string | null;
}

export type TableExpr = TableRef | TableFunction | TableSubquery;

export type JoinType = 'inner' | 'left' | 'right' | 'full' | 'cross';
export type JoinStrictness = 'any' | 'all' | 'asof' | 'semi' | 'anti';

export interface Join extends Node {
  kind: 'join';
  type: JoinType;
  /** ClickHouse's `ANY`/`ALL`/`ASOF`/`SEMI`/`ANTI`, when written. */
  strictness: JoinStrictness | null;
  table: TableExpr;
  /** Exactly one of `on` and `using` is set, except for a cross join, which has neither. */
  on: Expr | null;
  using: string[] | null;
}

/** `[LEFT] ARRAY JOIN arr [AS x], …`. */
export interface ArrayJoin extends Node {
  kind: 'arrayJoin';
  left: boolean;
  items: ColumnExpr[];
}

export type JoinClause = Join | ArrayJoin;

export interface OrderItem extends Node {
  kind: 'orderItem';
  expr: Expr;
  descending: boolean;
  nulls: 'first' | 'last' | null;
}

export interface LimitBy extends Node {
  kind: 'limitBy';
  limit: Expr;
  offset: Expr | null;
  by: Expr[];
}

export interface NamedWindow extends Node {
  kind: 'namedWindow';
  name: string;
  spec: WindowSpec;
}

export interface WindowSpec extends Node {
  kind: 'windowSpec';
  partitionBy: Expr[] | null;
  orderBy: OrderItem[] | null;
  frame: WindowFrame | null;
}

/** `ROWS|RANGE BETWEEN start AND end`, or `ROWS|RANGE start` (then `end` is null). */
export interface WindowFrame extends Node {
  kind: 'windowFrame';
  unit: 'rows' | 'range';
  start: FrameBound;
  end: FrameBound | null;
}

/** `CURRENT ROW`, `n PRECEDING`, `n FOLLOWING`; `offset` null with preceding/following is `UNBOUNDED`. */
export interface FrameBound extends Node {
  kind: 'frameBound';
  type: 'currentRow' | 'preceding' | 'following';
  offset: Expr | null;
}

/** `OVER w`: a window named in the WINDOW clause. */
export interface WindowRef extends Node {
  kind: 'windowRef';
  name: string;
}

// ------------------------------------------------------------------------------------------ expressions

export type Expr =
  | NumberLiteral
  | StringLiteral
  | BooleanLiteral
  | NullLiteral
  | Placeholder
  | Field
  | Star
  | Call
  | Lambda
  | ArrayLiteral
  | TupleLiteral
  | IndexExpr
  | TupleAccess
  | Binary
  | And
  | Or
  | Concat
  | Not
  | Negate
  | Between
  | IsNull
  | Ternary
  | Case
  | Interval
  | Cast
  | Subquery
  | Tag
  | Dict
  | Alias;

/**
 * A column of the SELECT list or of ARRAY JOIN: an expression, maybe named. (An `alias` is an expression too:
 * ClickHouse names an expression wherever it stands, `(sumMap(k, v) AS m).1`, and the name is then usable
 * anywhere in that SELECT; a column `(a AS b)` is the column `a AS b`.)
 */
export type ColumnExpr = Expr;

export interface Alias extends Node {
  kind: 'alias';
  expr: Expr;
  alias: string;
}

/**
 * A number as written (`42`, `1.5e-3`, `0x1F`, `1_000`, `inf`, `nan`): the text is kept so that large
 * integers and `1.0` reach ClickHouse exactly as typed. `numberValue` reads it. Never negative: `-1` is a
 * `negate` of `1`.
 */
export interface NumberLiteral extends Node {
  kind: 'number';
  text: string;
}

export interface StringLiteral extends Node {
  kind: 'string';
  /** Decoded: escapes resolved. */
  value: string;
}

export interface BooleanLiteral extends Node {
  kind: 'boolean';
  value: boolean;
}

export interface NullLiteral extends Node {
  kind: 'null';
}

/** `{variables.name}`: a value bound at run time, never spliced as text. `name` is the part after `variables.`. */
export interface Placeholder extends Node {
  kind: 'placeholder';
  name: string;
}

/**
 * A name, maybe dotted: `event`, `e.timestamp`, `properties.$browser`, `person.properties.email`. Each part
 * is as written, unquoted. Which part is a table alias, a column or a JSON key is the resolver's business.
 */
export interface Field extends Node {
  kind: 'field';
  chain: string[];
}

/** `*`, or `t.*` (then `table` is `['t']`). Parsed wherever an expression may stand; the resolver limits it. */
export interface Star extends Node {
  kind: 'star';
  table: string[] | null;
}

/**
 * A function call. Aggregates with combinators are just names (`countIf`, `uniqExactIf`, `sumArray`).
 * `params` holds the first list of a parametric call: `quantile(0.9)(x)` has params `[0.9]`, args `[x]`.
 * `count(*)` has one `star` argument; `count()` has none.
 */
export interface Call extends Node {
  kind: 'call';
  name: string;
  params: Expr[] | null;
  args: Expr[];
  /** `count(DISTINCT x)`. */
  distinct: boolean;
  over: WindowSpec | WindowRef | null;
}

/** `x -> x + 1`, `(x, y) -> x + y`; only as a function argument. */
export interface Lambda extends Node {
  kind: 'lambda';
  params: string[];
  body: Expr;
}

export interface ArrayLiteral extends Node {
  kind: 'array';
  items: Expr[];
}

/** `(1, 2)`, `(1,)`, `()`; `(x)` is just `x`. */
export interface TupleLiteral extends Node {
  kind: 'tuple';
  items: Expr[];
}

/** `a[1]`, `properties['$browser']`, `m['key']`. */
export interface IndexExpr extends Node {
  kind: 'index';
  object: Expr;
  index: Expr;
}

/** `t.1` (a 1-based position) or `f(x).name` (an element name after something that is not a plain name). */
export interface TupleAccess extends Node {
  kind: 'tupleAccess';
  object: Expr;
  element: number | string;
}

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | 'div';
export type ComparisonOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type MatchOp = 'like' | 'notLike' | 'ilike' | 'notILike' | 'in' | 'notIn';
/** HogQL's `=~` (and `~`), `!~`, `=~*` (and `~*`), `!~*`: ClickHouse's match(), with the NULLs of a comparison. */
export type RegexOp = 'regex' | 'notRegex' | 'iRegex' | 'notIRegex';
export type BinaryOp = ArithmeticOp | ComparisonOp | MatchOp | RegexOp;

/** Arithmetic, comparisons, `[NOT] [I]LIKE`, `[NOT] IN` (the right side a tuple, subquery, array, …). */
export interface Binary extends Node {
  kind: 'binary';
  op: BinaryOp;
  left: Expr;
  right: Expr;
}

/** `a AND b AND c` is one node with three operands; `(a AND b) AND c` keeps its inner node. */
export interface And extends Node {
  kind: 'and';
  operands: Expr[];
}

export interface Or extends Node {
  kind: 'or';
  operands: Expr[];
}

/** `a || b || c`: one node, as ClickHouse reads it (`concat(a, b, c)`); `(a || b) || c` keeps its inner node. */
export interface Concat extends Node {
  kind: 'concat';
  operands: Expr[];
}

export interface Not extends Node {
  kind: 'not';
  operand: Expr;
}

export interface Negate extends Node {
  kind: 'negate';
  operand: Expr;
}

export interface Between extends Node {
  kind: 'between';
  not: boolean;
  expr: Expr;
  low: Expr;
  high: Expr;
}

export interface IsNull extends Node {
  kind: 'isNull';
  not: boolean;
  operand: Expr;
}

/** `cond ? a : b`. */
export interface Ternary extends Node {
  kind: 'ternary';
  condition: Expr;
  whenTrue: Expr;
  whenFalse: Expr;
}

export interface CaseBranch extends Node {
  kind: 'caseBranch';
  when: Expr;
  result: Expr;
}

/** `CASE [subject] WHEN … THEN … [ELSE …] END`. */
export interface Case extends Node {
  kind: 'case';
  subject: Expr | null;
  branches: CaseBranch[];
  otherwise: Expr | null;
}

export type IntervalUnit =
  | 'nanosecond'
  | 'microsecond'
  | 'millisecond'
  | 'second'
  | 'minute'
  | 'hour'
  | 'day'
  | 'week'
  | 'month'
  | 'quarter'
  | 'year';

export interface Interval extends Node {
  kind: 'interval';
  value: Expr;
  unit: IntervalUnit;
}

/** `CAST(x AS T)` and `x::T`. (`CAST(x, 'T')` is an ordinary call.) */
export interface Cast extends Node {
  kind: 'cast';
  expr: Expr;
  type: TypeExpr;
}

/** A ClickHouse type: `String`, `Nullable(String)`, `DateTime64(6, 'UTC')`, `Tuple(a String, b UInt8)`. */
export interface TypeExpr extends Node {
  kind: 'type';
  name: string;
  args: TypeArg[];
}

/** `a String` inside `Tuple(…)`. */
export interface NamedType extends Node {
  kind: 'namedType';
  name: string;
  type: TypeExpr;
}

export type TypeArg = TypeExpr | NamedType | NumberLiteral | StringLiteral;

/** `(SELECT …)` where an expression stands: a scalar subquery, or the right side of IN. */
export interface Subquery extends Node {
  kind: 'subquery';
  query: Query;
}

/**
 * A HogQLX tag, `<a href={url}>text {expr}</a>` or `<Sparkline data={[1, 2]} />`: a value PostHog's UI
 * renders. Children are the attribute `children` (text as strings), as HogQL's parser gives them.
 */
export interface Tag extends Node {
  kind: 'tag';
  name: string;
  attributes: TagAttribute[];
}

export interface TagAttribute extends Node {
  kind: 'tagAttribute';
  name: string;
  /** An expression, or a list of them for `children`. A bare attribute (`<a disabled>`) is `true`. */
  value: Expr | Expr[];
}

/** `{'key': value, …}`: HogQL's object literal. */
export interface Dict extends Node {
  kind: 'dict';
  entries: { key: Expr; value: Expr }[];
}

/**
 * The value of a number literal: a number, or a bigint for an integer beyond 2^53 (ClickHouse's UInt64 and
 * Int128 literals). `inf` and `nan` are Infinity and NaN.
 */
export function numberValue(node: NumberLiteral): number | bigint {
  const text = node.text.replaceAll('_', '').toLowerCase();
  if (text === 'inf') return Infinity;
  if (text === 'nan') return NaN;
  if (/^(0x[0-9a-f]+|0b[01]+|\d+)$/.test(text)) {
    const big = BigInt(text);
    return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  return Number(text);
}
