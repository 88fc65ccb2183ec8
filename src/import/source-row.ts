/** Where a row stands in the input: which file of the run, its row number there, and where the next row starts. */
export interface Position {
  /** Index of the file in the run's sorted list of inputs. */
  readonly file: number;
  /** 0-based row number within the file (data rows: a CSV header is not one). */
  readonly row: number;
  /**
   * Byte offsets where this row's line starts and where the next begins, in an uncompressed JSON-lines file
   * only: a resume seeks there instead of reading the rows again. Undefined where seeking is not possible
   * (compressed, CSV, Parquet, standard input).
   */
  readonly start?: number;
  readonly end?: number;
}

/** One row as a reader gives it: a decoded object, or why it could not be decoded. */
export type SourceRow =
  | {
      readonly kind: 'value';
      readonly pos: Position;
      readonly value: unknown;
      /** The JSON text the value was parsed from (JSON lines): sent as it is when nothing of it changes. */
      readonly text?: string;
    }
  | { readonly kind: 'unreadable'; readonly pos: Position; readonly reason: string; readonly raw: string };

/** Where a reader starts: the first row to give and, for a seekable file, the byte offset of that row. */
export interface StartAt {
  readonly row: number;
  readonly offset?: number;
}
