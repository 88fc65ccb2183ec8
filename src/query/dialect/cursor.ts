import type { Span } from './ast.ts';
import { DialectSyntaxError, describePosition } from './errors.ts';
import type { Punct, Token } from './tokens.ts';

/**
 * A position in the token list, with the checks every grammar rule needs: keywords, punctuation, closing
 * brackets that name their opening one, and the nesting guard. The grammar itself is in the subclasses.
 */
export abstract class TokenCursor {
  protected index = 0;
  /** How deeply the rule being parsed nests: bracket, subquery, operator chain. */
  protected depth = 0;

  constructor(
    protected readonly tokens: readonly Token[],
    protected readonly maxDepth: number,
  ) {}

  protected get tok(): Token {
    return this.tokens[this.index]!;
  }

  protected peek(ahead = 1): Token {
    return this.tokens[Math.min(this.index + ahead, this.tokens.length - 1)]!;
  }

  protected next(): Token {
    const t = this.tokens[this.index]!;
    if (t.type !== 'eof') this.index++;
    return t;
  }

  protected atEnd(): boolean {
    return this.tok.type === 'eof';
  }

  protected isKeyword(keyword: string, t: Token = this.tok): boolean {
    return t.type === 'word' && t.upper === keyword;
  }

  protected acceptKeyword(keyword: string): boolean {
    if (!this.isKeyword(keyword)) return false;
    this.index++;
    return true;
  }

  protected expectKeyword(keyword: string, context: string): Token {
    if (!this.isKeyword(keyword)) this.fail(`expected ${keyword} ${context}, found ${this.describe()}`);
    return this.next();
  }

  protected isPunct(p: Punct, t: Token = this.tok): boolean {
    return t.type === 'punct' && t.value === p;
  }

  protected acceptPunct(p: Punct): boolean {
    if (!this.isPunct(p)) return false;
    this.index++;
    return true;
  }

  protected expectPunct(p: Punct, context: string): Token {
    if (!this.isPunct(p)) this.fail(`expected '${p}' ${context}, found ${this.describe()}`);
    return this.next();
  }

  /** Consumes the bracket that closes `open`, or fails naming where `open` was. */
  protected expectClose(open: Token): Token {
    const close = open.value === '(' ? ')' : open.value === '[' ? ']' : '}';
    if (this.isPunct(close)) return this.next();
    this.fail(
      `expected '${close}' to close '${open.value}' opened at ${describePosition(open)}, found ${this.describe()}`,
    );
  }

  /** Whether a query starts `ahead` tokens from here, maybe behind opening parentheses: `((SELECT …`. */
  protected queryStartsAt(ahead: number): boolean {
    let t = this.peek(ahead);
    while (this.isPunct('(', t)) t = this.peek(++ahead);
    return this.isKeyword('SELECT', t) || this.isKeyword('WITH', t);
  }

  /** A word or quoted identifier used as a name (after AS, in a chain, …). */
  protected isName(t: Token = this.tok): boolean {
    return t.type === 'word' || t.type === 'quoted';
  }

  protected expectName(what: string): string {
    if (!this.isName()) this.fail(`expected ${what}, found ${this.describe()}`);
    return this.next().value;
  }

  /** How a token reads in a message: `'FROM'`, `the string 'abc'`, `end of query`. */
  protected describe(t: Token = this.tok): string {
    if (t.type === 'eof') return 'end of query';
    const text = this.source(t);
    const shown = text.length > 40 ? `${text.slice(0, 37)}...` : text;
    return t.type === 'string' ? `the string ${shown}` : `'${shown}'`;
  }

  /** The token as written. */
  protected abstract source(t: Token): string;

  protected fail(reason: string, at: Token = this.tok): never {
    throw new DialectSyntaxError(reason, at);
  }

  /** Enters one level of nesting; a query deeper than `maxDepth` is refused before the stack can overflow. */
  protected enter(at: Token = this.tok): void {
    if (++this.depth > this.maxDepth) this.tooDeep(at);
  }

  protected leave(): void {
    this.depth--;
  }

  protected tooDeep(at: Token): never {
    this.fail(`the query nests deeper than ${this.maxDepth} levels; simplify it or split it with WITH`, at);
  }

  /** The span from `first` to the last token consumed. */
  protected span(first: Token): Span {
    const last = this.tokens[this.index - 1] ?? first;
    return {
      start: first.offset,
      end: Math.max(last.end, first.offset),
      line: first.line,
      column: first.column,
    };
  }
}
