import type {
  BinaryOp,
  Call,
  Case,
  CaseBranch,
  Expr,
  FrameBound,
  OrderItem,
  Query,
  TypeArg,
  TypeExpr,
  WindowFrame,
  WindowSpec,
} from './ast.ts';
import { TokenCursor } from './cursor.ts';
import { describePosition } from './errors.ts';
import { FUNCTION_WORDS, INTERVAL_UNITS, NOT_AN_EXPRESSION } from './keywords.ts';
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
  IsNull: 6,
  Between: 7,
  Compare: 9,
  Concat: 10,
  Additive: 11,
  Multiplicative: 12,
  Unary: 13,
  Atom: 20,
} as const;

type Infix =
  | { kind: 'and' | 'or' | 'concat' | 'isNull'; prec: number }
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

const UNITS_LIST = 'SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR';

/** Expressions, by precedence climbing; the query grammar (subqueries) comes from the subclass. */
export abstract class ExpressionParser extends TokenCursor {
  /** A SELECT or a UNION ALL of them, for subqueries. */
  protected abstract parseQuery(): Query;

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
        return '([{*-'.includes(t.value) && t.value.length === 1;
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
        case 'binary': {
          this.index += infix.width;
          this.requireExpression(
            `after '${this.source(t)}${infix.width === 2 ? ` ${this.source(this.peek(-1))}` : ''}'`,
          );
          const right = this.parseBinary(infix.prec + 1);
          left = { kind: 'binary', op: infix.op, left, right, pos: this.span(first) };
          break;
        }
      }
    }
  }

  /** Prefix operators, then a primary with its postfix operators. */
  private parseOperand(): Expr {
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

  /** `a[i]`, `t.1`, `f(x).name`, `x::Type`, left to right. */
  private parsePostfix(start: Expr, first: Token): Expr {
    let expr = start;
    let chain = 0;
    for (;;) {
      const t = this.tok;
      if (this.isPunct('[')) {
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
            return this.parsePlaceholder();
          case '*':
            this.next();
            return { kind: 'star', table: null, pos: this.span(t) };
        }
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
    const first = this.parseExpr();
    if (!this.isPunct(',')) {
      this.expectClose(open);
      this.leave();
      return first;
    }
    const items = [first];
    while (this.acceptPunct(',')) {
      if (this.isPunct(')')) break;
      this.requireExpression("after ','");
      items.push(this.parseExpr());
    }
    this.expectClose(open);
    this.leave();
    return { kind: 'tuple', items, pos: this.span(open) };
  }

  private parseArray(): Expr {
    const open = this.next();
    this.enter(open);
    const items: Expr[] = [];
    if (!this.isPunct(']')) {
      do {
        this.requireExpression(items.length === 0 ? "after '['" : "after ','");
        items.push(this.parseExpr());
      } while (this.acceptPunct(','));
    }
    this.expectClose(open);
    this.leave();
    return { kind: 'array', items, pos: this.span(open) };
  }

  /** `{variables.name}`. ClickHouse's own `{name:Type}` parameters are refused: Weir binds the values. */
  private parsePlaceholder(): Expr {
    const open = this.next();
    const head = this.tok;
    if (this.isName(head) && this.isPunct(':', this.peek())) {
      this.fail(
        `query parameters like {${head.value}:Type} are not supported; write {variables.${head.value}}`,
        head,
      );
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

  /** `f(args)`, `f(DISTINCT x)`, `quantile(0.9)(x)`, each maybe `OVER (…)` or `OVER w`. */
  private parseCall(): Call {
    const nameTok = this.next();
    const open = this.next();
    this.enter(open);
    const afterOpen = this.tok;
    let { args, distinct } = this.parseArgs(open);
    let params: Expr[] | null = null;
    if (this.isPunct('(')) {
      if (distinct)
        this.fail('DISTINCT belongs in the second argument list of a parametric function', afterOpen);
      params = args;
      ({ args, distinct } = this.parseArgs(this.next()));
    }
    let over: Call['over'] = null;
    if (this.isKeyword('OVER')) {
      this.next();
      if (this.isPunct('(')) {
        over = this.parseWindowSpec(this.next());
      } else {
        const at = this.tok;
        over = {
          kind: 'windowRef',
          name: this.expectName("a window name or '(' after OVER"),
          pos: this.span(at),
        };
      }
    }
    this.leave();
    return { kind: 'call', name: nameTok.value, params, args, distinct, over, pos: this.span(nameTok) };
  }

  private parseArgs(open: Token): { args: Expr[]; distinct: boolean } {
    if (this.acceptPunct(')')) return { args: [], distinct: false };
    let distinct = false;
    if (this.isKeyword('DISTINCT') && !this.isPunct(')', this.peek()) && !this.isPunct(',', this.peek())) {
      this.next();
      distinct = true;
    }
    if (this.isKeyword('SELECT') || this.isKeyword('WITH')) {
      const first = this.tok;
      const query = this.parseQuery();
      this.expectClose(open);
      return { args: [{ kind: 'subquery', query, pos: this.span(first) }], distinct };
    }
    const args: Expr[] = [];
    for (;;) {
      this.requireExpression(args.length === 0 ? `after '${this.source(this.peek(-1))}'` : "after ','");
      args.push(this.parseArg());
      if (!this.acceptPunct(',')) break;
    }
    this.expectClose(open);
    return { args, distinct };
  }

  /** A function argument: an expression, or a lambda `x -> …` / `(x, y) -> …`. */
  private parseArg(): Expr {
    const first = this.tok;
    let params: string[] | null = null;
    if (this.isName() && this.isPunct('->', this.peek())) {
      params = [this.next().value];
    } else if (this.isPunct('(')) {
      params = this.lambdaParamsAhead();
    }
    if (params === null) return this.parseExpr();
    this.expectPunct('->', 'after the lambda parameters');
    this.enter(first);
    this.requireExpression("after '->'");
    const body = this.parseExpr();
    this.leave();
    return { kind: 'lambda', params, body, pos: this.span(first) };
  }

  /** At `(`: if `(a, b) ->` follows, consumes the parenthesised names and returns them. */
  private lambdaParamsAhead(): string[] | null {
    const names: string[] = [];
    let k = this.index + 1;
    for (;;) {
      const t = this.tokens[k];
      if (!t || !this.isName(t)) return null;
      names.push(t.value);
      const sep = this.tokens[k + 1];
      if (sep && this.isPunct(',', sep)) {
        k += 2;
        continue;
      }
      if (sep && this.isPunct(')', sep) && this.isPunct('->', this.tokens[k + 2] ?? sep)) {
        this.index = k + 2;
        return names;
      }
      return null;
    }
  }

  private parseCase(): Case {
    const caseTok = this.next();
    this.enter(caseTok);
    let subject: Expr | null = null;
    if (!this.isKeyword('WHEN')) {
      this.requireExpression('or WHEN after CASE');
      subject = this.parseExpr();
    }
    if (!this.isKeyword('WHEN'))
      this.fail(`expected WHEN in the CASE at ${describePosition(caseTok)}, found ${this.describe()}`);
    const branches: CaseBranch[] = [];
    while (this.isKeyword('WHEN')) {
      const when = this.next();
      this.requireExpression('after WHEN');
      const condition = this.parseExpr();
      this.expectKeyword('THEN', `after the WHEN condition at ${describePosition(when)}`);
      this.requireExpression('after THEN');
      const result = this.parseExpr();
      branches.push({ kind: 'caseBranch', when: condition, result, pos: this.span(when) });
    }
    let otherwise: Expr | null = null;
    if (this.acceptKeyword('ELSE')) {
      this.requireExpression('after ELSE');
      otherwise = this.parseExpr();
    }
    if (!this.acceptKeyword('END')) {
      this.fail(`expected END to close the CASE at ${describePosition(caseTok)}, found ${this.describe()}`);
    }
    this.leave();
    return { kind: 'case', subject, branches, otherwise, pos: this.span(caseTok) };
  }

  /** `CAST(x AS T)`; `CAST(x, 'T')` stays an ordinary call. */
  private parseCast(): Expr {
    const castTok = this.next();
    const open = this.next();
    this.enter(open);
    this.requireExpression("after 'CAST('");
    const expr = this.parseExpr();
    if (this.acceptKeyword('AS')) {
      const type = this.parseType();
      this.expectClose(open);
      this.leave();
      return { kind: 'cast', expr, type, pos: this.span(castTok) };
    }
    const args = [expr];
    while (this.acceptPunct(',')) {
      this.requireExpression("after ','");
      args.push(this.parseArg());
    }
    this.expectClose(open);
    this.leave();
    return {
      kind: 'call',
      name: castTok.value,
      params: null,
      args,
      distinct: false,
      over: null,
      pos: this.span(castTok),
    };
  }

  /** `INTERVAL 7 DAY`, `INTERVAL {variables.n} DAY`, `INTERVAL '7 day'`. */
  private parseInterval(): Expr {
    const intervalTok = this.next();
    const t = this.tok;
    if (t.type === 'string' && !(this.peek().type === 'word' && INTERVAL_UNITS.has(this.peek().upper))) {
      const m = /^\s*(\d+)\s*([A-Za-z]+)\s*$/.exec(t.value);
      const unit = m ? INTERVAL_UNITS.get(m[2]!.toUpperCase()) : undefined;
      if (!m || !unit) this.fail(`cannot read the interval '${t.value}'; write it as INTERVAL 7 DAY`, t);
      this.next();
      const value: Expr = { kind: 'number', text: m[1]!, pos: this.span(t) };
      return { kind: 'interval', value, unit, pos: this.span(intervalTok) };
    }
    this.requireExpression('after INTERVAL');
    const value = this.parseOperand();
    const unit = this.tok.type === 'word' ? INTERVAL_UNITS.get(this.tok.upper) : undefined;
    if (!unit)
      this.fail(`expected an interval unit (${UNITS_LIST}) after INTERVAL's value, found ${this.describe()}`);
    this.next();
    return { kind: 'interval', value, unit, pos: this.span(intervalTok) };
  }

  /** `String`, `Nullable(String)`, `DateTime64(6, 'UTC')`, `Tuple(a String, b UInt8)`. */
  protected parseType(): TypeExpr {
    const first = this.tok;
    const name = this.expectName('a type name');
    const args: TypeArg[] = [];
    if (this.isPunct('(')) {
      const open = this.next();
      this.enter(open);
      if (!this.isPunct(')')) {
        do args.push(this.parseTypeArg());
        while (this.acceptPunct(','));
      }
      this.expectClose(open);
      this.leave();
    }
    return { kind: 'type', name, args, pos: this.span(first) };
  }

  private parseTypeArg(): TypeArg {
    const t = this.tok;
    if (t.type === 'number') {
      this.next();
      return { kind: 'number', text: t.value, pos: this.span(t) };
    }
    if (t.type === 'string') {
      this.next();
      return { kind: 'string', value: t.value, pos: this.span(t) };
    }
    if (this.isName() && this.isName(this.peek())) {
      const name = this.next().value;
      return { kind: 'namedType', name, type: this.parseType(), pos: this.span(t) };
    }
    return this.parseType();
  }

  protected parseOrderItems(): OrderItem[] {
    const items: OrderItem[] = [];
    do {
      const first = this.tok;
      this.requireExpression(items.length === 0 ? 'after ORDER BY' : "after ','");
      const expr = this.parseExpr();
      let descending = false;
      if (this.isKeyword('DESC') || this.isKeyword('DESCENDING')) {
        this.next();
        descending = true;
      } else if (this.isKeyword('ASC') || this.isKeyword('ASCENDING')) {
        this.next();
      }
      let nulls: OrderItem['nulls'] = null;
      if (this.acceptKeyword('NULLS')) {
        if (this.acceptKeyword('FIRST')) nulls = 'first';
        else if (this.acceptKeyword('LAST')) nulls = 'last';
        else this.fail(`expected FIRST or LAST after NULLS, found ${this.describe()}`);
      }
      if (this.isKeyword('COLLATE')) this.fail('COLLATE is not supported');
      if (this.isKeyword('WITH') && this.isKeyword('FILL', this.peek()))
        this.fail('WITH FILL is not supported');
      items.push({ kind: 'orderItem', expr, descending, nulls, pos: this.span(first) });
    } while (this.acceptPunct(','));
    return items;
  }

  /** After `(`: `[PARTITION BY …] [ORDER BY …] [ROWS|RANGE frame] )`. */
  protected parseWindowSpec(open: Token): WindowSpec {
    this.enter(open);
    let partitionBy: Expr[] | null = null;
    let orderBy: OrderItem[] | null = null;
    let frame: WindowFrame | null = null;
    if (this.acceptKeyword('PARTITION')) {
      this.expectKeyword('BY', 'after PARTITION');
      partitionBy = this.parseExprList('after PARTITION BY');
    }
    if (this.acceptKeyword('ORDER')) {
      this.expectKeyword('BY', 'after ORDER');
      orderBy = this.parseOrderItems();
    }
    if (this.isKeyword('ROWS') || this.isKeyword('RANGE')) {
      const unitTok = this.next();
      const unit = unitTok.upper === 'ROWS' ? 'rows' : 'range';
      let start: FrameBound;
      let end: FrameBound | null = null;
      if (this.acceptKeyword('BETWEEN')) {
        start = this.parseFrameBound();
        this.expectKeyword('AND', 'between the two bounds of the window frame');
        end = this.parseFrameBound();
      } else {
        start = this.parseFrameBound();
      }
      frame = { kind: 'windowFrame', unit, start, end, pos: this.span(unitTok) };
    }
    this.expectClose(open);
    this.leave();
    return { kind: 'windowSpec', partitionBy, orderBy, frame, pos: this.span(open) };
  }

  private parseFrameBound(): FrameBound {
    const first = this.tok;
    if (this.acceptKeyword('CURRENT')) {
      this.expectKeyword('ROW', 'after CURRENT');
      return { kind: 'frameBound', type: 'currentRow', offset: null, pos: this.span(first) };
    }
    let offset: Expr | null = null;
    if (!this.acceptKeyword('UNBOUNDED')) {
      this.requireExpression('as a window frame bound (UNBOUNDED, CURRENT ROW or n PRECEDING/FOLLOWING)');
      offset = this.parseBinary(PREC.Between + 1);
    }
    let type: 'preceding' | 'following';
    if (this.acceptKeyword('PRECEDING')) type = 'preceding';
    else if (this.acceptKeyword('FOLLOWING')) type = 'following';
    else this.fail(`expected PRECEDING or FOLLOWING in the window frame, found ${this.describe()}`);
    return { kind: 'frameBound', type, offset, pos: this.span(first) };
  }
}
