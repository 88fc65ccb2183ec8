import { deleteStatement, purgeStatement } from '../sql.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import {
  StoreUnavailable,
  type QueryOptions,
  type ParquetExporter,
  type QuarantineFilter,
  type QuarantinedRow,
  type QuarantineReplay,
  type QuarantineStore,
  type ResultTable,
  type Row,
  type Store,
  type TableQueryOptions,
  type TableReader,
} from '../../core/ports.ts';
import { jsonArrayOf } from '../json-rows.ts';
import { Quarantine } from '../quarantine.ts';
import { PendingBytes, RowInserts } from '../row-inserts.ts';
import type { ChdbClient } from './chdb-client.ts';
import { CommitLog, comparePositions, type LogFrame, type LogPosition } from './commit-log.ts';
import { LogApplier } from './log-applier.ts';

export interface LoggedStoreOptions {
  /** Directory of the commit log. */
  readonly dir: string;
  /** fdatasync each commit (survives power loss) or not (survives a crash of Weir). */
  readonly fsync: boolean;
  /** Bytes committed but not yet applied to the tables before inserts are refused (back-pressure). */
  readonly maxPendingBytes: number;
  /** Longest a committed row waits before it is applied when nothing asks for it sooner. @default 1000 */
  readonly applyIntervalMs?: number;
  /** Most bytes in one applied block. @default 32 MiB */
  readonly applyMaxBytes?: number;
}

export interface LoggedStoreDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

// Capped at Retry-After's one second: a client told to come back then should find the store caught up.
const BACKOFF_MS = [50, 100, 250, 500, 1000];

/**
 * Commits of the log under way at once. With the log's own writer thread (commit-thread.ts), one: what
 * queues meanwhile goes out together when it returns. Three under way (the thread then takes them back to
 * back) made more commits and no better tail.
 */
const COMMITS_IN_FLIGHT = 1;

/**
 * The embedded Store: a commit is an append to the commit log (see commit-log.ts for why), and an applier
 * moves the log into the ClickHouse tables in large blocks — every `applyIntervalMs`, sooner when a block
 * fills or half of `maxPendingBytes` waits (whichever is less: past the bound inserts are refused, and a
 * store must not refuse what it could have applied), and always before a query or command runs, so every
 * read sees every committed row.
 *
 * Each block is applied with a deduplication token recorded before its inserts, so a block re-applied after
 * a crash is not stored twice. A row the engine refuses is found by bisection and set aside in the store's
 * quarantine, with the engine's reason; the rest of its block is applied (log-applier.ts), and neither the
 * blocks behind it nor a restart ever wait on it. Any other failure (the engine cannot write) leaves the
 * block in the log and is retried with backoff: past `maxPendingBytes` inserts are refused, which capture
 * answers with 503, and reads, which must see every committed row, answer StoreUnavailable (503) meanwhile.
 */
export class LoggedStore extends RowInserts implements Store, TableReader, ParquetExporter, QuarantineStore {
  /** chDB holds the data directory locked: nothing else writes these tables while this process runs. */
  readonly soleWriter = true;
  readonly commitsInFlight = COMMITS_IN_FLIGHT;
  readonly #inner: ChdbClient;
  readonly #applier: LogApplier;
  readonly #log: CommitLog;
  readonly #deps: LoggedStoreDeps;
  readonly #options: Required<LoggedStoreOptions>;
  readonly #quarantine: Quarantine;
  /** Written, not yet applied, in log order. */
  #frames: LogFrame[] = [];
  /** Bytes of the frames and of the appends under way. */
  readonly #pending: PendingBytes;
  #applied: LogPosition;
  #applying: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Pending bytes from which the applier starts at once rather than at its interval (see the class). */
  readonly #applyAtBytes: number;
  #closed = false;
  #visibleWaiters: { readonly target: LogPosition; readonly resolve: () => void }[] = [];

  private constructor(
    inner: ChdbClient,
    log: CommitLog,
    applied: LogPosition,
    options: Required<LoggedStoreOptions>,
    deps: LoggedStoreDeps,
  ) {
    const pending = new PendingBytes(options.maxPendingBytes, 'committed and not yet applied', deps.metrics);
    super(pending);
    this.#pending = pending;
    this.#inner = inner;
    this.#quarantine = new Quarantine({
      insert: (table, data, token, columns) => inner.insertRaw(table, data, token, columns),
      // A read of the quarantine applies the log first, as every read does, so it lists what was just set aside.
      query: (sql, params) => this.query(sql, params),
      ...deps,
    });
    this.#applier = new LogApplier({
      engine: inner,
      setAside: (target, rows, token) => this.#quarantine.setAside(target, rows, token),
    });
    this.#log = log;
    this.#applied = applied;
    this.#options = options;
    this.#applyAtBytes = Math.min(options.applyMaxBytes, options.maxPendingBytes / 2);
    this.#deps = deps;
  }

  /** Opens the commit log over `inner` and applies whatever a previous run left in it. */
  static async open(
    inner: ChdbClient,
    options: LoggedStoreOptions,
    deps: LoggedStoreDeps,
  ): Promise<LoggedStore> {
    const full = { applyIntervalMs: 1000, applyMaxBytes: 32 * 1024 * 1024, ...options };
    const { log, recovery } = await CommitLog.open({
      dir: options.dir,
      fsync: options.fsync,
      maxInFlight: COMMITS_IN_FLIGHT,
    });
    if (recovery.truncatedBytes > 0)
      deps.logger.warn({ bytes: recovery.truncatedBytes }, 'commit log: cut off a torn write at its tail');
    for (const path of recovery.corruptSegments)
      deps.logger.error(
        { path },
        'commit log: a corrupt segment was set aside; its rows after the damage are not applied',
      );
    const store = new LoggedStore(inner, log, recovery.applied, full, deps);
    for (const f of recovery.frames) store.#track(f);
    if (recovery.frames.length > 0)
      deps.logger.info({ frames: recovery.frames.length }, 'commit log: applying what the last run left');
    if (recovery.intent) {
      // Re-apply exactly the block that was in progress, with its token, so nothing of it is stored twice.
      const through = recovery.intent.to;
      const count = store.#frames.findIndex((f) => comparePositions(f.end, through) > 0);
      const take = count === -1 ? store.#frames.length : count;
      await store.#applyBlock(store.#frames.slice(0, take), recovery.intent.token);
    }
    await store.#applyAll();
    return store;
  }

  /**
   * Commits encodings of `encode` as one frame of the log: one JSON array of all their rows (all objects, or
   * all values in the order of `columns`).
   */
  insertEncoded(
    table: string,
    rows: number,
    chunks: readonly Buffer[],
    columns?: readonly string[],
  ): Promise<void> {
    if (rows === 0) return Promise.resolve();
    if (this.#closed) return Promise.reject(new Error('the store is closed'));
    // (Logs of earlier versions hold one object a line; the applier reads both.)
    const data = jsonArrayOf(chunks);
    const busy = this.#pending.refusal(data.length);
    if (busy) return Promise.reject(busy);
    return this.#append(table, rows, data, columns);
  }

  async #append(
    table: string,
    count: number,
    data: Buffer,
    columns: readonly string[] | undefined,
  ): Promise<void> {
    const started = performance.now();
    this.#pending.add(data.length);
    let frame: LogFrame;
    try {
      frame = await this.#log.append(table, count, data, columns);
    } finally {
      this.#pending.add(-data.length);
    }
    this.#deps.metrics.storeCommitDuration.observe((performance.now() - started) / 1000);
    this.#track(frame);
    this.#schedule();
  }

  async query<T = Row>(
    sql: string,
    params: Record<string, unknown> = {},
    options: QueryOptions = {},
  ): Promise<T[]> {
    const end = this.#deps.metrics.storeQueryDuration.startTimer();
    try {
      if (options.fresh !== false) await this.#readable();
      return await this.#inner.query<T>(sql, params);
    } finally {
      end();
    }
  }

  /** Resolves once everything committed so far is applied to the tables (see `Store.visible`). */
  visible(): Promise<void> {
    const target = this.#frames.at(-1)?.end;
    if (target === undefined || comparePositions(this.#applied, target) >= 0) return Promise.resolve();
    return new Promise((resolve) => this.#visibleWaiters.push({ target, resolve }));
  }

  /** Runs one SELECT after applying what is committed, so it sees every acknowledged row. */
  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    const end = this.#deps.metrics.storeQueryDuration.startTimer();
    try {
      await this.#readable();
      return await this.#inner.queryTable(sql, params, options);
    } finally {
      end();
    }
  }

  /** Writes a query's result as Parquet (a materialization), over everything committed. */
  async exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    options: TableQueryOptions = {},
  ): Promise<void> {
    await this.#readable();
    await this.#inner.exportParquet(sql, params, path, options);
  }

  listQuarantined(filter: QuarantineFilter): Promise<QuarantinedRow[]> {
    return this.#quarantine.listQuarantined(filter);
  }

  replayQuarantined(filter: QuarantineFilter): Promise<QuarantineReplay[]> {
    return this.#quarantine.replayQuarantined(filter);
  }

  /**
   * Applies what is committed, so a read sees every acknowledged row. When that fails, the engine cannot
   * write now (a refused row never fails it: it is set aside): the read is told to come back, rather than
   * answered with the applier's error.
   */
  async #readable(): Promise<void> {
    try {
      await this.#applyAll();
    } catch (err) {
      throw new StoreUnavailable(
        'The store cannot apply the events it has committed right now, so a read would miss some; it retries on its own.',
        { cause: err },
      );
    }
  }

  /**
   * Runs a statement after applying what is committed. A statement is not held up by a failing apply: DDL
   * may be exactly what repairs it (a table renamed back), and the applier retries on its own.
   */
  async command(sql: string): Promise<void> {
    await this.#applyAll().catch(() => undefined);
    await this.#inner.command(sql);
    if (this.#failures > 0) {
      // The statement may have repaired what the applier tripped on: try again now, not after the backoff.
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#applyAll().catch(() => undefined);
    }
  }

  /**
   * Applies what is committed (or fails, to be retried: a row left in the log would be stored after the
   * delete), then starts the delete on the store's own connection and waits for the engine's pool to finish
   * it: the rows are masked for every read when it returns, and the connection is free meanwhile.
   */
  async deleteRows(table: string, where: string, params: Record<string, unknown>): Promise<void> {
    await this.#readable();
    await this.#inner.command(deleteStatement(table, where, '', false), params);
    await this.#mutationsDone(table, 'deleting from');
  }

  /**
   * Backs the tables up at one point of the log: everything committed before the call is applied, no block is
   * applied while `at` runs and ClickHouse's BACKUP copies the tables to `destination` (a `File(…)` or
   * `S3(…)` expression), so every table holds exactly the frames up to that point. `at` is told the point
   * and each table's rows there (the catalog's snapshot is taken in it). Commits go on meanwhile: they wait
   * in the log, as they do for any slow apply.
   */
  async backup<T>(
    destination: string,
    at: (point: { logId: string; position: LogPosition; rows: Record<string, number> }) => Promise<T> | T,
  ): Promise<T> {
    for (;;) {
      await this.#readable();
      if (this.#applying === undefined) break;
      await this.#applying.catch(() => undefined);
    }
    let release!: () => void;
    this.#applying = new Promise<void>((resolve) => (release = resolve));
    try {
      const tables = await this.#inner.query<{ name: string }>(
        `SELECT name FROM system.tables WHERE database = 'default' AND engine LIKE '%MergeTree' ORDER BY name`,
      );
      const rows: Record<string, number> = {};
      for (const t of tables) {
        // count(), not system.tables' total_rows: that still counts rows a lightweight delete masked.
        const [n] = await this.#inner.query<{ n: string }>(
          `SELECT toString(count()) AS n FROM \`${t.name}\``,
        );
        rows[t.name] = Number(n?.n ?? 0);
      }
      const result = await at({ logId: this.#log.logId, position: this.#applied, rows });
      await this.#inner.command(`BACKUP DATABASE default TO ${destination}`);
      return result;
    } finally {
      this.#applying = undefined;
      release();
      if (this.#frames.length > 0) this.#schedule();
    }
  }

  /**
   * Started on the store's own connection and left to the engine's background pool, then waited for by
   * polling, as a delete is: waited for in the statement, the rewrite of a large table held that
   * connection for seconds, and with it ingest's person lookups and the applier.
   */
  async purgeDeleted(table: string): Promise<void> {
    await this.#inner.command(purgeStatement(table, '', false));
    await this.#mutationsDone(table, 'rewriting without its deleted rows');
  }

  /**
   * Waits, by polling, until the engine has finished every mutation of `table` (a delete's mask, a purge's
   * rewrite) that the store's connection started and left to the background pool.
   */
  async #mutationsDone(table: string, what: string): Promise<void> {
    for (let delay = 20; ; delay = Math.min(1000, delay * 2)) {
      const [left] = await this.#inner.query<{ n: string; why: string }>(
        `SELECT toString(count()) AS n, any(latest_fail_reason) AS why FROM system.mutations
         WHERE database = currentDatabase() AND table = {table:String} AND NOT is_done`,
        { table },
      );
      if (Number(left?.n ?? 0) === 0) return;
      if (left?.why) throw new Error(`${what} ${table} failed: ${left.why}`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** Applies what is committed, then closes. What cannot be applied now stays in the log for next start. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    try {
      await this.#applyAll();
    } catch (err) {
      this.#deps.logger.error(
        { err, frames: this.#frames.length },
        'commit log: could not apply everything before stopping; the rest is applied at the next start',
      );
    }
    await this.#log.close();
    await this.#inner.close();
  }

  #track(frame: LogFrame): void {
    this.#frames.push(frame);
    this.#pending.add(frame.data.length);
  }

  #schedule(): void {
    if (this.#applying || this.#closed) return;
    // After a failure the backoff's timer decides when to try again, however much waits.
    if (this.#pending.bytes >= this.#applyAtBytes && this.#failures === 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#applyAll().catch(() => undefined);
      return;
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      void this.#applyAll().catch(() => undefined);
    }, this.#options.applyIntervalMs);
  }

  /**
   * Applies every frame written so far. One block at a time; a caller arriving while a block is applied
   * waits for it and then applies what remains. Rejects when a block fails (it stays in the log and a retry
   * is scheduled).
   */
  async #applyAll(): Promise<void> {
    const target = this.#frames.at(-1)?.end;
    if (target === undefined) return;
    while (comparePositions(this.#applied, target) < 0) {
      if (this.#applying) {
        await this.#applying;
        continue;
      }
      const block = this.#nextBlock();
      const run = this.#applyBlock(block, blockToken(this.#log.logId, this.#applied, block.at(-1)!.end));
      this.#applying = run;
      try {
        await run;
        this.#failures = 0;
      } catch (err) {
        this.#failures += 1;
        this.#deps.metrics.storeApplyErrors.inc();
        this.#deps.logger.error(
          { err, attempt: this.#failures },
          'commit log: applying a block failed; retrying',
        );
        this.#retryLater();
        throw err;
      } finally {
        this.#applying = undefined;
      }
    }
    if (this.#frames.length > 0) this.#schedule();
  }

  #nextBlock(): LogFrame[] {
    let bytes = 0;
    let i = 0;
    while (
      i < this.#frames.length &&
      (i === 0 || bytes + this.#frames[i]!.data.length <= this.#options.applyMaxBytes)
    ) {
      bytes += this.#frames[i]!.data.length;
      i++;
    }
    return this.#frames.slice(0, i);
  }

  #retryLater(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    const delay = BACKOFF_MS[Math.min(this.#failures, BACKOFF_MS.length) - 1]!;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#applyAll().catch(() => undefined);
    }, delay);
  }

  /** Moves `block` (the oldest frames) into the tables under `token`, then drops it from the log. */
  async #applyBlock(block: readonly LogFrame[], token: string): Promise<void> {
    if (block.length === 0) return;
    const to = block.at(-1)!.end;
    await this.#log.beginApply({ from: this.#applied, to, token });
    const started = performance.now();
    const rows = await this.#applier.apply(block, token);
    await this.#log.endApply(to);
    this.#applied = to;
    if (this.#visibleWaiters.length > 0) {
      const still = [];
      for (const w of this.#visibleWaiters) {
        if (comparePositions(w.target, to) <= 0) w.resolve();
        else still.push(w);
      }
      this.#visibleWaiters = still;
    }
    let bytes = 0;
    for (const f of block) bytes += f.data.length;
    this.#frames.splice(0, block.length);
    this.#pending.add(-bytes);
    this.#deps.metrics.storeApplyDuration.observe((performance.now() - started) / 1000);
    this.#deps.metrics.storeApplyRows.observe(rows);
  }
}

/** The deduplication token of the block of a log between two positions: the same block, the same token. */
export function blockToken(logId: string, from: LogPosition, to: LogPosition): string {
  return `${logId}:${from.segment}.${from.offset}-${to.segment}.${to.offset}`;
}
