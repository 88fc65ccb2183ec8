import { rowLines } from './json-rows.ts';
import { isDataError, isRowError } from './store-errors.ts';

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

/** A row of a block that the engine refused: its place in the block, its JSON text (and a newline), why. */
export interface RefusedRow {
  readonly index: number;
  readonly line: Buffer;
  readonly err: unknown;
}

export interface CheckedInsertsDeps {
  readonly insert: RawInsert;
  /** Sets aside, durably, the rows of the block under `token` that the engine refused (quarantine.ts). */
  readonly setAside: (target: InsertTarget, rows: readonly RefusedRow[], token: string) => Promise<void>;
}

/**
 * Inserts blocks so that no row can keep the rest of its block, or the blocks behind it, out: when the engine
 * refuses a block for its rows, the rows at fault are found by bisection and set aside, and the rest is
 * inserted. The halves go in under tokens derived from the block's, so a block bisected again after a crash
 * stores nothing twice.
 *
 * Which refusals are the rows' (store-errors.ts): a data error (a parse or type error) is, always, even when
 * every row of the block has one, since one request can bring a block of rows that are all bad. Another error
 * of the engine that is not the store failing (a full disk, a missing table, the server away) is taken as the
 * rows' only when part of the block went in beside them. Anything else is not the rows: nothing is set aside
 * and the error stands, for the caller to retry the block later.
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
      if (!isRowError(err)) throw err;
      const whole = Buffer.concat(data);
      let lines: Buffer[];
      try {
        lines = rowLines(whole, target.columns !== undefined);
      } catch {
        // Bytes that are not rows at all can only be set aside whole.
        lines = [whole];
      }
      const refused: RefusedRow[] = [];
      await this.#bisect(target, lines, 0, lines.length, token, err, refused);
      if (refused.length === lines.length && !refused.every((r) => isDataError(r.err))) throw err;
      await this.#deps.setAside(target, refused, token);
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
    refused: RefusedRow[],
  ): Promise<void> {
    if (hi - lo === 1) {
      refused.push({ index: lo, line: lines[lo]!, err });
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
        if (!isRowError(e)) throw e;
        await this.#bisect(target, lines, a, b, token, e, refused);
      }
    }
  }
}
