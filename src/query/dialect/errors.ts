/** Where something is in the query text: `offset` counts UTF-16 units from 0; `line` and `column` count from 1. */
export interface SourcePosition {
  readonly offset: number;
  readonly line: number;
  /** Counts characters (code points), so an emoji earlier on the line counts once. */
  readonly column: number;
}

/**
 * A query the dialect cannot read, or a construct it refuses (SETTINGS, FORMAT, …), with the place to look.
 * `reason` is the sentence alone; `message` adds the place, ready for an error body's `detail`.
 */
export class DialectSyntaxError extends Error {
  readonly reason: string;
  readonly offset: number;
  readonly line: number;
  readonly column: number;

  constructor(reason: string, at: SourcePosition) {
    super(`${reason} (line ${at.line}, column ${at.column})`);
    this.name = 'DialectSyntaxError';
    this.reason = reason;
    this.offset = at.offset;
    this.line = at.line;
    this.column = at.column;
  }
}

/** "line 2, column 14": how messages point at an earlier place (an opening bracket, a string's start). */
export function describePosition(at: SourcePosition): string {
  return `line ${at.line}, column ${at.column}`;
}
