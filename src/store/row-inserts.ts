import type { Metrics } from '../core/metrics.ts';
import type { Row, Values } from '../core/ports.ts';
import { asError } from '../errors/app-error.ts';
import { JsonRowEncoder } from './json-rows.ts';
import { StoreBusyError } from './store-errors.ts';

/**
 * What both store adapters do the same way before a commit of their own: rows made bytes (one JSON array,
 * JsonRowEncoder), `insert` and `insertValues` as one `insertEncoded`, and the bound on the bytes taken but
 * not yet done with (the embedded store's log not yet applied, a server's inserts not yet answered) past
 * which new rows are refused with StoreBusyError, which capture answers with 503.
 */
export abstract class RowInserts {
  readonly #encoder = new JsonRowEncoder();
  readonly #pending: PendingBytes;

  protected constructor(pending: PendingBytes) {
    this.#pending = pending;
  }

  /** Commits encodings of `encode` as one insert (see `Store.insertEncoded`). */
  abstract insertEncoded(
    table: string,
    rows: number,
    chunks: readonly Buffer[],
    columns?: readonly string[],
  ): Promise<void>;

  insert(table: string, rows: readonly Row[]): Promise<void> {
    return this.#insertRows(table, rows, undefined);
  }

  insertValues(table: string, columns: readonly string[], rows: readonly Values[]): Promise<void> {
    return this.#insertRows(table, rows, columns);
  }

  /** One JSON array of the rows (see JsonRowEncoder): held as bytes until the commit that takes them. */
  encode(rows: readonly Row[] | readonly Values[]): Buffer {
    return this.#encoder.encode(rows);
  }

  /**
   * Takes new requests while under three quarters of the bound; the last quarter is headroom for requests
   * already taken, so a request is refused whole rather than stored in part.
   */
  accepting(): boolean {
    return this.#pending.bytes <= this.#pending.max * 0.75;
  }

  #insertRows(
    table: string,
    rows: readonly Row[] | readonly Values[],
    columns: readonly string[] | undefined,
  ): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    let data: Buffer;
    try {
      data = this.encode(rows);
    } catch (err) {
      return Promise.reject(asError(err));
    }
    return this.insertEncoded(table, rows.length, [data], columns);
  }
}

/** The bytes a store has taken and not yet done with, against its bound, kept in the pending-bytes gauge. */
export class PendingBytes {
  readonly max: number;
  readonly #metrics: Metrics;
  /** What the bytes wait for, for StoreBusyError's message. */
  readonly #what: string;
  #bytes = 0;

  constructor(max: number, what: string, metrics: Metrics) {
    this.max = max;
    this.#what = what;
    this.#metrics = metrics;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Why `bytes` more may not be taken now (past the bound), or undefined: a first commit always goes. */
  refusal(bytes: number): StoreBusyError | undefined {
    return this.#bytes > 0 && this.#bytes + bytes > this.max
      ? new StoreBusyError(this.#bytes, this.#what)
      : undefined;
  }

  add(bytes: number): void {
    this.#bytes += bytes;
    this.#metrics.storePendingBytes.set(this.#bytes);
  }
}
