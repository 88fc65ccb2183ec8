import { rowLines } from './json-rows.ts';
import { isDataError } from './store-errors.ts';

/** What one insert goes to: a table, with the column list of rows given as values. */
export interface InsertTarget {
  readonly table: string;
  readonly columns: readonly string[] | undefined;
}

/** Inserts one block of JSON bytes (in parts) under a deduplication token. */
export type RawInsert = (
  table: string,
  data: readonly Buffer[],
  token: string,
  columns: readonly string[] | undefined,
) => Promise<void>;

export interface CheckedInsertsDeps {
  readonly insert: RawInsert;
  /** Sets aside one row the engine refused (one JSON text and a newline), with the engine's error. */
  readonly refuse: (target: InsertTarget, line: Buffer, err: unknown) => Promise<void>;
}

/**
 * Inserts blocks so that one bad row cannot keep the rest of its block out for ever: on a data error (a parse
 * or type error of the engine), the rows at fault are found by bisection and set aside, and the rest of the
 * block is inserted. When every row fails, the fault is not in the rows (a schema the rows do not fit, say):
 * nothing is set aside and the error stands, for the caller to retry the block later. The halves go in
 * under tokens derived from the block's, so a block bisected again after a crash stores nothing twice.
 */
export class CheckedInserts {
  readonly #deps: CheckedInsertsDeps;

  constructor(deps: CheckedInsertsDeps) {
    this.#deps = deps;
  }

  /** Inserts `data` (one JSON array, or rows of values, in parts) into `target` under `token`. */
  async insert(target: InsertTarget, data: readonly Buffer[], token: string): Promise<void> {
    try {
      await this.#deps.insert(target.table, data, token, target.columns);
    } catch (err) {
      if (!isDataError(err)) throw err;
      const lines = rowLines(Buffer.concat(data), target.columns !== undefined);
      const refused: { line: number; err: unknown }[] = [];
      await this.#bisect(target, lines, 0, lines.length, token, err, refused);
      if (refused.length === lines.length) throw err;
      for (const r of refused) await this.#deps.refuse(target, lines[r.line]!, r.err);
    }
  }

  /** Inserts the good rows of `lines[lo, hi)` (which failed as a whole with `err`); collects the refused ones. */
  async #bisect(
    target: InsertTarget,
    lines: readonly Buffer[],
    lo: number,
    hi: number,
    token: string,
    err: unknown,
    refused: { line: number; err: unknown }[],
  ): Promise<void> {
    if (hi - lo === 1) {
      refused.push({ line: lo, err });
      return;
    }
    const mid = (lo + hi) >> 1;
    for (const [a, b] of [
      [lo, mid],
      [mid, hi],
    ] as const) {
      try {
        await this.#deps.insert(target.table, lines.slice(a, b), `${token}:${a}-${b}`, target.columns);
      } catch (e) {
        if (!isDataError(e)) throw e;
        await this.#bisect(target, lines, a, b, token, e, refused);
      }
    }
  }
}
