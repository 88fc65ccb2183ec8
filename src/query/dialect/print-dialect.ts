/**
 * Prints an AST back as canonical dialect SQL on one line: keywords upper-case, names quoted only when they
 * must be, parentheses only where precedence needs them (the same table the parser climbs), so that
 * `parseDialect(printDialect(ast))` is `ast` again, positions aside. With `inline` values, placeholders print
 * as escaped literals: that text is the `hogql` of a run's debug output, never what is sent to ClickHouse.
 */
import type {
  BinaryOp,
  ColumnExpr,
  Expr,
  FrameBound,
  Join,
  JoinClause,
  OrderItem,
  Query,
  SampleClause,
  SelectQuery,
  TableExpr,
  Tag,
  TypeArg,
  TypeExpr,
  WindowSpec,
  WithItem,
} from './ast.ts';
import { PREC } from './expression-parser.ts';
import { EXPRESSION_WORDS, FUNCTION_WORDS, NOT_AN_EXPRESSION, QUOTE_IF } from './keywords.ts';

/** A value a placeholder can be bound to (the JSON of a run's `variables`, or a bigint). */
export type InlineValue = string | number | bigint | boolean | null | readonly InlineValue[];

export interface PrintOptions {
  /**
   * Values for placeholders, by variable name: `{variables.browser}` prints as `'Chrome'`. A placeholder
   * with no value here prints as written. @default no values: every placeholder prints as written
   */
  inline?: Readonly<Record<string, InlineValue>>;
  /**
   * `'all'` puts every operation inside an operand in parentheses, to show how the query was read
   * (`a OR (b AND c)`); it reads back as the same tree. @default 'needed'
   */
  parentheses?: 'needed' | 'all';
  /**
   * The text of a placeholder not inlined: the ClickHouse printer binds placeholders as query parameters
   * (`{var_browser:String}`). @default `{variables.name}`, as written
   */
  placeholder?: (name: string) => string;
}

export function printDialect(query: Query, options: PrintOptions = {}): string {
  return new Printer(options).query(query);
}

export function printDialectExpr(expr: Expr, options: PrintOptions = {}): string {
  return new Printer(options).expr(expr, 0);
}

const BARE_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Names that, bare before `(`, would not read back as a function call. */
const QUOTE_IF_CALLED = new Set(
  [...NOT_AN_EXPRESSION, ...EXPRESSION_WORDS].filter((w) => !FUNCTION_WORDS.has(w) && w !== 'CAST'),
);

const OP_TEXT: Readonly<Record<BinaryOp, string>> = {
  '+': '+',
  '-': '-',
  '*': '*',
  '/': '/',
  '%': '%',
  div: 'DIV',
  '=': '=',
  '!=': '!=',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
  regex: '=~',
  notRegex: '!~',
  iRegex: '=~*',
  notIRegex: '!~*',
  like: 'LIKE',
  notLike: 'NOT LIKE',
  ilike: 'ILIKE',
  notILike: 'NOT ILIKE',
  in: 'IN',
  notIn: 'NOT IN',
};

function binaryPrec(op: BinaryOp): number {
  switch (op) {
    case '+':
    case '-':
      return PREC.Additive;
    case '*':
    case '/':
    case '%':
    case 'div':
      return PREC.Multiplicative;
    default:
      return PREC.Compare;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  "'": "\\'",
  '`': '\\`',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\0': '\\0',
  '\b': '\\b',
  '\f': '\\f',
};

function escapeChar(c: string): string {
  return ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
}

/** Escapes backslashes, control characters and the quote; the rest (all of Unicode) stays as it is. */
function escapeText(value: string, quote: number): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c || c === quote) {
      out += value.slice(from, i) + escapeChar(value[i]!);
      from = i + 1;
    }
  }
  return from === 0 ? value : out + value.slice(from);
}

/** A string literal ClickHouse and this dialect read back as `value`. */
export function quoteString(value: string): string {
  return `'${escapeText(value, 0x27)}'`;
}

/** A name, backtick-quoted when bare it would not read back as that name. */
/** Names seen so far and how they print: the same few (columns, tables) are printed in every query. */
const quoted = new Map<string, string>();

export function quoteName(name: string): string {
  let out = quoted.get(name);
  if (out === undefined) {
    out = BARE_NAME.test(name) && !QUOTE_IF.has(name.toUpperCase()) ? name : backtick(name);
    // Bounded: a query's own names (aliases) are unbounded in number; past this, they are just not kept.
    if (quoted.size < 10_000) quoted.set(name, out);
  }
  return out;
}

function member(name: string): string {
  return BARE_NAME.test(name) ? name : backtick(name);
}

function backtick(name: string): string {
  return `\`${escapeText(name, 0x60)}\``;
}

/** A value as a dialect literal: `'it\'s'`, `42`, `inf`, `NULL`, `[1, 2]`. */
export function literal(value: InlineValue): string {
  if (value === null) return 'NULL';
  switch (typeof value) {
    case 'string':
      return quoteString(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return String(value);
    case 'number':
      if (Number.isNaN(value)) return 'nan';
      if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
      return String(value);
    default:
      return `[${value.map(literal).join(', ')}]`;
  }
}

class Printer {
  private readonly inline: Readonly<Record<string, InlineValue>> | undefined;
  private readonly allParentheses: boolean;
  private readonly placeholder: ((name: string) => string) | undefined;

  constructor(options: PrintOptions) {
    this.inline = options.inline;
    this.allParentheses = options.parentheses === 'all';
    this.placeholder = options.placeholder;
  }

  query(q: Query): string {
    if (q.kind === 'select') return this.select(q);
    const members = q.queries.map((m) => (m.kind === 'select' ? this.select(m) : `(${this.query(m)})`));
    if (q.kind === 'unionAll') return members.join(' UNION ALL ');
    return members.map((m, i) => (i === 0 ? m : `${q.operators[i - 1]!} ${m}`)).join(' ');
  }

  private select(s: SelectQuery): string {
    const parts: string[] = [];
    if (s.with.length > 0) parts.push(`WITH ${s.with.map((w) => this.withItem(w)).join(', ')}`);
    parts.push(`SELECT ${s.distinct ? 'DISTINCT ' : ''}${this.columns(s.columns)}`);
    if (s.from) {
      parts.push(`FROM ${this.table(s.from.table)}`);
      for (const j of s.from.joins) parts.push(this.join(j));
    }
    if (s.prewhere) parts.push(`PREWHERE ${this.expr(s.prewhere, 0)}`);
    if (s.where) parts.push(`WHERE ${this.expr(s.where, 0)}`);
    if (s.groupBy && s.groupByModifier === 'groupingSets') {
      const sets = s.groupBy.map(
        (set) => `(${set.kind === 'tuple' ? this.list(set.items) : this.expr(set, 0)})`,
      );
      parts.push(`GROUP BY GROUPING SETS (${sets.join(', ')})`);
      if (s.withTotals) parts.push('WITH TOTALS');
    } else if (s.groupBy) {
      parts.push(`GROUP BY ${this.list(s.groupBy)}`);
      if (s.groupByModifier) parts.push(`WITH ${s.groupByModifier.toUpperCase()}`);
      if (s.withTotals) parts.push('WITH TOTALS');
    }
    if (s.having) parts.push(`HAVING ${this.expr(s.having, 0)}`);
    if (s.window.length > 0) {
      parts.push(
        `WINDOW ${s.window.map((w) => `${quoteName(w.name)} AS ${this.windowSpec(w.spec)}`).join(', ')}`,
      );
    }
    if (s.orderBy) parts.push(`ORDER BY ${this.orderItems(s.orderBy)}`);
    if (s.limitBy)
      parts.push(`${this.limit(s.limitBy.limit, s.limitBy.offset)} BY ${this.list(s.limitBy.by)}`);
    if (s.limit) parts.push(this.limit(s.limit, s.offset) + (s.limitWithTies ? ' WITH TIES' : ''));
    else if (s.offset) parts.push(`OFFSET ${this.expr(s.offset, 0)}`);
    return parts.join(' ');
  }

  private limit(limit: Expr, offset: Expr | null): string {
    return `LIMIT ${this.expr(limit, 0)}${offset ? ` OFFSET ${this.expr(offset, 0)}` : ''}`;
  }

  private withItem(w: WithItem): string {
    return w.kind === 'withQuery'
      ? `${quoteName(w.name)} AS (${this.query(w.query)})`
      : `${this.expr(w.expr, 0)} AS ${quoteName(w.name)}`;
  }

  private columns(columns: ColumnExpr[]): string {
    return columns
      .map((c) => (c.kind === 'alias' ? `${this.expr(c.expr, 0)} AS ${quoteName(c.alias)}` : this.expr(c, 0)))
      .join(', ');
  }

  private table(t: TableExpr): string {
    const alias = t.alias === null ? '' : ` AS ${quoteName(t.alias)}`;
    switch (t.kind) {
      case 'table':
        return `${t.database === null ? '' : `${quoteName(t.database)}.`}${quoteName(t.name)}${alias}${t.final ? ' FINAL' : ''}${t.sample ? ` ${this.sample(t.sample)}` : ''}`;
      case 'tableFunction':
        return `${quoteName(t.name)}(${this.list(t.args)})${alias}`;
      case 'tableSubquery':
        return `(${this.query(t.query)})${alias}`;
    }
  }

  private sample(s: SampleClause): string {
    // A ratio is a number or `a/b` of two (the parser makes no other), printed as ClickHouse writes it.
    const ratio = (e: Expr): string =>
      e.kind === 'binary' ? `${this.expr(e.left, 0)}/${this.expr(e.right, 0)}` : this.expr(e, 0);
    return `SAMPLE ${ratio(s.ratio)}${s.offset ? ` OFFSET ${ratio(s.offset)}` : ''}`;
  }

  private join(j: JoinClause): string {
    if (j.kind === 'arrayJoin') return `${j.left ? 'LEFT ' : ''}ARRAY JOIN ${this.columns(j.items)}`;
    return `${this.joinWords(j)} ${this.table(j.table)}${
      j.on ? ` ON ${this.expr(j.on, 0)}` : j.using ? ` USING (${j.using.map(quoteName).join(', ')})` : ''
    }`;
  }

  private joinWords(j: Join): string {
    return `${j.type.toUpperCase()}${j.strictness ? ` ${j.strictness.toUpperCase()}` : ''} JOIN`;
  }

  private orderItems(items: OrderItem[]): string {
    return items
      .map(
        (o) =>
          `${this.expr(o.expr, 0)}${o.descending ? ' DESC' : ''}${o.nulls ? ` NULLS ${o.nulls.toUpperCase()}` : ''}`,
      )
      .join(', ');
  }

  private windowSpec(w: WindowSpec): string {
    const parts: string[] = [];
    if (w.partitionBy) parts.push(`PARTITION BY ${this.list(w.partitionBy)}`);
    if (w.orderBy) parts.push(`ORDER BY ${this.orderItems(w.orderBy)}`);
    if (w.frame) {
      const unit = w.frame.unit.toUpperCase();
      parts.push(
        w.frame.end
          ? `${unit} BETWEEN ${this.frameBound(w.frame.start)} AND ${this.frameBound(w.frame.end)}`
          : `${unit} ${this.frameBound(w.frame.start)}`,
      );
    }
    return `(${parts.join(' ')})`;
  }

  private frameBound(b: FrameBound): string {
    if (b.type === 'currentRow') return 'CURRENT ROW';
    const offset = b.offset ? this.expr(b.offset, PREC.Between + 1) : 'UNBOUNDED';
    return `${offset} ${b.type.toUpperCase()}`;
  }

  private list(items: Expr[]): string {
    return items.map((e) => this.expr(e, 0)).join(', ');
  }

  /** How tightly `e` binds as printed; below the context's `minPrec` it needs parentheses. */
  private prec(e: Expr): number {
    switch (e.kind) {
      case 'lambda':
        return PREC.Lambda;
      case 'ternary':
        return PREC.Ternary;
      case 'or':
        return PREC.Or;
      case 'and':
        return PREC.And;
      case 'concat':
        return PREC.Concat;
      case 'not':
        return PREC.Not;
      case 'isNull':
        return PREC.IsNull;
      case 'between':
        return PREC.Between;
      case 'binary':
        return binaryPrec(e.op);
      case 'negate':
        return PREC.Unary;
      case 'placeholder':
        return this.inlined(e.name)?.startsWith('-') ? PREC.Unary : PREC.Atom;
      default:
        return PREC.Atom;
    }
  }

  expr(e: Expr, minPrec: number): string {
    const text = this.raw(e);
    const prec = this.prec(e);
    return prec < minPrec || (this.allParentheses && minPrec > 0 && prec < PREC.Atom) ? `(${text})` : text;
  }

  private inlined(name: string): string | undefined {
    const values = this.inline;
    return values !== undefined && Object.hasOwn(values, name) ? literal(values[name]!) : undefined;
  }

  private raw(e: Expr): string {
    switch (e.kind) {
      case 'number':
        return e.text;
      case 'string':
        return quoteString(e.value);
      case 'boolean':
        return e.value ? 'true' : 'false';
      case 'null':
        return 'NULL';
      case 'placeholder':
        return this.inlined(e.name) ?? this.placeholder?.(e.name) ?? `{variables.${e.name}}`;
      case 'field':
        return e.chain.map((part, i) => (i === 0 ? quoteName(part) : member(part))).join('.');
      case 'star':
        return e.table === null
          ? '*'
          : `${e.table.map((p, i) => (i === 0 ? quoteName(p) : member(p))).join('.')}.*`;
      case 'call': {
        const name =
          BARE_NAME.test(e.name) && !QUOTE_IF_CALLED.has(e.name.toUpperCase()) ? e.name : backtick(e.name);
        const params = e.params ? `(${this.list(e.params)})` : '';
        const over =
          e.over === null
            ? ''
            : ` OVER ${e.over.kind === 'windowRef' ? quoteName(e.over.name) : this.windowSpec(e.over)}`;
        return `${name}${params}(${e.distinct ? 'DISTINCT ' : ''}${this.list(e.args)})${over}`;
      }
      case 'lambda': {
        const params =
          e.params.length === 1 ? quoteName(e.params[0]!) : `(${e.params.map(quoteName).join(', ')})`;
        return `${params} -> ${this.expr(e.body, 0)}`;
      }
      case 'array':
        return `[${this.list(e.items)}]`;
      case 'tuple':
        return e.items.length === 1 ? `(${this.expr(e.items[0]!, 0)},)` : `(${this.list(e.items)})`;
      case 'index':
        return `${this.object(e.object, false)}[${this.expr(e.index, 0)}]`;
      case 'tupleAccess':
        return typeof e.element === 'number'
          ? `${this.object(e.object, false)}.${e.element}`
          : `${this.object(e.object, true)}.${member(e.element)}`;
      case 'binary': {
        const p = binaryPrec(e.op);
        return `${this.expr(e.left, p)} ${OP_TEXT[e.op]} ${this.expr(e.right, p + 1)}`;
      }
      case 'and':
      case 'or':
      case 'concat': {
        const p = this.prec(e);
        const op = e.kind === 'and' ? ' AND ' : e.kind === 'or' ? ' OR ' : ' || ';
        return e.operands.map((o) => this.expr(o, p + 1)).join(op);
      }
      case 'not':
        return `NOT ${this.expr(e.operand, PREC.Not)}`;
      case 'negate': {
        const operand = this.expr(e.operand, PREC.Unary);
        // `--` would start a comment.
        return operand.startsWith('-') ? `-(${operand})` : `-${operand}`;
      }
      case 'between':
        return `${this.expr(e.expr, PREC.Between)} ${e.not ? 'NOT BETWEEN' : 'BETWEEN'} ${this.expr(e.low, PREC.Between + 1)} AND ${this.expr(e.high, PREC.Between + 1)}`;
      case 'isNull':
        return `${this.expr(e.operand, PREC.IsNull)} IS ${e.not ? 'NOT NULL' : 'NULL'}`;
      case 'ternary':
        // ClickHouse wants a nested ternary in parentheses, so everything below OR gets them.
        return `${this.expr(e.condition, PREC.Or)} ? ${this.expr(e.whenTrue, PREC.Or)} : ${this.expr(e.whenFalse, PREC.Or)}`;
      case 'case': {
        const subject = e.subject ? ` ${this.expr(e.subject, 0)}` : '';
        const branches = e.branches
          .map((b) => ` WHEN ${this.expr(b.when, 0)} THEN ${this.expr(b.result, 0)}`)
          .join('');
        const otherwise = e.otherwise ? ` ELSE ${this.expr(e.otherwise, 0)}` : '';
        return `CASE${subject}${branches}${otherwise} END`;
      }
      case 'interval':
        return `INTERVAL ${this.expr(e.value, PREC.Unary)} ${e.unit.toUpperCase()}`;
      case 'cast':
        return `CAST(${this.expr(e.expr, 0)} AS ${this.type(e.type)})`;
      case 'subquery':
        return `(${this.query(e.query)})`;
      case 'tag':
        return this.tag(e);
      case 'dict':
        return `{${e.entries.map((x) => `${this.expr(x.key, 0)}: ${this.expr(x.value, 0)}`).join(', ')}}`;
      case 'alias':
        // In parentheses wherever it stands: `(a + 1 AS b) * 2`, `(sumMap(k, v) AS m).1`.
        return `(${this.expr(e.expr, 0)} AS ${quoteName(e.alias)})`;
    }
  }

  /** A tag as HogQL prints one: every child but a tag in braces, so text reads back as the same string. */
  private tag(t: Tag): string {
    const child = (c: Expr): string => (c.kind === 'tag' ? this.tag(c) : `{${this.expr(c, 0)}}`);
    let children = '';
    const attributes: string[] = [];
    for (const a of t.attributes) {
      if (a.name === 'children')
        children += (Array.isArray(a.value) ? a.value : [a.value]).map(child).join('');
      else if (Array.isArray(a.value)) attributes.push(`${a.name}={[${this.list(a.value)}]}`);
      else
        attributes.push(
          a.value.kind === 'string'
            ? `${a.name}=${quoteString(a.value.value)}`
            : `${a.name}={${this.expr(a.value, 0)}}`,
        );
    }
    const head = `<${t.name}${attributes.map((a) => ` ${a}`).join('')}`;
    return children === '' ? `${head} />` : `${head}>${children}</${t.name}>`;
  }

  /**
   * The left side of `[i]` or `.x`. A number needs parentheses (`(1).1` is not `1.1`), and so does a name
   * before `.name` (`(a).b` is element b of a; `a.b` would be one longer name).
   */
  private object(e: Expr, named: boolean): string {
    const text = this.expr(e, PREC.Atom);
    if (text.startsWith('(')) return text;
    if (/^[0-9.]/.test(text) || (named && e.kind === 'field')) return `(${text})`;
    return text;
  }

  private type(t: TypeExpr): string {
    return t.args.length === 0
      ? member(t.name)
      : `${member(t.name)}(${t.args.map((a) => this.typeArg(a)).join(', ')})`;
  }

  private typeArg(a: TypeArg): string {
    switch (a.kind) {
      case 'type':
        return this.type(a);
      case 'namedType':
        return `${member(a.name)} ${this.type(a.type)}`;
      case 'number':
        return a.text;
      case 'string':
        return quoteString(a.value);
    }
  }
}
