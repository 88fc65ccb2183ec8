import type { BinaryOp, Call, Case, Expr, Query, Span, Tag, TagAttribute, TypeExpr } from './ast.ts';
import { TokenCursor } from './cursor.ts';
import { describePosition } from './errors.ts';
import { FUNCTION_WORDS, NOT_AN_EXPRESSION } from './keywords.ts';
import type { Token } from './tokens.ts';

/**
 * ClickHouse's operator precedence (its ExpressionListParsers), loosest first. The printer uses the same
 * numbers to decide where parentheses go, so a printed tree reads back as the same tree.
 */
export const PREC = {
  Lambda: 1,
  Ternary: 2,
  Or: 3,
  And: 4,
  Not: 5,
  /** HogQL's `??`: looser than comparisons and IS NULL, tighter than NOT (HogQL's grammar). */
  Nullish: 6,
  IsNull: 7,
  Between: 8,
  Compare: 9,
  Concat: 10,
  Additive: 11,
  Multiplicative: 12,
  Unary: 13,
  Atom: 20,
} as const;

type Infix =
  | { kind: 'and' | 'or' | 'concat' | 'isNull' | 'nullish'; prec: number }
  | { kind: 'between'; prec: number; not: boolean; width: number }
  | { kind: 'binary'; prec: number; op: BinaryOp; width: number };

const PUNCT_INFIX: Readonly<Record<string, Infix>> = {
  '=': { kind: 'binary', prec: PREC.Compare, op: '=', width: 1 },
  '==': { kind: 'binary', prec: PREC.Compare, op: '=', width: 1 },
  '!=': { kind: 'binary', prec: PREC.Compare, op: '!=', width: 1 },
  '<>': { kind: 'binary', prec: PREC.Compare, op: '!=', width: 1 },
  '<': { kind: 'binary', prec: PREC.Compare, op: '<', width: 1 },
  '<=': { kind: 'binary', prec: PREC.Compare, op: '<=', width: 1 },
  '>': { kind: 'binary', prec: PREC.Compare, op: '>', width: 1 },
  '>=': { kind: 'binary', prec: PREC.Compare, op: '>=', width: 1 },
  '||': { kind: 'concat', prec: PREC.Concat },
  '??': { kind: 'nullish', prec: PREC.Nullish },
  '=~': { kind: 'binary', prec: PREC.Compare, op: 'regex', width: 1 },
  '~': { kind: 'binary', prec: PREC.Compare, op: 'regex', width: 1 },
  '!~': { kind: 'binary', prec: PREC.Compare, op: 'notRegex', width: 1 },
  '=~*': { kind: 'binary', prec: PREC.Compare, op: 'iRegex', width: 1 },
  '~*': { kind: 'binary', prec: PREC.Compare, op: 'iRegex', width: 1 },
  '!~*': { kind: 'binary', prec: PREC.Compare, op: 'notIRegex', width: 1 },
  '+': { kind: 'binary', prec: PREC.Additive, op: '+', width: 1 },
  '-': { kind: 'binary', prec: PREC.Additive, op: '-', width: 1 },
  '*': { kind: 'binary', prec: PREC.Multiplicative, op: '*', width: 1 },
  '/': { kind: 'binary', prec: PREC.Multiplicative, op: '/', width: 1 },
  '%': { kind: 'binary', prec: PREC.Multiplicative, op: '%', width: 1 },
};

const WORD_INFIX: Readonly<Record<string, Infix>> = {
  OR: { kind: 'or', prec: PREC.Or },
  AND: { kind: 'and', prec: PREC.And },
  IS: { kind: 'isNull', prec: PREC.IsNull },
  BETWEEN: { kind: 'between', prec: PREC.Between, not: false, width: 1 },
  LIKE: { kind: 'binary', prec: PREC.Compare, op: 'like', width: 1 },
  ILIKE: { kind: 'binary', prec: PREC.Compare, op: 'ilike', width: 1 },
  IN: { kind: 'binary', prec: PREC.Compare, op: 'in', width: 1 },
  DIV: { kind: 'binary', prec: PREC.Multiplicative, op: 'div', width: 1 },
  MOD: { kind: 'binary', prec: PREC.Multiplicative, op: '%', width: 1 },
};

const NOT_INFIX: Readonly<Record<string, Infix>> = {
  BETWEEN: { kind: 'between', prec: PREC.Between, not: true, width: 2 },
  LIKE: { kind: 'binary', prec: PREC.Compare, op: 'notLike', width: 2 },
  ILIKE: { kind: 'binary', prec: PREC.Compare, op: 'notILike', width: 2 },
  IN: { kind: 'binary', prec: PREC.Compare, op: 'notIn', width: 2 },
};

const call = (name: string, args: Expr[], pos?: Span): Call => ({
  kind: 'call',
  name,
  params: null,
  args,
  distinct: false,
  over: null,
  ...(pos ? { pos } : {}),
});

/** HogQL's `??`, as the call HogQL's parser makes of it. */
function hogqlOperator(left: Expr, right: Expr, pos: Span): Expr {
  return call('ifNull', [left, right], pos);
}

/**
 * Expressions, by precedence climbing: operators, operands and the simple primaries. The forms with their own
 * syntax come from form-parser.ts and the query grammar (subqueries) from parser.ts, both subclasses.
 */
export abstract class ExpressionParser extends TokenCursor {
  /**
   * `{filters.dateRange.from}` / `.to}` placeholders not yet taken by a comparison. With no date range, HogQL
   * makes the comparison that holds one true (`timestamp >= {filters.dateRange.from}` filters nothing) and
   * refuses one anywhere else; the statement's parser fails on any left here.
   */
  protected readonly dateRangePlaceholders = new Set<Expr>();

  /** A SELECT or a UNION ALL of them, for subqueries. */
  protected abstract parseQuery(): Query;
  /** The forms with their own syntax (form-parser.ts): calls, CASE, CAST, INTERVAL, types. */
  protected abstract parseCall(): Call;
  protected abstract parseCase(): Case;
  protected abstract parseCast(): Expr;
  protected abstract parseInterval(): Expr;
  protected abstract parseType(): TypeExpr;

  /** Whether `t` can begin an expression (for messages that name what was missing). */
  protected startsExpression(): boolean {
    const t = this.tok;
    switch (t.type) {
      case 'number':
      case 'string':
      case 'quoted':
        return true;
      case 'word':
        return (
          !NOT_AN_EXPRESSION.has(t.upper) || (FUNCTION_WORDS.has(t.upper) && this.isPunct('(', this.peek()))
        );
      case 'punct':
        return ('([{*-<'.includes(t.value) && t.value.length === 1) || t.value === "f'";
      case 'text':
      case 'eof':
        return false;
    }
  }

  /** Fails with `expected an expression <context>` unless one starts here. */
  protected requireExpression(context: string): void {
    if (this.startsExpression()) return;
    if (this.isKeyword('SELECT') || this.isKeyword('WITH'))
      this.fail('a subquery must be in parentheses: (SELECT …)');
    this.fail(`expected an expression ${context}, found ${this.describe()}`);
  }

  protected parseExpr(): Expr {
    return this.parseTernary();
  }

  /** An expression maybe named where it stands, `expr AS name` (in parentheses and function arguments). */
  protected parseNamedExpr(): Expr {
    const first = this.tok;
    const expr = this.parseExpr();
    if (!this.acceptKeyword('AS')) return expr;
    const alias = this.expectName('a name after AS');
    return { kind: 'alias', expr, alias, pos: this.span(first) };
  }

  protected parseExprList(context: string): Expr[] {
    this.requireExpression(context);
    const items = [this.parseExpr()];
    while (this.acceptPunct(',')) {
      this.requireExpression("after ','");
      items.push(this.parseExpr());
    }
    return items;
  }

  private parseTernary(): Expr {
    const first = this.tok;
    const condition = this.parseBinary(PREC.Or);
    if (!this.isPunct('?')) return condition;
    const question = this.next();
    this.enter(question);
    const whenTrue = this.parseTernary();
    if (!this.isPunct(':')) {
      this.fail(`expected ':' to go with '?' at ${describePosition(question)}, found ${this.describe()}`);
    }
    this.next();
    const whenFalse = this.parseTernary();
    this.leave();
    return { kind: 'ternary', condition, whenTrue, whenFalse, pos: this.span(first) };
  }

  private infixAt(): Infix | null {
    const t = this.tok;
    if (t.type === 'punct') {
      if (t.value === '->') {
        this.fail(
          "'->' makes a lambda, which needs a name or (names) before it and may stand only as a function argument",
        );
      }
      return PUNCT_INFIX[t.value] ?? null;
    }
    if (t.type !== 'word') return null;
    if (t.upper === 'NOT') {
      const after = this.peek();
      return after.type === 'word' ? (NOT_INFIX[after.upper] ?? null) : null;
    }
    if (t.upper === 'GLOBAL' && (this.isKeyword('IN', this.peek()) || this.isKeyword('NOT', this.peek()))) {
      this.fail('GLOBAL IN is not supported; write IN');
    }
    return WORD_INFIX[t.upper] ?? null;
  }

  /** Operators binding at least as tightly as `minPrec`, left to right. */
  protected parseBinary(minPrec: number): Expr {
    const first = this.tok;
    let left = this.parseOperand();
    let chain = 0;
    for (;;) {
      const t = this.tok;
      const infix = this.infixAt();
      if (infix === null || infix.prec < minPrec) return left;
      // A left-deep chain (a + b + c + …) nests as deeply as it is long.
      if (this.depth + ++chain > this.maxDepth) this.tooDeep(t);
      switch (infix.kind) {
        case 'and':
        case 'or':
        case 'concat': {
          // Chains are one node, as ClickHouse merges them: a AND b AND c is and(a, b, c).
          const operands = [left];
          const op = infix.kind === 'and' ? 'AND' : infix.kind === 'or' ? 'OR' : '||';
          while (op === '||' ? this.acceptPunct('||') : this.acceptKeyword(op)) {
            this.requireExpression(op === '||' ? "after '||'" : `after ${op}`);
            operands.push(this.parseBinary(infix.prec + 1));
          }
          left = { kind: infix.kind, operands, pos: this.span(first) };
          break;
        }
        case 'isNull': {
          this.next();
          const not = this.acceptKeyword('NOT');
          if (!this.acceptKeyword('NULL')) {
            this.fail(`expected NULL after ${not ? 'IS NOT' : 'IS'}, found ${this.describe()}`);
          }
          left = { kind: 'isNull', not, operand: left, pos: this.span(first) };
          break;
        }
        case 'between': {
          this.index += infix.width;
          this.requireExpression('after BETWEEN');
          const low = this.parseBinary(PREC.Between + 1);
          if (!this.acceptKeyword('AND')) {
            this.fail(`expected AND to go with BETWEEN at ${describePosition(t)}, found ${this.describe()}`);
          }
          this.requireExpression('after BETWEEN … AND');
          const high = this.parseBinary(PREC.Between + 1);
          left = { kind: 'between', not: infix.not, expr: left, low, high, pos: this.span(first) };
          break;
        }
        case 'nullish': {
          this.next();
          this.requireExpression(`after '${t.value}'`);
          const right = this.parseBinary(infix.prec + 1);
          left = hogqlOperator(left, right, this.span(first));
          break;
        }
        case 'binary': {
          this.index += infix.width;
          this.requireExpression(
            `after '${this.source(t)}${infix.width === 2 ? ` ${this.source(this.peek(-1))}` : ''}'`,
          );
          const right = this.parseBinary(infix.prec + 1);
          left = { kind: 'binary', op: infix.op, left, right, pos: this.span(first) };
          const bounds = this.dateRangePlaceholders;
          if (bounds.size > 0 && (bounds.delete(left.left) || bounds.delete(left.right)))
            left = { kind: 'boolean', value: true, pos: left.pos };
          break;
        }
      }
    }
  }

  /** Prefix operators, then a primary with its postfix operators. */
  protected parseOperand(): Expr {
    const t = this.tok;
    if (this.isKeyword('NOT')) {
      this.next();
      this.enter(t);
      this.requireExpression('after NOT');
      const operand = this.parseBinary(PREC.Not);
      this.leave();
      return { kind: 'not', operand, pos: this.span(t) };
    }
    if (this.isPunct('-')) {
      this.next();
      this.enter(t);
      this.requireExpression("after '-'");
      const operand = this.parseOperand();
      this.leave();
      return { kind: 'negate', operand, pos: this.span(t) };
    }
    return this.parsePostfix(this.parsePrimary(), t);
  }

  /** `a[i]`, `t.1`, `f(x).name`, `x::Type`, HogQL's `a?.b` and `a?.[i]`, left to right. */
  private parsePostfix(start: Expr, first: Token): Expr {
    let expr = start;
    let chain = 0;
    for (;;) {
      const t = this.tok;
      if (this.isPunct('?') && this.isPunct('.', this.peek())) {
        // `?.` reads a key or an element, null when there is none: what `[…]` already does in ClickHouse
        // for maps and JSON, so it is an index.
        this.index += 2;
        let index: Expr;
        if (this.isPunct('[')) {
          const open = this.next();
          this.enter(open);
          this.requireExpression("after '?.['");
          index = this.parseExpr();
          this.expectClose(open);
          this.leave();
        } else if (this.isName() || this.tok.type === 'number') {
          const key = this.next();
          index =
            key.type === 'number'
              ? { kind: 'number', text: key.value, pos: this.span(key) }
              : { kind: 'string', value: key.value, pos: this.span(key) };
        } else {
          this.fail(`expected a name or '[' after '?.', found ${this.describe()}`);
        }
        expr = { kind: 'index', object: expr, index, pos: this.span(first) };
      } else if (this.isPunct('[')) {
        this.next();
        this.enter(t);
        this.requireExpression("after '['");
        const index = this.parseExpr();
        this.expectClose(t);
        this.leave();
        expr = { kind: 'index', object: expr, index, pos: this.span(first) };
      } else if (this.isPunct('.')) {
        const after = this.peek();
        let element: number | string;
        if (after.type === 'number' && /^\d{1,9}$/.test(after.value)) element = Number(after.value);
        else if (this.isName(after)) element = after.value;
        else this.fail(`expected a name or a tuple position after '.', found ${this.describe(after)}`, after);
        this.index += 2;
        expr = { kind: 'tupleAccess', object: expr, element, pos: this.span(first) };
      } else if (this.isPunct('::')) {
        this.next();
        const type = this.parseType();
        expr = { kind: 'cast', expr, type, pos: this.span(first) };
      } else {
        return expr;
      }
      if (this.depth + ++chain > this.maxDepth) this.tooDeep(t);
    }
  }

  private parsePrimary(): Expr {
    const t = this.tok;
    switch (t.type) {
      case 'number':
        this.next();
        return { kind: 'number', text: t.value, pos: this.span(t) };
      case 'string':
        this.next();
        return { kind: 'string', value: t.value, pos: this.span(t) };
      case 'quoted':
        return this.isPunct('(', this.peek()) ? this.parseCall() : this.parseField();
      case 'word':
        return this.parseWord();
      case 'punct':
        switch (t.value) {
          case '(':
            return this.parseParenthesized();
          case '[':
            return this.parseArray();
          case '{':
            return this.parseBraces();
          case '<':
            // The lexer opens a tag only with a name right after the `<`; any other `<` here is misplaced.
            if (this.peek().type === 'word' && this.peek().offset === t.end) return this.parseTag();
            break;
          case "f'":
            return this.parseTemplate();
          case '*':
            this.next();
            return { kind: 'star', table: null, pos: this.span(t) };
        }
        return this.fail(`expected an expression, found ${this.describe()}`);
      case 'text':
        return this.fail(`expected an expression, found ${this.describe()}`);
      case 'eof':
        return this.fail('expected an expression, found end of query');
    }
  }

  private parseWord(): Expr {
    const t = this.tok;
    switch (t.upper) {
      case 'NULL':
        this.next();
        return { kind: 'null', pos: this.span(t) };
      case 'TRUE':
      case 'FALSE':
        this.next();
        return { kind: 'boolean', value: t.upper === 'TRUE', pos: this.span(t) };
      case 'INF':
      case 'NAN':
        this.next();
        return { kind: 'number', text: t.value.toLowerCase(), pos: this.span(t) };
      case 'CASE':
        return this.parseCase();
      case 'INTERVAL':
        return this.parseInterval();
      case 'CAST':
        if (this.isPunct('(', this.peek())) return this.parseCast();
        break;
      case 'SELECT':
      case 'WITH':
        this.fail('a subquery must be in parentheses: (SELECT …)');
    }
    if (this.isPunct('(', this.peek()) && (!NOT_AN_EXPRESSION.has(t.upper) || FUNCTION_WORDS.has(t.upper))) {
      return this.parseCall();
    }
    if (NOT_AN_EXPRESSION.has(t.upper)) this.fail(`expected an expression, found ${this.describe()}`);
    if (this.isPunct('->', this.peek())) this.fail('a lambda (x -> …) may stand only as a function argument');
    return this.parseField();
  }

  /** `a`, `a.b.c`, `t.*`. */
  private parseField(): Expr {
    const first = this.next();
    const chain = [first.value];
    while (this.isPunct('.')) {
      const after = this.peek();
      if (this.isName(after)) {
        chain.push(after.value);
        this.index += 2;
      } else if (this.isPunct('*', after)) {
        this.index += 2;
        return { kind: 'star', table: chain, pos: this.span(first) };
      } else {
        break;
      }
    }
    return { kind: 'field', chain, pos: this.span(first) };
  }

  private parseParenthesized(): Expr {
    const open = this.next();
    this.enter(open);
    if (this.isKeyword('SELECT') || this.isKeyword('WITH')) {
      const query = this.parseQuery();
      this.expectClose(open);
      this.leave();
      return { kind: 'subquery', query, pos: this.span(open) };
    }
    if (this.acceptPunct(')')) {
      this.leave();
      return { kind: 'tuple', items: [], pos: this.span(open) };
    }
    this.requireExpression("after '('");
    const first = this.parseNamedExpr();
    if (!this.isPunct(',')) {
      this.expectClose(open);
      this.leave();
      return first;
    }
    const items = [first];
    while (this.acceptPunct(',')) {
      if (this.isPunct(')')) break;
      this.requireExpression("after ','");
      items.push(this.parseNamedExpr());
    }
    this.expectClose(open);
    this.leave();
    return { kind: 'tuple', items, pos: this.span(open) };
  }

  private parseArray(): Expr {
    const open = this.next();
    return { kind: 'array', items: this.parseListToClose(open), pos: this.span(open) };
  }

  /**
   * After `(` or `[`: expressions separated by commas, maybe none, then the closing bracket. An array may end
   * in a comma (`[1, 2,]`), as HogQL's grammar allows.
   */
  protected parseListToClose(open: Token): Expr[] {
    this.enter(open);
    const items: Expr[] = [];
    const close = open.value === '(' ? ')' : ']';
    if (!this.isPunct(close)) {
      do {
        if (close === ']' && items.length > 0 && this.isPunct(']')) break;
        this.requireExpression(items.length === 0 ? `after '${open.value}'` : "after ','");
        items.push(this.parseExpr());
      } while (this.acceptPunct(','));
    }
    this.expectClose(open);
    this.leave();
    return items;
  }

  /** `{…}`: a placeholder (`{variables.name}`, `{filters}`), or HogQL's object literal `{'key': value}`. */
  private parseBraces(): Expr {
    const head = this.peek();
    const placeholder =
      head.type === 'word' &&
      (head.value === 'variables' || head.value === 'filters' || this.isPunct(':', this.peek(2)));
    if (placeholder || (this.isName(head) && this.isPunct('}', this.peek(2)))) return this.parsePlaceholder();
    const open = this.next();
    this.enter(open);
    const entries: { key: Expr; value: Expr }[] = [];
    while (!this.isPunct('}')) {
      this.requireExpression(entries.length === 0 ? "after '{'" : "after ','");
      const key = this.parseExpr();
      if (entries.length === 0 && this.isPunct('}')) {
        this.fail(`expected a placeholder like {variables.name}, found ${this.describe(head)}`, head);
      }
      if (!this.acceptPunct(':')) {
        this.fail(`expected ':' after the key of an object literal {'key': value}, found ${this.describe()}`);
      }
      this.requireExpression("after ':'");
      entries.push({ key, value: this.parseExpr() });
      if (!this.acceptPunct(',')) break;
    }
    this.expectClose(open);
    this.leave();
    return { kind: 'dict', entries, pos: this.span(open) };
  }

  /**
   * `{variables.name}`; `{filters}` and `{filters.dateRange.from}` / `.to}`, HogQL's filters of a dashboard,
   * which a query run here has none of. ClickHouse's own `{name:Type}` parameters are refused: Weir binds
   * the values.
   */
  private parsePlaceholder(): Expr {
    const open = this.next();
    const head = this.tok;
    if (this.isName(head) && this.isPunct(':', this.peek())) {
      this.fail(
        `query parameters like {${head.value}:Type} are not supported; write {variables.${head.value}}`,
        head,
      );
    }
    if (head.type === 'word' && head.value === 'filters') {
      this.next();
      if (this.acceptPunct('}')) {
        // With no filters, HogQL's `{filters}` is true.
        return { kind: 'boolean', value: true, pos: this.span(open) };
      }
      const path: string[] = [];
      while (this.acceptPunct('.')) path.push(this.expectName("a name after '.'"));
      this.expectClose(open);
      const name = `filters.${path.join('.')}`;
      if (name !== 'filters.dateRange.from' && name !== 'filters.dateRange.to') {
        this.fail(
          `{${name}} is not a filters placeholder: write {filters}, {filters.dateRange.from} or {filters.dateRange.to}`,
          open,
        );
      }
      const placeholder: Expr = { kind: 'placeholder', name, pos: this.span(open) };
      this.dateRangePlaceholders.add(placeholder);
      return placeholder;
    }
    if (!(head.type === 'word' && head.value === 'variables')) {
      this.fail(`expected a placeholder like {variables.name}, found ${this.describe()}`);
    }
    this.next();
    this.expectPunct('.', "after 'variables' in a placeholder");
    if (this.tok.type !== 'word')
      this.fail(`expected a variable name after '{variables.', found ${this.describe()}`);
    const name = this.next().value;
    if (this.isPunct(':')) this.fail(`a placeholder takes no type; write {variables.${name}}`);
    this.expectClose(open);
    return { kind: 'placeholder', name, pos: this.span(open) };
  }

  /** In an f-string or a tag's children: a run of text (a string) or `{expr}`; null at anything else. */
  private parseTextPart(where: string): Expr | null {
    const t = this.tok;
    if (t.type === 'text') {
      this.next();
      return { kind: 'string', value: t.value, pos: this.span(t) };
    }
    if (!this.isPunct('{')) return null;
    const brace = this.next();
    this.requireExpression(`after '{' ${where}`);
    const expr = this.parseExpr();
    this.expectClose(brace);
    return expr;
  }

  /** HogQL's `f'text {expr} text'`: the concatenation of its parts (one part alone is itself). */
  private parseTemplate(): Expr {
    const open = this.next();
    this.enter(open);
    const parts: Expr[] = [];
    while (!this.isPunct("'")) {
      const part = this.parseTextPart('in an f-string');
      if (part !== null) {
        parts.push(part);
      } else {
        this.fail(`unexpected ${this.describe()} in an f-string`);
      }
    }
    this.next();
    this.leave();
    if (parts.length === 1) return parts[0]!;
    if (parts.length === 0) return { kind: 'string', value: '', pos: this.span(open) };
    return call('concat', parts, this.span(open));
  }

  /** A HogQLX tag: `<name attr='text' attr={expr} flag>children</name>` or `<name … />`. */
  protected parseTag(): Tag {
    const open = this.next();
    this.enter(open);
    if (this.tok.type !== 'word') this.fail(`expected the name of a tag after '<', found ${this.describe()}`);
    const name = this.next().value;
    const attributes: TagAttribute[] = [];
    while (this.tok.type === 'word') {
      const a = this.next();
      let value: Expr = { kind: 'boolean', value: true, pos: this.span(a) };
      if (this.acceptPunct('=')) {
        const v = this.tok;
        if (v.type === 'string') {
          this.next();
          value = { kind: 'string', value: v.value, pos: this.span(v) };
        } else if (this.isPunct('{')) {
          const brace = this.next();
          this.requireExpression(`after '{' in the attribute ${a.value}`);
          value = this.parseExpr();
          this.expectClose(brace);
        } else {
          this.fail(`expected a string or {expression} after '${a.value}=', found ${this.describe()}`);
        }
      }
      attributes.push({ kind: 'tagAttribute', name: a.value, value, pos: this.span(a) });
    }
    if (this.acceptPunct('/>')) {
      this.leave();
      return { kind: 'tag', name, attributes, pos: this.span(open) };
    }
    this.expectPunct('>', `to end the tag <${name}>`);
    const children: Expr[] = [];
    const childrenAt = this.tok;
    while (!this.isPunct('</')) {
      const part = this.parseTextPart('in a tag');
      if (part !== null) {
        children.push(part);
      } else if (this.isPunct('<')) {
        children.push(this.parseTag());
      } else {
        this.fail(`expected the closing tag </${name}>, found ${this.describe()}`);
      }
    }
    this.next();
    const closing = this.next();
    if (closing.value !== name) {
      this.fail(
        `the tag <${name}> is closed by </${closing.value}>; opening and closing tags must match`,
        closing,
      );
    }
    this.expectPunct('>', `to end the tag </${name}>`);
    this.leave();
    if (children.length > 0) {
      attributes.push({
        kind: 'tagAttribute',
        name: 'children',
        value: children,
        pos: this.span(childrenAt),
      });
    }
    return { kind: 'tag', name, attributes, pos: this.span(open) };
  }
}
