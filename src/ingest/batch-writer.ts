import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Row, Store } from '../core/ports.ts';

interface PendingWrite {
  readonly rows: readonly Row[];
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export interface BatchWriterConfig {
  /** Most rows in one insert. */
  readonly maxRows: number;
}

export interface BatchWriterDeps {
  readonly store: Store;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** Order in which tables are flushed when several have rows waiting. */
const TABLE_ORDER = [
  'events',
  'ingestion_warnings',
  'persons',
  'person_distinct_ids',
  'groups',
  'group_type_mapping',
];

/**
 * Group commit, adaptive: rows accumulate while one insert is in flight, and the next insert takes all
 * that accumulated as soon as the previous returns. An insert costs a few milliseconds whatever its size
 * and the embedded engine runs one at a time, so this is what turns many small requests into few large
 * inserts without a fixed timer adding latency when load is light. `write` resolves when its rows are
 * committed, and rejects if their insert failed.
 */
export class BatchWriter {
  readonly #config: BatchWriterConfig;
  readonly #deps: BatchWriterDeps;
  readonly #pending = new Map<string, PendingWrite[]>();
  #running = false;
  #idleWaiters: (() => void)[] = [];

  constructor(config: BatchWriterConfig, deps: BatchWriterDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  write(table: string, rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let queue = this.#pending.get(table);
      if (!queue) {
        queue = [];
        this.#pending.set(table, queue);
      }
      queue.push({ rows, resolve, reject });
      if (!this.#running) void this.#loop();
    });
  }

  /** Resolves when every row written so far has been committed (or failed). */
  flushed(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #loop(): Promise<void> {
    this.#running = true;
    for (;;) {
      const table = this.#nextTable();
      if (table === undefined) break;
      const queue = this.#pending.get(table)!;
      let take = 0;
      let count = 0;
      while (
        take < queue.length &&
        (take === 0 || count + queue[take]!.rows.length <= this.#config.maxRows)
      ) {
        count += queue[take]!.rows.length;
        take++;
      }
      const taken = queue.splice(0, take);
      const rows = taken.length === 1 ? taken[0]!.rows : taken.flatMap((w) => w.rows);
      const started = performance.now();
      try {
        await this.#deps.store.insert(table, rows);
        this.#deps.metrics.storeInsertDuration.observe({ table }, (performance.now() - started) / 1000);
        this.#deps.metrics.storeInsertRows.observe({ table }, rows.length);
        for (const w of taken) w.resolve();
      } catch (err) {
        this.#deps.metrics.storeInsertErrors.inc({ table });
        this.#deps.logger.error({ err, table, rows: rows.length }, 'store insert failed');
        for (const w of taken) w.reject(err);
      }
    }
    this.#running = false;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  #nextTable(): string | undefined {
    for (const t of TABLE_ORDER) if ((this.#pending.get(t)?.length ?? 0) > 0) return t;
    for (const [t, q] of this.#pending) if (q.length > 0) return t;
    return undefined;
  }
}
