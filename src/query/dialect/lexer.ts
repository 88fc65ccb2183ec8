/**
 * The tokenizer of Weir's SQL dialect, following ClickHouse's lexer where the dialect says nothing:
 * - whitespace, `-- …`, `// …`, `# …` / `#!…` line comments (a `#` not followed by a space or `!` is an error,
 *   as in ClickHouse), and `/* … *\/` block comments, which nest;
 * - bare words `[A-Za-z_$][A-Za-z0-9_$]*` (the `$` lets `properties.$browser` through unquoted);
 * - `'strings'` and `` `identifiers` `` / `"identifiers"` with backslash escapes or a doubled quote;
 * - numbers: `42`, `1_000`, `1.5`, `1.`, `.5`, `2e10`, `1.5e-3`, `0x1F`, `0b101` (a number running into a
 *   letter, `1abc`, is an error; ClickHouse would read an identifier there). `inf` and `nan` are words.
 * A `.` right after a word, a quoted identifier, a number, `)` or `]` is member access, and a number just
 * after such a `.` is a plain integer: `t.1.2` is two tuple accesses, `.5` elsewhere a number (ClickHouse's rule).
 */
import { DialectSyntaxError, describePosition, type SourcePosition } from './errors.ts';
import { PUNCTUATION, type Token, type TokenType } from './tokens.ts';

const IDENT_START = new Uint8Array(128);
const IDENT_PART = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  IDENT_START[c] = /[A-Za-z_$]/.test(ch) ? 1 : 0;
  IDENT_PART[c] = /[A-Za-z0-9_$]/.test(ch) ? 1 : 0;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHexDigit = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const isIdentStart = (c: number): boolean => c < 128 && IDENT_START[c] === 1;
const isIdentPart = (c: number): boolean => c < 128 && IDENT_PART[c] === 1;
const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  '0': '\0',
  a: '\x07',
  v: '\v',
  e: '\x1b',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '`': '`',
};

const HINTS: Readonly<Record<string, string>> = {
  '|': " (did you mean '||'?)",
  '&': ' (did you mean AND?)',
  '!': " (did you mean '!=' or NOT?)",
  '#': " (a '#' comment needs a space after the '#')",
  '@': '',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });
const PUNCT_SET: ReadonlySet<string> = new Set(PUNCTUATION);

/** Splits a query into tokens, the last one `eof`. Throws a DialectSyntaxError at the first bad character. */
export function tokenize(text: string): Token[] {
  return new Lexer(text).run();
}

/**
 * What the lexer is inside of, beyond plain SQL: a HogQLX tag's header (`<a href={x}`), its children (text,
 * `{expr}` and tags, up to `</a>`), an f-string's text, or an expression in braces inside one of those
 * (`braces` counts the braces it opened itself, so its own closing `}` is told from theirs).
 */
type Frame =
  | { readonly kind: 'tagHeader'; readonly closing: boolean }
  | { readonly kind: 'children' }
  | { readonly kind: 'template' }
  | { kind: 'expr'; braces: number };

/**
 * Where a `<` followed by a letter opens a HogQLX tag rather than comparing: where an operand must start.
 * After a name, a literal or a closing bracket it is "less than" (`a<b` compares, as in ClickHouse).
 */
const TAG_AFTER_WORDS = new Set(
  'SELECT DISTINCT WHERE PREWHERE HAVING AND OR NOT THEN ELSE WHEN CASE FROM JOIN ON BY IN LIKE ILIKE BETWEEN RETURN'.split(
    ' ',
  ),
);
const TAG_AFTER_PUNCT = new Set([
  '(',
  ',',
  '[',
  '{',
  '=',
  '==',
  '!=',
  '<>',
  '<',
  '>',
  '<=',
  '>=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '||',
  '??',
  '?',
  ':',
  '->',
]);

class Lexer {
  private i = 0;
  private readonly frames: Frame[] = [];
  private line = 1;
  private lineStart = 0;
  /** Surrogate pairs on the current line before the scan point: columns count characters, not UTF-16 units. */
  private astral = 0;
  private readonly tokens: Token[] = [];
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  run(): Token[] {
    const n = this.text.length;
    for (;;) {
      // Plain SQL (no frame) is the common case, so it is tested first.
      const frame = this.frames.length === 0 ? undefined : this.frames[this.frames.length - 1]!;
      if (frame !== undefined && frame.kind !== 'expr') {
        if (frame.kind === 'children') {
          this.children();
          continue;
        }
        if (frame.kind === 'template') {
          this.template();
          continue;
        }
      }
      this.skipTrivia();
      if (this.i >= n) break;
      this.tokens.push(frame?.kind === 'tagHeader' ? this.tagHeaderToken(frame) : this.token());
    }
    const open = this.frames.find((f) => f.kind !== 'expr');
    if (open !== undefined)
      this.fail(open.kind === 'template' ? 'unterminated f-string' : 'unterminated HogQLX tag');
    this.tokens.push(this.make('eof', '', this.here(), this.i));
    return this.tokens;
  }

  /** Whether a `<` here starts a tag: a letter follows, and an operand must start here. */
  private tagStartsHere(): boolean {
    if (!isIdentStart(this.text.charCodeAt(this.i + 1))) return false;
    const prev = this.tokens[this.tokens.length - 1];
    if (prev === undefined) return true;
    if (prev.type === 'word') return TAG_AFTER_WORDS.has(prev.upper);
    return prev.type === 'punct' && TAG_AFTER_PUNCT.has(prev.value);
  }

  private openTag(): Token {
    const at = this.here();
    this.i++;
    this.frames.push({ kind: 'tagHeader', closing: false });
    this.tokens.push(this.make('punct', '<', at, this.i));
    return this.tagName();
  }

  /** A tag's name, which may have dashes (`<a-b>`), as HogQL's grammar allows. */
  private tagName(): Token {
    this.skipTrivia();
    const text = this.text;
    const at = this.here();
    if (!isIdentStart(text.charCodeAt(this.i))) this.fail('expected the name of the tag', at);
    let j = this.i + 1;
    while (j < text.length && (isIdentPart(text.charCodeAt(j)) || text.charCodeAt(j) === 0x2d)) j++;
    this.i = j;
    return this.make('word', text.slice(at.offset, j), at, j);
  }

  /** Inside `<name …>`: attribute names, `=`, strings (either quote), `{`, and `>` or `/>` to end it. */
  private tagHeaderToken(frame: Frame & { kind: 'tagHeader' }): Token {
    const text = this.text;
    const c = text.charCodeAt(this.i);
    const at = this.here();
    if (isIdentStart(c)) return this.tagName();
    if (c === 0x27 || c === 0x22) return this.quoted(text[this.i]!, 'string');
    if (c === 0x3d) {
      this.i++;
      return this.make('punct', '=', at, this.i);
    }
    if (c === 0x7b && !frame.closing) {
      this.i++;
      this.frames.push({ kind: 'expr', braces: 0 });
      return this.make('punct', '{', at, this.i);
    }
    if (c === 0x2f && text.charCodeAt(this.i + 1) === 0x3e && !frame.closing) {
      this.i += 2;
      this.frames.pop();
      return this.make('punct', '/>', at, this.i);
    }
    if (c === 0x3e) {
      this.i++;
      this.frames.pop();
      if (frame.closing) this.frames.pop();
      else this.frames.push({ kind: 'children' });
      return this.make('punct', '>', at, this.i);
    }
    return this.fail(`unexpected '${text[this.i]}' in a HogQLX tag`, at);
  }

  /**
   * Between a tag's `>` and its `</`: text up to a `<` or `{`. Text of only spaces and line breaks is
   * layout, not content, and dropped when it holds a line break (as HogQL's parser drops it).
   */
  private children(): void {
    const text = this.text;
    const at = this.here();
    let j = this.i;
    while (j < text.length) {
      const c = text.charCodeAt(j);
      if (c === 0x3c || c === 0x7b) break;
      if (c === 0x0a) this.newlineAt(j);
      else if (isHighSurrogate(c)) this.astral++;
      j++;
    }
    const chunk = text.slice(this.i, j);
    this.i = j;
    if (chunk !== '' && !(/^\s*$/.test(chunk) && chunk.includes('\n'))) {
      this.tokens.push(this.make('text', chunk, at, j));
    }
    if (j >= text.length) this.fail('unterminated HogQLX tag: expected a closing tag');
    const here = this.here();
    this.i++;
    if (text.charCodeAt(j) === 0x7b) {
      this.frames.push({ kind: 'expr', braces: 0 });
      this.tokens.push(this.make('punct', '{', here, this.i));
    } else if (text.charCodeAt(j + 1) === 0x2f) {
      this.i++;
      this.frames.push({ kind: 'tagHeader', closing: true });
      this.tokens.push(this.make('punct', '</', here, this.i));
      this.tokens.push(this.tagName());
    } else {
      this.frames.push({ kind: 'tagHeader', closing: false });
      this.tokens.push(this.make('punct', '<', here, this.i));
      this.tokens.push(this.tagName());
    }
  }

  /** `f'…'` after its `f'`: text with `\` escapes and `''`, up to `{` (an expression) or the closing `'`. */
  private template(): void {
    const text = this.text;
    const at = this.here();
    let out = '';
    let j = this.i;
    for (;;) {
      if (j >= text.length) this.fail('unterminated f-string', at);
      const c = text.charCodeAt(j);
      if (c === 0x27 && text.charCodeAt(j + 1) === 0x27) {
        out += "'";
        j += 2;
      } else if (c === 0x27 || c === 0x7b) {
        break;
      } else if (c === 0x5c && j + 1 < text.length) {
        const e = text[j + 1]!;
        out += e === '{' || e === '}' ? e : (SIMPLE_ESCAPES[e] ?? `\\${e}`);
        j += 2;
      } else {
        if (c === 0x0a) this.newlineAt(j);
        else if (isHighSurrogate(c)) this.astral++;
        out += text[j];
        j++;
      }
    }
    if (out !== '') this.tokens.push(this.make('text', out, at, j));
    const here = this.here(j);
    this.i = j + 1;
    if (text.charCodeAt(j) === 0x7b) {
      this.frames.push({ kind: 'expr', braces: 0 });
      this.tokens.push(this.make('punct', '{', here, this.i));
    } else {
      this.frames.pop();
      this.tokens.push(this.make('punct', "'", here, this.i));
    }
  }

  private here(offset = this.i): SourcePosition {
    return { offset, line: this.line, column: offset - this.lineStart - this.astral + 1 };
  }

  private newlineAt(j: number): void {
    this.line++;
    this.lineStart = j + 1;
    this.astral = 0;
  }

  private make(type: TokenType, value: string, at: SourcePosition, end: number): Token {
    return {
      type,
      value,
      upper: type === 'word' ? value.toUpperCase() : '',
      offset: at.offset,
      line: at.line,
      column: at.column,
      end,
    };
  }

  private fail(reason: string, at: SourcePosition = this.here()): never {
    throw new DialectSyntaxError(reason, at);
  }

  private skipTrivia(): void {
    const text = this.text;
    const n = text.length;
    while (this.i < n) {
      const c = text.charCodeAt(this.i);
      const d = this.i + 1 < n ? text.charCodeAt(this.i + 1) : 0;
      if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0c || c === 0x0b || c === 0xfeff) {
        this.i++;
      } else if (c === 0x0a) {
        this.newlineAt(this.i);
        this.i++;
      } else if (
        (c === 0x2d && d === 0x2d) ||
        (c === 0x2f && d === 0x2f) ||
        (c === 0x23 && (d === 0x20 || d === 0x21))
      ) {
        this.skipLineComment();
      } else if (c === 0x2f && d === 0x2a) {
        this.skipBlockComment();
      } else {
        return;
      }
    }
  }

  private skipLineComment(): void {
    const text = this.text;
    let j = this.i + 2;
    for (; j < text.length; j++) {
      const c = text.charCodeAt(j);
      if (c === 0x0a) break;
      if (isHighSurrogate(c)) this.astral++;
    }
    this.i = j;
  }

  private skipBlockComment(): void {
    const text = this.text;
    const at = this.here();
    let depth = 1;
    let j = this.i + 2;
    while (depth > 0) {
      if (j >= text.length) this.fail(`unterminated comment starting at ${describePosition(at)}`, at);
      const c = text.charCodeAt(j);
      const d = j + 1 < text.length ? text.charCodeAt(j + 1) : 0;
      if (c === 0x2a && d === 0x2f) {
        depth--;
        j += 2;
      } else if (c === 0x2f && d === 0x2a) {
        depth++;
        j += 2;
      } else {
        if (c === 0x0a) this.newlineAt(j);
        else if (isHighSurrogate(c)) this.astral++;
        j++;
      }
    }
    this.i = j;
  }

  private token(): Token {
    const text = this.text;
    const c = text.charCodeAt(this.i);
    if (c === 0x66 && text.charCodeAt(this.i + 1) === 0x27 && !isIdentPart(text.charCodeAt(this.i - 1))) {
      const at = this.here();
      this.i += 2;
      this.frames.push({ kind: 'template' });
      return this.make('punct', "f'", at, this.i);
    }
    if (isIdentStart(c)) return this.word();
    if (c === 0x3c && this.tagStartsHere()) return this.openTag();
    const frame =
      (c === 0x7b || c === 0x7d) && this.frames.length > 0 ? this.frames[this.frames.length - 1]! : undefined;
    if (frame?.kind === 'expr') {
      // Braces inside an expression of a tag or an f-string: the one that closes it ends the expression.
      const at = this.here();
      this.i++;
      if (c === 0x7b) frame.braces++;
      else if (frame.braces-- === 0) this.frames.pop();
      return this.make('punct', c === 0x7b ? '{' : '}', at, this.i);
    }
    if (isDigit(c)) return this.number();
    if (
      c === 0x2e &&
      this.i + 1 < text.length &&
      isDigit(text.charCodeAt(this.i + 1)) &&
      !this.dotIsAccess()
    ) {
      return this.number();
    }
    if (c === 0x27) return this.quoted("'", 'string');
    if (c === 0x60) return this.quoted('`', 'quoted');
    if (c === 0x22) return this.quoted('"', 'quoted');
    return this.punct();
  }

  /** A `.` right after something that can have members is member access, not the start of a number. */
  private dotIsAccess(): boolean {
    const prev = this.tokens[this.tokens.length - 1];
    if (!prev) return false;
    // HogQL's `a?.1`: a `?` touching the `.` makes nullish access, as PostHog's grammar reads it (`a ? .5 : b`,
    // spaced, is still a ternary with a number).
    if (prev.type === 'punct' && prev.value === '?' && prev.end === this.i) return true;
    return (
      prev.type === 'word' ||
      prev.type === 'quoted' ||
      prev.type === 'number' ||
      (prev.type === 'punct' && (prev.value === ')' || prev.value === ']' || prev.value === '}'))
    );
  }

  private word(): Token {
    const text = this.text;
    const at = this.here();
    let j = this.i + 1;
    while (j < text.length && isIdentPart(text.charCodeAt(j))) j++;
    this.i = j;
    return this.make('word', text.slice(at.offset, j), at, j);
  }

  private number(): Token {
    const text = this.text;
    const at = this.here();
    const start = this.i;
    const prev = this.tokens[this.tokens.length - 1];
    const afterDot = prev?.type === 'punct' && prev.value === '.';
    const code = (k: number): number => (k < text.length ? text.charCodeAt(k) : 0);
    let j = start;
    const digits = (isOk: (c: number) => boolean): boolean => {
      if (!isOk(code(j))) return false;
      j++;
      for (;;) {
        if (isOk(code(j))) j++;
        else if (code(j) === 0x5f && isOk(code(j + 1))) j += 2;
        else return true;
      }
    };
    const next = code(start + 1) | 0x20;
    if (code(start) === 0x30 && next === 0x78 && isHexDigit(code(start + 2))) {
      j = start + 2;
      digits(isHexDigit);
    } else if (
      code(start) === 0x30 &&
      next === 0x62 &&
      (code(start + 2) === 0x30 || code(start + 2) === 0x31)
    ) {
      j = start + 2;
      digits((c) => c === 0x30 || c === 0x31);
    } else {
      digits(isDigit);
      if (!afterDot) {
        if (code(j) === 0x2e) {
          j++;
          digits(isDigit);
        }
        const e = code(j) | 0x20;
        const sign = code(j + 1) === 0x2b || code(j + 1) === 0x2d ? 1 : 0;
        if (e === 0x65 && isDigit(code(j + 1 + sign))) {
          j += 1 + sign;
          digits(isDigit);
        }
      }
    }
    if (isIdentPart(code(j)) || (code(j) === 0x2e && isDigit(code(j + 1)) && !afterDot && j > start)) {
      let k = j;
      while (isIdentPart(code(k)) || code(k) === 0x2e) k++;
      this.fail(`malformed number '${text.slice(start, k)}'`, at);
    }
    this.i = j;
    return this.make('number', text.slice(start, j), at, j);
  }

  /** A string literal or a quoted identifier: backslash escapes, or the quote doubled. */
  private quoted(quote: string, type: 'string' | 'quoted'): Token {
    const text = this.text;
    const at = this.here();
    const q = quote.charCodeAt(0);
    let out = '';
    let bytes: number[] = [];
    let bytesAt: SourcePosition = at;
    const flush = (): void => {
      if (bytes.length === 0) return;
      try {
        out += utf8.decode(Uint8Array.from(bytes));
      } catch {
        this.fail('these \\x escapes do not spell UTF-8 text; Weir strings are text', bytesAt);
      }
      bytes = [];
    };
    let j = this.i + 1;
    let segment = j;
    for (;;) {
      if (j >= text.length) {
        const what = type === 'string' ? 'string literal' : 'quoted identifier';
        this.fail(`unterminated ${what} starting at ${describePosition(at)}`, at);
      }
      const c = text.charCodeAt(j);
      if (c === q) {
        if (j + 1 < text.length && text.charCodeAt(j + 1) === q) {
          flush();
          out += text.slice(segment, j + 1);
          j += 2;
          segment = j;
          continue;
        }
        flush();
        out += text.slice(segment, j);
        j++;
        break;
      }
      if (c === 0x5c) {
        if (segment < j) flush();
        out += text.slice(segment, j);
        const e = text.charCodeAt(j + 1);
        if (j + 1 >= text.length) {
          segment = j;
          j++;
          continue;
        }
        if ((e | 0x20) === 0x78 && isHexDigit(text.charCodeAt(j + 2)) && isHexDigit(text.charCodeAt(j + 3))) {
          const byte = parseInt(text.slice(j + 2, j + 4), 16);
          if (byte < 0x80) {
            flush();
            out += String.fromCharCode(byte);
          } else {
            if (bytes.length === 0) bytesAt = this.here(j);
            bytes.push(byte);
          }
          j += 4;
          segment = j;
          continue;
        }
        flush();
        const simple = SIMPLE_ESCAPES[text[j + 1]!];
        if (simple !== undefined) {
          out += simple;
          j += 2;
          segment = j;
          continue;
        }
        // Unknown escapes keep their backslash, as in ClickHouse: '\d+' reaches match() as \d+.
        segment = j;
        j++;
        continue;
      }
      if (c === 0x0a) this.newlineAt(j);
      else if (isHighSurrogate(c)) this.astral++;
      j++;
    }
    flush();
    this.i = j;
    if (type === 'quoted' && out === '') this.fail('empty quoted identifier', at);
    return this.make(type, out, at, j);
  }

  private punct(): Token {
    const text = this.text;
    const at = this.here();
    for (const width of [3, 2, 1]) {
      const candidate = text.slice(this.i, this.i + width);
      if (candidate.length === width && PUNCT_SET.has(candidate)) {
        this.i += width;
        return this.make('punct', candidate, at, this.i);
      }
    }
    const cp = text.codePointAt(this.i)!;
    const ch = String.fromCodePoint(cp);
    const hint =
      HINTS[ch] ??
      (cp > 0x7e || cp < 0x20
        ? ` (U+${cp.toString(16).toUpperCase().padStart(4, '0')}; outside quotes only ASCII is allowed, so quote such names with backticks)`
        : '');
    this.fail(`unknown token '${ch}'${hint}`, at);
  }
}
