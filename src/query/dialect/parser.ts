/**
 * The parser of Weir's SQL dialect (DESIGN.md, "The SQL dialect"): a hand-written recursive descent over
 * the tokens of lexer.ts, expressions by precedence climbing (expression-parser.ts, form-parser.ts), into
 * the AST of ast.ts.
 * One statement, a SELECT or a UNION ALL of them; a trailing `;` is allowed and nothing after it.
 *
 * What is refused, and where:
 * - Here, with a message at the offending word: `SETTINGS`, `FORMAT`, `INTO OUTFILE` (the run owns its limits
 *   and output; with no AST field for them no later stage can print them by mistake), `GLOBAL`,
 *   `PASTE JOIN`, `DISTINCT ON`, `QUALIFY`, `WITH FILL`, `COLLATE`, `WITH RECURSIVE`, ClickHouse's own
 *   `{name:Type}` parameters (placeholders are `{variables.name}`).
 * - By the resolver, from the AST: anything about names. Table functions (`file(…)`, `url(…)`, `numbers(…)`)
 *   arrive as `tableFunction` nodes and database-qualified tables (`system.tables`) as `table` nodes with
 *   `database` set, so the resolver refuses them by name, as it refuses an unknown table, column or function.
 *
 * Limits: text longer than `maxLength` is refused before tokenizing, and nesting deeper than `maxDepth`
 * (brackets, subqueries, prefix operators, left-deep operator chains) fails with a message, never a stack
 * overflow; so any tree the parser returns can be walked recursively.
 */
import type {
  ArrayJoin,
  ColumnExpr,
  Expr,
  FromClause,
  Join,
  JoinClause,
  JoinStrictness,
  JoinType,
  LimitBy,
  NamedWindow,
  Query,
  SampleClause,
  SelectQuery,
  SetOperator,
  TableExpr,
  WithItem,
} from './ast.ts';
import { selectQuery } from './ast.ts';
import { DialectSyntaxError } from './errors.ts';
import { FormParser } from './form-parser.ts';
import { JOIN_WORDS, NOT_AN_ALIAS } from './keywords.ts';
import { tokenize } from './lexer.ts';
import type { Token } from './tokens.ts';

/** ClickHouse's own default `max_query_size`. */
export const MAX_QUERY_LENGTH = 262_144;
export const MAX_DEPTH = 256;

export interface ParseOptions {
  /** The longest query text accepted, in UTF-16 units. @default 262144 */
  maxLength?: number;
  /** The deepest nesting accepted. @default 256 */
  maxDepth?: number;
}

/** Parses one query of the dialect. Throws DialectSyntaxError, and nothing else, for any text it cannot take. */
export function parseDialect(text: string, options: ParseOptions = {}): Query {
  const maxLength = options.maxLength ?? MAX_QUERY_LENGTH;
  if (text.length > maxLength) {
    throw new DialectSyntaxError(`the query is ${text.length} characters long; the limit is ${maxLength}`, {
      offset: 0,
      line: 1,
      column: 1,
    });
  }
  return new QueryParser(text, tokenize(text), options.maxDepth ?? MAX_DEPTH).parseStatement();
}

/** The clauses of a SELECT in the order they must come, for "WHERE must come before GROUP BY". */
const CLAUSES = [
  'FROM',
  'JOIN',
  'PREWHERE',
  'WHERE',
  'GROUP BY',
  'HAVING',
  'WINDOW',
  'ORDER BY',
  'LIMIT',
  'OFFSET',
];
const CLAUSE_OF_WORD: Readonly<Record<string, number>> = {
  FROM: 0,
  PREWHERE: 2,
  WHERE: 3,
  GROUP: 4,
  HAVING: 5,
  WINDOW: 6,
  ORDER: 7,
  LIMIT: 8,
  OFFSET: 9,
};

const JOIN_TYPES: Readonly<Record<string, JoinType>> = {
  INNER: 'inner',
  LEFT: 'left',
  RIGHT: 'right',
  FULL: 'full',
  CROSS: 'cross',
};
const STRICTNESS: Readonly<Record<string, JoinStrictness>> = {
  ANY: 'any',
  ALL: 'all',
  ASOF: 'asof',
  SEMI: 'semi',
  ANTI: 'anti',
};

class QueryParser extends FormParser {
  private readonly text: string;

  constructor(text: string, tokens: readonly Token[], maxDepth: number) {
    super(tokens, maxDepth);
    this.text = text;
  }

  protected source(t: Token): string {
    return this.text.slice(t.offset, t.end);
  }

  parseStatement(): Query {
    if (this.atEnd()) this.fail('the query is empty');
    const query = this.parseQuery();
    for (const p of this.dateRangePlaceholders) {
      const name = p.kind === 'placeholder' ? p.name : '';
      throw new DialectSyntaxError(
        `{${name}} must stand directly in a comparison (timestamp >= {${name}}): with no date range set, that comparison is true`,
        p.pos
          ? { offset: p.pos.start, line: p.pos.line, column: p.pos.column }
          : { offset: 0, line: 1, column: 1 },
      );
    }
    this.refuseTail();
    if (this.acceptPunct(';')) {
      if (!this.atEnd()) this.fail(`only one statement is allowed; found ${this.describe()} after ';'`);
    } else if (!this.atEnd()) {
      this.fail(this.isPunct(')') ? "unexpected ')' with no matching '('" : `unexpected ${this.describe()}`);
    }
    return query;
  }

  protected parseQuery(): Query {
    const first = this.tok;
    this.enter(first);
    const queries = [this.parseUnionMember()];
    const operators: SetOperator[] = [];
    for (let op = this.parseSetOperator(); op !== null; op = this.parseSetOperator()) {
      operators.push(op);
      queries.push(this.parseUnionMember());
    }
    this.leave();
    if (operators.length === 0) return queries[0]!;
    const pos = this.span(first);
    if (operators.every((op) => op === 'UNION ALL')) return { kind: 'unionAll', queries, pos };
    return { kind: 'setOperation', queries, operators, pos };
  }

  /** `UNION ALL`, `UNION [DISTINCT]`, `INTERSECT [DISTINCT]`, `EXCEPT`, as HogQL's grammar has them. */
  private parseSetOperator(): SetOperator | null {
    if (this.acceptKeyword('UNION')) {
      if (this.acceptKeyword('ALL')) return 'UNION ALL';
      this.acceptKeyword('DISTINCT');
      return 'UNION DISTINCT';
    }
    if (this.acceptKeyword('INTERSECT'))
      return this.acceptKeyword('DISTINCT') ? 'INTERSECT DISTINCT' : 'INTERSECT';
    if (this.acceptKeyword('EXCEPT')) {
      if (this.isKeyword('DISTINCT')) this.fail('EXCEPT takes no DISTINCT: write EXCEPT');
      return 'EXCEPT';
    }
    return null;
  }

  private parseUnionMember(): Query {
    if (this.isPunct('(')) {
      const open = this.next();
      const query = this.parseQuery();
      this.expectClose(open);
      return query;
    }
    if (this.isKeyword('SELECT') || this.isKeyword('WITH')) return this.parseSelect();
    return this.fail(`expected SELECT, found ${this.describe()}`);
  }

  /** What may never reach ClickHouse from a caller, wherever it stands after a SELECT. */
  private refuseTail(): void {
    if (this.isKeyword('SETTINGS'))
      this.fail('SETTINGS is not allowed: Weir sets the limits of each run itself');
    if (this.isKeyword('FORMAT')) this.fail('FORMAT is not allowed: Weir chooses the output format');
    if (this.isKeyword('INTO') && this.isKeyword('OUTFILE', this.peek()))
      this.fail('INTO OUTFILE is not allowed');
  }

  private parseSelect(): SelectQuery {
    const first = this.tok;
    const withItems = this.isKeyword('WITH') ? this.parseWith() : [];
    this.expectKeyword('SELECT', withItems.length > 0 ? 'after the WITH clause' : 'to start the query');
    let distinct = false;
    if (this.isKeyword('DISTINCT')) {
      this.next();
      if (this.isKeyword('ON')) this.fail('DISTINCT ON is not supported; use LIMIT 1 BY');
      distinct = true;
    }
    const columns = this.parseColumns(distinct ? 'after SELECT DISTINCT' : 'after SELECT');
    const query = selectQuery({ with: withItems, distinct, columns });
    let reached = -1;
    if (this.isKeyword('FROM')) {
      query.from = this.parseFrom();
      reached = 1;
    }
    if (this.acceptKeyword('PREWHERE')) {
      query.prewhere = this.parseClauseExpr('PREWHERE');
      reached = 2;
    }
    if (this.acceptKeyword('WHERE')) {
      query.where = this.parseClauseExpr('WHERE');
      reached = 3;
    }
    if (this.isKeyword('GROUP') && this.isKeyword('BY', this.peek())) {
      this.index += 2;
      if (this.isKeyword('GROUPING') && this.isKeyword('SETS', this.peek())) {
        query.groupBy = this.parseGroupingSets();
        query.groupByModifier = 'groupingSets';
      } else {
        query.groupBy = this.parseExprList('after GROUP BY');
      }
      this.parseGroupByModifiers(query);
      reached = 4;
    }
    if (this.acceptKeyword('HAVING')) {
      query.having = this.parseClauseExpr('HAVING');
      reached = 5;
    }
    if (this.acceptKeyword('WINDOW')) {
      query.window = this.parseWindowClause();
      reached = 6;
    }
    if (this.isKeyword('QUALIFY')) this.fail('QUALIFY is not supported; filter in an outer query');
    if (this.isKeyword('ORDER') && this.isKeyword('BY', this.peek())) {
      this.index += 2;
      query.orderBy = this.parseOrderItems();
      reached = 7;
    }
    if (this.isKeyword('LIMIT')) {
      this.parseLimits(query);
      reached = 8;
    }
    if (this.acceptKeyword('OFFSET')) {
      query.offset = this.parseClauseExpr('OFFSET');
      reached = 9;
    }
    this.refuseTail();
    this.refuseMisplacedClause(reached);
    query.pos = this.span(first);
    return query;
  }

  /** A clause word here was not taken: say where it belongs rather than just "unexpected". */
  private refuseMisplacedClause(reached: number): void {
    const t = this.tok;
    if (t.type !== 'word') return;
    let clause = CLAUSE_OF_WORD[t.upper];
    if ((clause === 4 || clause === 7) && !this.isKeyword('BY', this.peek())) return;
    if (clause === undefined && JOIN_WORDS.has(t.upper)) clause = 1;
    if (clause === undefined || reached < 0) return;
    const name = CLAUSES[clause]!;
    if (clause === reached) this.fail(`only one ${name} clause is allowed`);
    if (clause < reached) this.fail(`${name} must come before ${CLAUSES[reached]!}`);
  }

  private parseClauseExpr(clause: string): Expr {
    this.requireExpression(`after ${clause}`);
    return this.parseExpr();
  }

  private parseWith(): WithItem[] {
    this.next();
    if (this.isKeyword('RECURSIVE') && this.isName(this.peek())) this.fail('WITH RECURSIVE is not supported');
    const items: WithItem[] = [];
    do {
      const first = this.tok;
      if (
        this.isName() &&
        this.isKeyword('AS', this.peek()) &&
        this.isPunct('(', this.peek(2)) &&
        this.queryStartsAt(3)
      ) {
        const name = this.next().value;
        this.next();
        const open = this.next();
        const query = this.parseQuery();
        this.expectClose(open);
        items.push({ kind: 'withQuery', name, query, pos: this.span(first) });
      } else {
        this.requireExpression(items.length === 0 ? 'after WITH' : "after ','");
        const expr = this.parseExpr();
        if (!this.acceptKeyword('AS')) {
          this.fail(`expected AS and a name after the WITH expression, found ${this.describe()}`);
        }
        const name = this.expectName('a name after AS');
        items.push({ kind: 'withExpr', name, expr, pos: this.span(first) });
      }
    } while (this.acceptPunct(','));
    return items;
  }

  private parseColumns(context: string): ColumnExpr[] {
    this.requireExpression(context);
    const columns = [this.parseColumn()];
    while (this.acceptPunct(',')) {
      // The list may end in a comma, as HogQL's grammar allows (`SELECT a, b, FROM t`).
      if (this.isKeyword('FROM') || this.atEnd() || this.isPunct(')') || this.isPunct(';')) break;
      if (this.tok.type === 'word' && CLAUSE_OF_WORD[this.tok.upper] !== undefined) break;
      if (!this.startsExpression()) this.fail(`expected a column after ',', found ${this.describe()}`);
      columns.push(this.parseColumn());
    }
    if (this.startsExpression()) this.fail(`expected ',' between columns, found ${this.describe()}`);
    return columns;
  }

  /** An expression with an optional `AS name` or bare name. */
  private parseColumn(): ColumnExpr {
    const first = this.tok;
    const expr = this.parseExpr();
    const alias = this.parseAlias();
    return alias === null ? expr : { kind: 'alias', expr, alias, pos: this.span(first) };
  }

  private parseAlias(): string | null {
    if (this.acceptKeyword('AS')) return this.expectName('a name after AS');
    const t = this.tok;
    if (t.type === 'quoted' || (t.type === 'word' && !NOT_AN_ALIAS.has(t.upper))) return this.next().value;
    return null;
  }

  private parseFrom(): FromClause {
    const fromTok = this.next();
    const table = this.parseTableExpr('after FROM');
    const joins: JoinClause[] = [];
    for (;;) {
      const t = this.tok;
      if (this.isPunct(',')) {
        this.next();
        const joined = this.parseTableExpr("after ','");
        joins.push({
          kind: 'join',
          type: 'cross',
          strictness: null,
          table: joined,
          on: null,
          using: null,
          pos: this.span(t),
        });
      } else if (
        this.isKeyword('ARRAY') ||
        ((this.isKeyword('LEFT') || this.isKeyword('INNER')) && this.isKeyword('ARRAY', this.peek()))
      ) {
        joins.push(this.parseArrayJoin());
      } else if (t.type === 'word' && JOIN_WORDS.has(t.upper)) {
        joins.push(this.parseJoin());
      } else {
        break;
      }
    }
    return { kind: 'from', table, joins, pos: this.span(fromTok) };
  }

  private parseTableExpr(context: string): TableExpr {
    const first = this.tok;
    if (this.isPunct('(') && this.isPunct('<', this.peek())) {
      const open = this.next();
      const table = this.parseTagTable();
      this.expectClose(open);
      return table.alias === null ? { ...table, alias: this.parseAlias(), pos: this.span(first) } : table;
    }
    if (this.isPunct('(')) {
      if (!this.queryStartsAt(1))
        this.fail(`expected a subquery after '(' in FROM, found ${this.describe(this.peek())}`, this.peek());
      const open = this.next();
      const query = this.parseQuery();
      this.expectClose(open);
      const alias = this.parseAlias();
      return { kind: 'tableSubquery', query, alias, pos: this.span(first) };
    }
    if (this.isPunct('{')) this.fail('a table cannot be a placeholder: variables stand for values');
    if (this.isPunct('<')) return this.parseTagTable();
    // Where a table's name stands, `final` is a name (a CTE may be called so), not the FINAL modifier.
    const reserved = first.type === 'word' && NOT_AN_ALIAS.has(first.upper) && first.upper !== 'FINAL';
    if (!this.isName() || reserved) {
      this.fail(`expected a table ${context}, found ${this.describe()}`);
    }
    let name = this.next().value;
    if (this.isPunct('(')) {
      const args = this.parseListToClose(this.next());
      const alias = this.parseAlias();
      return { kind: 'tableFunction', name, args, alias, pos: this.span(first) };
    }
    let database: string | null = null;
    if (this.acceptPunct('.')) {
      database = name;
      name = this.expectName('a table name after the database name');
      if (this.isPunct('.')) this.fail('a table name has at most two parts: database.table');
    }
    let final = this.acceptKeyword('FINAL');
    const alias = this.parseAlias();
    if (!final) final = this.acceptKeyword('FINAL');
    const sample = this.isKeyword('SAMPLE') ? this.parseSample() : null;
    return { kind: 'table', database, name, alias, final, sample, pos: this.span(first) };
  }

  /** `SAMPLE 0.1`, `SAMPLE 1/10 OFFSET 1/2`, `SAMPLE 10000`: ratios of number literals, as HogQL has them. */
  private parseSample(): SampleClause {
    const first = this.next();
    const ratio = this.parseRatio('after SAMPLE');
    const offset = this.acceptKeyword('OFFSET') ? this.parseRatio('after SAMPLE … OFFSET') : null;
    return { kind: 'sample', ratio, offset, pos: this.span(first) };
  }

  private parseRatio(context: string): Expr {
    const first = this.tok;
    const number = (): Expr => {
      const t = this.tok;
      if (t.type !== 'number') this.fail(`expected a number ${context}, found ${this.describe()}`);
      this.next();
      return { kind: 'number', text: t.value, pos: this.span(t) };
    };
    const left = number();
    if (!this.acceptPunct('/')) return left;
    return { kind: 'binary', op: '/', left, right: number(), pos: this.span(first) };
  }

  /** `FROM <HogQLQuery query="SELECT …" />`: the tag's query, as HogQL expands it, a subquery. */
  private parseTagTable(): TableExpr {
    const first = this.tok;
    const tag = this.parseTag();
    if (tag.kind !== 'tag') return this.fail('expected a tag', first);
    if (tag.name !== 'HogQLQuery') {
      this.fail(`<${tag.name}> cannot be a table: only <HogQLQuery query="…" /> can stand in FROM`, first);
    }
    const attr = tag.attributes.find((a) => a.name === 'query');
    const text = attr && !Array.isArray(attr.value) && attr.value.kind === 'string' ? attr.value.value : null;
    if (text === null) this.fail('<HogQLQuery /> needs a query="SELECT …" attribute, a string', first);
    let query: Query;
    try {
      query = parseDialect(text, { maxDepth: Math.max(1, this.maxDepth - this.depth) });
    } catch (e) {
      if (!(e instanceof DialectSyntaxError)) throw e;
      return this.fail(`in the query of <HogQLQuery />: ${e.reason}`, first);
    }
    const alias = this.parseAlias();
    return { kind: 'tableSubquery', query, alias, pos: this.span(first) };
  }

  private parseJoin(): Join {
    const first = this.tok;
    let type: JoinType | null = null;
    let strictness: JoinStrictness | null = null;
    let outer = false;
    while (this.tok.type === 'word' && !this.isKeyword('JOIN')) {
      const t = this.tok;
      const u = t.upper;
      if (u === 'GLOBAL') this.fail('GLOBAL joins are not supported');
      if (u === 'PASTE') this.fail('PASTE JOIN is not supported');
      if (JOIN_TYPES[u] !== undefined && type === null && !outer) type = JOIN_TYPES[u];
      else if (STRICTNESS[u] !== undefined && strictness === null) strictness = STRICTNESS[u];
      else if (u === 'OUTER' && !outer && (type === 'left' || type === 'right' || type === 'full'))
        outer = true;
      else if (u === 'OUTER') this.fail('OUTER goes after LEFT, RIGHT or FULL');
      else break;
      this.next();
    }
    if (!this.isKeyword('JOIN')) {
      this.fail(
        `expected JOIN after '${this.text.slice(first.offset, this.peek(-1).end)}', found ${this.describe()}`,
      );
    }
    this.next();
    const table = this.parseTableExpr('after JOIN');
    const join: Join = { kind: 'join', type: type ?? 'inner', strictness, table, on: null, using: null };
    if (join.type === 'cross') {
      if (this.isKeyword('ON') || this.isKeyword('USING')) this.fail('CROSS JOIN takes no ON or USING');
    } else if (this.acceptKeyword('ON')) {
      join.on = this.parseClauseExpr('ON');
    } else if (this.acceptKeyword('USING')) {
      join.using = this.parseUsing();
    } else {
      this.fail(`expected ON or USING after the joined table, found ${this.describe()}`);
    }
    join.pos = this.span(first);
    return join;
  }

  private parseUsing(): string[] {
    const open = this.isPunct('(') ? this.next() : null;
    const names: string[] = [];
    do names.push(this.expectName(names.length === 0 ? 'a column after USING' : "a column after ','"));
    while (this.acceptPunct(','));
    if (open) this.expectClose(open);
    return names;
  }

  private parseArrayJoin(): ArrayJoin {
    const first = this.tok;
    const left = this.acceptKeyword('LEFT');
    // `INNER ARRAY JOIN` is HogQL's name for the plain ARRAY JOIN.
    if (!left) this.acceptKeyword('INNER');
    this.expectKeyword('ARRAY', `after ${this.source(first)}`);
    this.expectKeyword('JOIN', 'after ARRAY');
    const items: ColumnExpr[] = [];
    do {
      this.requireExpression(items.length === 0 ? 'after ARRAY JOIN' : "after ','");
      items.push(this.parseColumn());
    } while (this.acceptPunct(','));
    return { kind: 'arrayJoin', left, items, pos: this.span(first) };
  }

  /** After GROUP BY: `GROUPING SETS ((a), (a, b), ())`, each set a tuple (a bare `a` is the set `(a)`). */
  private parseGroupingSets(): Expr[] {
    this.index += 2;
    const open = this.expectPunct('(', 'after GROUPING SETS');
    this.enter(open);
    const sets: Expr[] = [];
    do {
      const first = this.tok;
      if (this.isPunct('(')) {
        sets.push({ kind: 'tuple', items: this.parseListToClose(this.next()), pos: this.span(first) });
      } else {
        this.requireExpression(sets.length === 0 ? "or '(' after GROUPING SETS (" : "or '(' after ','");
        sets.push({ kind: 'tuple', items: [this.parseExpr()], pos: this.span(first) });
      }
    } while (this.acceptPunct(','));
    this.expectClose(open);
    this.leave();
    return sets;
  }

  private parseGroupByModifiers(query: SelectQuery): void {
    while (this.isKeyword('WITH')) {
      const m = this.peek();
      if (
        query.groupByModifier === 'groupingSets' &&
        (this.isKeyword('ROLLUP', m) || this.isKeyword('CUBE', m))
      ) {
        this.fail(`GROUPING SETS takes no WITH ${m.upper}: list the sets it would make`, m);
      }
      if ((this.isKeyword('ROLLUP', m) || this.isKeyword('CUBE', m)) && query.groupByModifier === null) {
        query.groupByModifier = m.upper === 'ROLLUP' ? 'rollup' : 'cube';
      } else if (this.isKeyword('TOTALS', m) && !query.withTotals) {
        query.withTotals = true;
      } else {
        this.fail(`expected ROLLUP, CUBE or TOTALS after WITH, found ${this.describe(m)}`, m);
      }
      this.index += 2;
    }
  }

  private parseWindowClause(): NamedWindow[] {
    const windows: NamedWindow[] = [];
    do {
      const first = this.tok;
      const name = this.expectName(
        windows.length === 0 ? 'a window name after WINDOW' : "a window name after ','",
      );
      this.expectKeyword('AS', 'after the window name');
      const open = this.expectPunct('(', 'after AS');
      windows.push({ kind: 'namedWindow', name, spec: this.parseWindowSpec(open), pos: this.span(first) });
    } while (this.acceptPunct(','));
    return windows;
  }

  /** `LIMIT n [OFFSET m]`, `LIMIT m, n`, either followed by `BY exprs` (then maybe a plain LIMIT after). */
  private parseLimits(query: SelectQuery): void {
    const first = this.next();
    const { limit, offset, withTies } = this.parseLimitValues();
    if (this.acceptKeyword('BY')) {
      if (withTies) this.fail('LIMIT … BY takes no WITH TIES', this.peek(-1));
      const by = this.parseExprList('after LIMIT … BY');
      const limitBy: LimitBy = { kind: 'limitBy', limit, offset, by, pos: this.span(first) };
      query.limitBy = limitBy;
      if (!this.acceptKeyword('LIMIT')) return;
      const plain = this.parseLimitValues();
      if (this.isKeyword('BY')) this.fail('only one LIMIT … BY clause is allowed');
      query.limit = plain.limit;
      query.offset = plain.offset;
      query.limitWithTies = plain.withTies;
      return;
    }
    query.limit = limit;
    query.offset = offset;
    query.limitWithTies = withTies;
  }

  /** `n`, `m, n`, `n OFFSET m`, each maybe `WITH TIES` (HogQL also takes `n WITH TIES OFFSET m`). */
  private parseLimitValues(): { limit: Expr; offset: Expr | null; withTies: boolean } {
    const a = this.parseClauseExpr('LIMIT');
    let withTies = this.acceptWithTies();
    let result = { limit: a, offset: null as Expr | null };
    if (!withTies && this.acceptPunct(','))
      result = { limit: this.parseClauseExpr("LIMIT … ','"), offset: a };
    else if (this.acceptKeyword('OFFSET')) result = { limit: a, offset: this.parseClauseExpr('OFFSET') };
    if (!withTies) withTies = this.acceptWithTies();
    return { ...result, withTies };
  }

  private acceptWithTies(): boolean {
    if (!this.isKeyword('WITH') || !this.isKeyword('TIES', this.peek())) return false;
    this.index += 2;
    return true;
  }
}
