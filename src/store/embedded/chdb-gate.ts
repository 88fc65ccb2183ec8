import { asError } from '../../errors/app-error.ts';

/**
 * Who a chDB call is for: the store's own work (applying the commit log, ingest's person and group lookups,
 * schema statements), or a reader of the query API and endpoint runs.
 */
export type GatePriority = 'store' | 'reader';

/** A call given up unrun: it waited for its turn longer than it was allowed to. */
export class EngineWaitTimeout extends Error {
  override name = 'EngineWaitTimeout';
  readonly waitedMs: number;

  constructor(waitedMs: number, maxWaitMs: number) {
    super(
      `waited ${seconds(waitedMs)} s for the engine, busy with other work, longer than the ${seconds(maxWaitMs)} s allowed`,
    );
    this.waitedMs = waitedMs;
  }
}

/** Milliseconds as seconds to a tenth, without a trailing `.0`. */
function seconds(ms: number): number {
  return Number((ms / 1000).toFixed(1));
}

interface Waiting {
  readonly since: number;
  readonly maxWaitMs: number;
  /** Runs the call in the place just handed over. */
  readonly start: () => void;
  /** Gives the call up unrun. */
  readonly expire: (waitedMs: number) => void;
}

/**
 * The queue in front of chDB, which runs one statement at a time. Left to itself, chdb-node queues the calls
 * in arrival order: parameterised queries in one promise chain of its own, any other call on a thread of
 * Node's libuv pool, which it holds while it waits for the engine. So:
 * - ingest's person lookups, and the commit log's apply, queued behind every query of the query API and of
 *   endpoint runs that came before them, and capture, which answers once ingest has stored its events, waited
 *   for all of those queries. Measured: a first-seen user's single event took 1.2-1.6 s (3.5 s once) while six
 *   queries of ~0.3 s each were queued; with the gate, 0.1 s (2-core machine, 2026-11-22).
 * - calls that are not parameterised take a pool thread each while they wait, and the pool has four: the
 *   file system's calls (the commit log's, before it had a thread of its own) then wait too. Measured in a
 *   script: with eight such queries in flight, an fdatasync issued 50 ms in finished after 1.7 s.
 *
 * The gate lets `limit` calls (one: the engine would run no more at once) go to chDB and keeps the rest here,
 * where they hold no thread, and it lets the store's own work go before readers, so a query that is waiting
 * holds up ingest for no longer than the one statement that is running. Readers keep their arrival order
 * among themselves, and so does the store's work.
 *
 * A call that fails is followed by `clear` in its own turn, before the next call starts. chDB 3.4 answers a
 * statement that fails part-way with its error but leaves what it had written (a header of names and types,
 * rows) in the connection's output buffer, and the next statement that succeeds gets that buffer whole, its
 * own answer after the leftover: a query read another's column names and types as rows, and ingest's
 * lookups would have read them as rows too. With a limit above one, calls share the connection and `clear`
 * cannot keep them apart: the store runs with one.
 */
export class ChdbGate {
  readonly #limit: number;
  readonly #onWaiting: ((waiting: number) => void) | undefined;
  readonly #now: () => number;
  readonly #clear: (() => Promise<unknown>) | undefined;
  /** The last `clear` failed: what a failed call left may still be there, so the next call clears first. */
  #unclean = false;
  #running = 0;
  readonly #store: Waiting[] = [];
  readonly #readers: Waiting[] = [];

  /**
   * `onWaiting` hears how many calls wait, whenever that changes (for a metric); `now` is the clock, in ms;
   * `clear` is a call that succeeds and so takes what a failed call left on the connection.
   */
  constructor(
    options: {
      readonly limit?: number;
      readonly onWaiting?: (waiting: number) => void;
      readonly now?: () => number;
      readonly clear?: () => Promise<unknown>;
    } = {},
  ) {
    this.#limit = Math.max(1, options.limit ?? 1);
    this.#onWaiting = options.onWaiting;
    this.#now = options.now ?? (() => performance.now());
    this.#clear = options.clear;
  }

  /** Calls waiting for their turn. */
  get waiting(): number {
    return this.#store.length + this.#readers.length;
  }

  /**
   * Runs `work` (one chDB call) when its turn comes; settles as it does. A call still waiting after
   * `maxWaitMs` is given up when its turn comes, without running (EngineWaitTimeout): a reader whose caller
   * has had its answer (a timeout) by then would only hold up the calls behind it.
   */
  run<T>(priority: GatePriority, work: () => Promise<T>, maxWaitMs = Infinity): Promise<T> {
    if (this.#running < this.#limit) {
      this.#running++;
      return this.#execute(work);
    }
    return new Promise<T>((resolve, reject) => {
      (priority === 'store' ? this.#store : this.#readers).push({
        since: this.#now(),
        maxWaitMs,
        start: () => {
          this.#execute(work).then(resolve, reject);
        },
        expire: (waitedMs) => reject(new EngineWaitTimeout(waitedMs, maxWaitMs)),
      });
      this.#onWaiting?.(this.waiting);
    });
  }

  #execute<T>(work: () => Promise<T>): Promise<T> {
    return this.#turn(work).finally(() => this.#release());
  }

  /**
   * One turn: `work`, cleared after if it fails. The caller of a failed call hears its own error, not the
   * clear's. A call whose turn comes while a clear is still owed clears first, and fails with the clear's
   * error if it fails again: its answer would begin with another call's bytes.
   */
  async #turn<T>(work: () => Promise<T>): Promise<T> {
    if (this.#unclean) await this.#clearNow();
    try {
      return await work();
    } catch (err) {
      if (this.#clear) await this.#clearNow().catch(() => undefined);
      throw asError(err);
    }
  }

  async #clearNow(): Promise<void> {
    this.#unclean = true;
    await this.#clear?.();
    this.#unclean = false;
  }

  /**
   * Hands the finished call's place to the next in line (the store's work first), giving up on the way those
   * that waited too long; or frees the place.
   */
  #release(): void {
    let expired = false;
    for (;;) {
      const next = this.#store.shift() ?? this.#readers.shift();
      if (!next) {
        this.#running--;
        if (expired) this.#onWaiting?.(0);
        return;
      }
      const waited = this.#now() - next.since;
      if (waited > next.maxWaitMs) {
        next.expire(waited);
        expired = true;
        continue;
      }
      this.#onWaiting?.(this.waiting);
      next.start();
      return;
    }
  }
}
