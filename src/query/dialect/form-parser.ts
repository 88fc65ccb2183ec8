import type {
  Call,
  Case,
  CaseBranch,
  Expr,
  FrameBound,
  OrderItem,
  TypeArg,
  TypeExpr,
  WindowFrame,
  WindowSpec,
} from './ast.ts';
import { describePosition } from './errors.ts';
import { ExpressionParser, PREC } from './expression-parser.ts';
import { INTERVAL_UNITS } from './keywords.ts';
import type { Token } from './tokens.ts';

const TRIM_SIDES: Readonly<Record<string, string>> = {
  LEADING: 'trimLeft',
  TRAILING: 'trimRight',
  BOTH: 'trim',
};

const UNITS_LIST = 'SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR';

/**
 * The forms with syntax of their own: function calls (parametric, DISTINCT, lambdas, OVER windows),
 * CASE, CAST, INTERVAL, ClickHouse types, ORDER BY items and window specifications.
 */
export abstract class FormParser extends ExpressionParser {
  /** `f(args)`, `f(DISTINCT x)`, `quantile(0.9)(x)`, each maybe `OVER (…)` or `OVER w`. */
  protected parseCall(): Call {
    const nameTok = this.next();
    const open = this.next();
    this.enter(open);
    const afterOpen = this.tok;
    const side = TRIM_SIDES[afterOpen.upper];
    if (
      nameTok.upper === 'TRIM' &&
      side !== undefined &&
      !this.isPunct(',', this.peek()) &&
      !this.isPunct(')', this.peek())
    ) {
      return this.parseTrim(nameTok, open, side);
    }
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

  /** `trim(LEADING|TRAILING|BOTH chars FROM text)`: the call HogQL makes of it, `trimLeft(text, chars)` … */
  private parseTrim(nameTok: Token, open: Token, name: string): Call {
    this.next();
    this.requireExpression(`after ${this.source(this.peek(-1))}`);
    const chars = this.parseExpr();
    this.expectKeyword('FROM', `after the characters of trim(${this.source(this.peek(-1))} …`);
    this.requireExpression('after FROM');
    const text = this.parseExpr();
    this.expectClose(open);
    this.leave();
    return {
      kind: 'call',
      name,
      params: null,
      args: [text, chars],
      distinct: false,
      over: null,
      pos: this.span(nameTok),
    };
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
    if (params === null) return this.parseNamedExpr();
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

  protected parseCase(): Case {
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
  protected parseCast(): Expr {
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
  protected parseInterval(): Expr {
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
