import type { SourcePosition } from './errors.ts';

/**
 * - `word`: a bare identifier or keyword (`SELECT`, `events`, `$browser`); keywords are not told apart here,
 *   because ClickHouse keywords are reserved only in some places and the parser knows which.
 * - `quoted`: a backtick- or double-quoted identifier; never a keyword.
 * - `string`: a single-quoted string literal.
 * - `number`: a numeric literal as written (`42`, `1.5e-3`, `0x1F`, `1_000`); `inf` and `nan` are words.
 * - `punct`: an operator or punctuation mark (`(`, `::`, `->`, `<=`, …); also what marks HogQLX tags
 *   (`<` `/>` `>` and `</`) and f-strings (`f'` and its closing `'`).
 * - `text`: the text between HogQLX tags, or between the expressions of an f-string, decoded.
 * - `eof`: the end of the text; always the last token.
 */
export type TokenType = 'word' | 'quoted' | 'string' | 'number' | 'punct' | 'text' | 'eof';

export interface Token extends SourcePosition {
  readonly type: TokenType;
  /** word, number, punct: the text as written; quoted, string: the decoded value; eof: ''. */
  readonly value: string;
  /** For words, the value upper-cased (keyword comparisons); '' otherwise. */
  readonly upper: string;
  /** Offset just past the token. */
  readonly end: number;
}

/**
 * Operators and punctuation; the lexer tries the longest first, so `::` wins over `:` and `!~*` over `!~`.
 * `??` and the regex operators (`=~`, `!~`, `~`, `~*`, `=~*`, `!~*`) are HogQL's, not ClickHouse's: the parser
 * turns them into the calls HogQL means.
 */
export const PUNCTUATION = [
  '=~*',
  '!~*',
  '::',
  '??',
  '=~',
  '!~',
  '~*',
  '->',
  '||',
  '==',
  '!=',
  '<>',
  '<=',
  '>=',
  '<',
  '>',
  '=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  '.',
  ';',
  '?',
  ':',
  '~',
] as const;

/** A punct token's value: the table above, and the marks of tags and f-strings, which only the lexer's modes make. */
export type Punct = (typeof PUNCTUATION)[number] | "f'" | "'" | '/>' | '</';
