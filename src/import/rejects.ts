import { createWriteStream, type WriteStream } from 'node:fs';
import type { Position } from './source-row.ts';

/** One refused row as the rejects file holds it: where it was, why, and the row itself. */
export interface Reject {
  readonly pos: Position;
  /** A refusal of the importer (`missing_event`, …) or `server:<code>` for a 400 naming the row. */
  readonly reason: string;
  readonly detail: string;
  /** The row: its decoded value, or its text when it could not be decoded. */
  readonly row: unknown;
}

/**
 * The rejects file: JSON lines, one refused row each (`file`, `row` 0-based, `reason`, `detail`, `value`: the row), so a
 * person can read why, mend the rows and import the file of rejects itself. Appended to on a resume.
 */
export class RejectsFile {
  readonly path: string;
  readonly #files: readonly string[];
  #out: WriteStream | undefined;
  count = 0;

  readonly #append: boolean;

  constructor(path: string, files: readonly string[], append: boolean) {
    this.path = path;
    this.#files = files;
    this.#append = append;
  }

  write(r: Reject): void {
    this.#out ??= createWriteStream(this.path, { flags: this.#append ? 'a' : 'w' });
    this.count++;
    this.#out.write(
      `${JSON.stringify({ file: this.#files[r.pos.file] ?? '-', row: r.pos.row, reason: r.reason, detail: r.detail, value: r.row })}\n`,
    );
  }

  async close(): Promise<void> {
    const out = this.#out;
    if (out === undefined) return;
    await new Promise<void>((resolve, reject) =>
      out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }
}
