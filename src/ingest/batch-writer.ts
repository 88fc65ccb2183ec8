import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Row, Store, Values } from '../core/ports.ts';
import { asError } from '../errors/app-error.ts';

interface PendingWrite {
  /** With rows given as values, their columns (one array for all writes of a kind: compared by identity). */
  readonly columns: readonly string[] | undefined;
  /** The rows' bytes (`Store.encode`). */
  readonly encoded: Buffer;
  readonly count: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export interface BatchWriterConfig {
  /** Most rows in one insert. */
  readonly maxRows: number;
  /**
   * Under load (the last round held at least `spacedFromRows` rows), a round starts no sooner than this
   * after the one before it started; rows written meanwhile wait and go together. @default 1
   */
  readonly roundSpacingMs?: number;
  /** @default 8 */
  readonly spacedFromRows?: number;
}

/**
 * Why rounds are spaced under load: a commit costs the thread that asks for it a fixed amount whatever it
 * holds (framing, the hand-over to the commit thread, settling the round), so back-to-back rounds of a few
 * rows each spent the main thread's CPU on commits; spaced by a timer, rounds are fewer and fuller.
 * Light load (rounds of a few rows) is not spaced, so a lone request waits for no timer.
 */
const ROUND_SPACING_MS = 1;
const SPACED_FROM_ROWS = 8;

export interface BatchWriterDeps {
  readonly store: Store;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * Group commit, adaptive: a round takes the rows written in one synchronous stretch; rows accumulate while
 * the store has as many rounds under way as it takes at once (`Store.commitsInFlight`: one for the
 * embedded store, more for a server), and the next round takes all that accumulated as soon as one
 * returns. Many small requests become few commits without a fixed timer adding latency when load is light;
 * under load, rounds are spaced (`roundSpacingMs`) so that each carries more. A round commits every table
 * that has rows waiting, concurrently: the embedded store folds them into one write of its
 * commit log (one fdatasync), and a ClickHouse server takes them as parallel inserts. `write` resolves when
 * its rows are committed, and rejects if their commit failed.
 */
export class BatchWriter {
  readonly #config: BatchWriterConfig;
  readonly #deps: BatchWriterDeps;
  readonly #pending = new Map<string, PendingWrite[]>();
  readonly #maxRounds: number;
  readonly #spacingMs: number;
  readonly #spacedFromRows: number;
  /** When the last round started (performance.now()), and the rows it took. */
  #lastRoundAt = -Infinity;
  #lastRoundRows = 0;
  /** Rounds under way. */
  #rounds = 0;
  /** A round is queued to start after the current synchronous stretch. */
  #queued = false;
  #idleWaiters: (() => void)[] = [];

  /** Writes not yet committed or failed. */
  readonly #unsettled = new Set<Promise<void>>();

  constructor(config: BatchWriterConfig, deps: BatchWriterDeps) {
    this.#config = config;
    this.#deps = deps;
    this.#maxRounds = Math.max(1, deps.store.commitsInFlight);
    this.#spacingMs = config.roundSpacingMs ?? ROUND_SPACING_MS;
    this.#spacedFromRows = config.spacedFromRows ?? SPACED_FROM_ROWS;
  }

  /**
   * Queues rows for the next commit of `table`, encoded here, at once (`Store.encode`): while an earlier
   * commit waits for the disk or the server, the queue then holds bytes, not row objects that
   * young-generation GCs would have to copy.
   */
  write(table: string, rows: readonly Row[]): Promise<void> {
    return this.#write(table, rows, undefined);
  }

  /**
   * `write` for rows given as values in the order of `columns`. Pass the same `columns` array every time:
   * writes are committed together only with writes of the same array.
   */
  writeValues(table: string, columns: readonly string[], rows: readonly Values[]): Promise<void> {
    return this.#write(table, rows, columns);
  }

  #write(
    table: string,
    rows: readonly Row[] | readonly Values[],
    columns: readonly string[] | undefined,
  ): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    let encoded: Buffer;
    try {
      encoded = this.#deps.store.encode(rows);
    } catch (err) {
      return Promise.reject(asError(err));
    }
    const count = rows.length;
    const written = new Promise<void>((resolve, reject) => {
      let queue = this.#pending.get(table);
      if (!queue) {
        queue = [];
        this.#pending.set(table, queue);
      }
      queue.push({ columns, encoded, count, resolve, reject });
      this.#schedule();
    });
    this.#unsettled.add(written);
    const settle = (): void => void this.#unsettled.delete(written);
    written.then(settle, settle);
    return written;
  }

  /**
   * Resolves once every write made before the call has been committed or has failed (later ones are not
   * waited for, so a busy writer still answers): an erasure's deletes then meet every row written before.
   */
  writtenSoFar(): Promise<void> {
    return Promise.allSettled([...this.#unsettled]).then(() => undefined);
  }

  /** Resolves once every row committed so far is visible to the store's `fresh: false` queries. */
  visible(): Promise<void> {
    return this.#deps.store.visible();
  }

  /** Resolves when every row written so far has been committed (or failed). */
  flushed(): Promise<void> {
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #idle(): boolean {
    return this.#rounds === 0 && !this.#queued && !this.#hasPending();
  }

  #hasPending(): boolean {
    for (const queue of this.#pending.values()) if (queue.length > 0) return true;
    return false;
  }

  /**
   * Starts a round after the current synchronous stretch, so the writes made in it go together — or, under
   * load, once the spacing since the last round's start has passed.
   */
  #schedule(): void {
    if (this.#queued || this.#rounds >= this.#maxRounds) return;
    this.#queued = true;
    const wait =
      this.#lastRoundRows >= this.#spacedFromRows
        ? this.#lastRoundAt + this.#spacingMs - performance.now()
        : 0;
    if (wait > 0) setTimeout(this.#startRound, wait);
    else queueMicrotask(this.#startRound);
  }

  readonly #startRound = (): void => {
    this.#queued = false;
    this.#round();
  };

  #round(): void {
    this.#lastRoundAt = performance.now();
    const round: Promise<void>[] = [];
    let rows = 0;
    for (const [table, queue] of this.#pending) {
      if (queue.length === 0) continue;
      const taken = this.#take(queue);
      rows += taken.rows;
      round.push(this.#commit(table, taken.writes, taken.rows));
    }
    this.#lastRoundRows = rows;
    if (round.length > 0) {
      this.#rounds++;
      // #commit never rejects: the writes' own promises carry the outcome.
      void Promise.all(round).then(() => {
        this.#rounds--;
        this.#next();
      });
    }
    this.#next();
  }

  /** Another round if rows wait (more than one round's worth, or written meanwhile), else wakes `flushed`. */
  #next(): void {
    if (this.#hasPending()) this.#schedule();
    else if (this.#idle()) for (const w of this.#idleWaiters.splice(0)) w();
  }

  /**
   * The oldest writes of `queue`, up to `maxRows` rows (at least one write, however large) and all of one
   * form (objects, or values of one column list), and their rows.
   */
  #take(queue: PendingWrite[]): { writes: PendingWrite[]; rows: number } {
    let take = 0;
    let rows = 0;
    const columns = queue[0]?.columns;
    while (
      take < queue.length &&
      (take === 0 || (rows + queue[take]!.count <= this.#config.maxRows && queue[take]!.columns === columns))
    ) {
      rows += queue[take]!.count;
      take++;
    }
    return { writes: queue.splice(0, take), rows };
  }

  /**
   * Commits `taken` (`count` rows) as one insert into `table`; never rejects (the writes' own promises carry
   * the outcome).
   */
  #commit(table: string, taken: PendingWrite[], count: number): Promise<void> {
    const started = performance.now();
    let inserted: Promise<void>;
    try {
      inserted = this.#deps.store.insertEncoded(
        table,
        count,
        taken.map((w) => w.encoded),
        taken[0]!.columns,
      );
    } catch (err) {
      inserted = Promise.reject(asError(err));
    }
    return this.#settle(table, count, started, inserted, taken);
  }

  async #settle(
    table: string,
    count: number,
    started: number,
    inserted: Promise<void>,
    taken: readonly PendingWrite[],
  ): Promise<void> {
    try {
      await inserted;
      this.#deps.metrics.storeInsertDuration.observe({ table }, (performance.now() - started) / 1000);
      this.#deps.metrics.storeInsertRows.observe({ table }, count);
      for (const w of taken) w.resolve();
    } catch (err) {
      this.#deps.metrics.storeInsertErrors.inc({ table });
      this.#deps.logger.error({ err, table, rows: count }, 'store insert failed');
      for (const w of taken) w.reject(err);
    }
  }
}
