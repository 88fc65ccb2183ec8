import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type {
  QueryOptions,
  ParquetExporter,
  ResultTable,
  Row,
  Store,
  TableQueryOptions,
  TableReader,
  Values,
} from '../../core/ports.ts';
import { ClickHouseStore, migrate } from './chdb-client.ts';
import { CommitLog, comparePositions, type LogFrame, type LogPosition } from './commit-log.ts';
import { asError } from '../../errors/app-error.ts';

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

/** The store cannot take more rows until the tables catch up with the commit log. */
export class StoreBusyError extends Error {
  constructor(pendingBytes: number) {
    super(`the store is behind: ${pendingBytes} bytes committed and not yet applied`);
    this.name = 'StoreBusyError';
  }
}

/**
 * ClickHouse errors that say a row's data is bad (a parse or type error), as opposed to the store being
 * unable to write at all. Only these make the applier look for the rows at fault.
 */
const DATA_ERROR_CODES = new Set([
  6, 26, 27, 33, 38, 41, 53, 69, 70, 72, 73, 117, 131, 321, 376, 407, 441, 467, 468, 691,
]);

function isDataError(err: unknown): boolean {
  const code = (err as { clickhouseCode?: unknown }).clickhouseCode;
  return typeof code === 'number' && DATA_ERROR_CODES.has(code);
}

// Capped at Retry-After's one second: a client told to come back then should find the store caught up.
const BACKOFF_MS = [50, 100, 250, 500, 1000];

/**
 * Commits of the log under way at once. With the log's own writer thread (commit-thread.ts), one: what
 * queues meanwhile goes out together when it returns. Against three under way (the thread then takes them
 * back to back), at 5,000 single-event requests/s in three alternated pairs: p99 16.9, 15.5 and 16.4 ms
 * against 19.5, 14.6 and 18.7, p99.9 lower in all three, 10-36% fewer commits
 * (bench/results/single-event-latency.md).
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
 * a crash is not stored twice. A row the engine refuses (bad data) is found by bisection, written to
 * `rejected.jsonl` beside the log, counted and logged; the rest of its block is applied. Any other failure
 * leaves the block in the log and is retried with backoff; past `maxPendingBytes` inserts are refused, which
 * capture answers with 503.
 */
export class LoggedStore implements Store, TableReader, ParquetExporter {
  /** chDB holds the data directory locked: nothing else writes these tables while this process runs. */
  readonly soleWriter = true;
  readonly #inner: ClickHouseStore;
  readonly #log: CommitLog;
  readonly #deps: LoggedStoreDeps;
  readonly #options: Required<LoggedStoreOptions>;
  /** Written, not yet applied, in log order. */
  #frames: LogFrame[] = [];
  #pendingBytes = 0;
  #applied: LogPosition;
  #applying: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Pending bytes from which the applier starts at once rather than at its interval (see the class). */
  readonly #applyAtBytes: number;
  #closed = false;
  /** Where `encode` writes: a shared slab, as Node's pool does for small buffers (see `encode`). */
  #slab = Buffer.alloc(0);
  #slabUsed = 0;
  #visibleWaiters: { readonly target: LogPosition; readonly resolve: () => void }[] = [];

  private constructor(
    inner: ClickHouseStore,
    log: CommitLog,
    applied: LogPosition,
    options: Required<LoggedStoreOptions>,
    deps: LoggedStoreDeps,
  ) {
    this.#inner = inner;
    this.#log = log;
    this.#applied = applied;
    this.#options = options;
    this.#applyAtBytes = Math.min(options.applyMaxBytes, options.maxPendingBytes / 2);
    this.#deps = deps;
  }

  /** Opens the commit log over `inner` and applies whatever a previous run left in it. */
  static async open(
    inner: ClickHouseStore,
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

  insert(table: string, rows: readonly Row[]): Promise<void> {
    return this.#insertRows(table, rows, undefined);
  }

  insertValues(table: string, columns: readonly string[], rows: readonly Values[]): Promise<void> {
    return this.#insertRows(table, rows, columns);
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

  /**
   * One JSON array of the rows: a third less CPU than a JSON text per row (2.4 against 3.5 µs a row, bytes
   * included, measured on event rows), and ClickHouse's JSONEachRow reads an array of objects as rows (for
   * rows of values, the applier hands JSONCompactEachRow the array's members).
   */
  encode(rows: readonly Row[] | readonly Values[]): Buffer {
    const text = JSON.stringify(rows);
    // A JSON text of a few rows is ~0.5-15 KB: past Node's own 4 KB pool, `Buffer.from` would make each its own
    // ArrayBuffer (2.5× the time of writing into a slab, measured on 6.7 KB texts, and an external allocation
    // each, which drives GC). Encodings are short-lived (the commit copies them into its frame), so a slab
    // is let go soon after it fills.
    const most = text.length * 3;
    if (most > SLAB_BYTES / 4) return Buffer.from(text);
    if (this.#slabUsed + most > this.#slab.length) {
      this.#slab = Buffer.allocUnsafe(SLAB_BYTES);
      this.#slabUsed = 0;
    }
    const start = this.#slabUsed;
    this.#slabUsed += this.#slab.write(text, start);
    return this.#slab.subarray(start, this.#slabUsed);
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
    if (this.#pendingBytes > 0 && this.#pendingBytes + data.length > this.#options.maxPendingBytes)
      return Promise.reject(new StoreBusyError(this.#pendingBytes));
    return this.#append(table, rows, data, columns);
  }

  async #append(
    table: string,
    count: number,
    data: Buffer,
    columns: readonly string[] | undefined,
  ): Promise<void> {
    const started = performance.now();
    this.#pendingBytes += data.length;
    let frame: LogFrame;
    try {
      frame = await this.#log.append(table, count, data, columns);
    } catch (err) {
      this.#pendingBytes -= data.length;
      throw err;
    }
    this.#pendingBytes -= data.length;
    this.#deps.metrics.storeCommitDuration.observe((performance.now() - started) / 1000);
    this.#track(frame);
    this.#schedule();
  }

  /**
   * Takes new requests while under three quarters of the bound; the last quarter is headroom for requests
   * already taken, so a request is refused whole rather than stored in part.
   */
  accepting(): boolean {
    return this.#pendingBytes <= this.#options.maxPendingBytes * 0.75;
  }

  async query<T = Row>(
    sql: string,
    params: Record<string, unknown> = {},
    options: QueryOptions = {},
  ): Promise<T[]> {
    const end = this.#deps.metrics.storeQueryDuration.startTimer();
    try {
      if (options.fresh !== false) await this.#applyAll();
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
      await this.#applyAll();
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
    await this.#applyAll();
    await this.#inner.exportParquet(sql, params, path, options);
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
    this.#pendingBytes += frame.data.length;
    this.#deps.metrics.storePendingBytes.set(this.#pendingBytes);
  }

  #schedule(): void {
    if (this.#applying || this.#closed) return;
    // After a failure the backoff's timer decides when to try again, however much waits.
    if (this.#pendingBytes >= this.#applyAtBytes && this.#failures === 0) {
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
    // One insert per table and form: rows as objects, or as values of one column list.
    const inserts = new Map<
      string,
      { table: string; columns: readonly string[] | undefined; parts: Buffer[] }
    >();
    let rows = 0;
    for (const f of block) {
      rows += f.rows;
      const key = f.columns ? `${f.table}(${f.columns.join(',')})` : f.table;
      const insert = inserts.get(key);
      if (insert) insert.parts.push(f.data);
      else inserts.set(key, { table: f.table, columns: f.columns, parts: [f.data] });
    }
    for (const [key, { table, columns, parts }] of inserts) {
      // Rows as objects keep the token suffix of earlier versions, so that a block they began is re-applied
      // under the same tokens.
      await this.#insertChecked(
        { table, columns },
        columns ? jsonMemberParts(parts) : jsonArrayParts(parts),
        columns ? `${token}:${key}` : `${token}:${table}`,
      );
    }
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
    this.#pendingBytes -= bytes;
    this.#deps.metrics.storePendingBytes.set(this.#pendingBytes);
    this.#deps.metrics.storeApplyDuration.observe((performance.now() - started) / 1000);
    this.#deps.metrics.storeApplyRows.observe(rows);
  }

  /**
   * Inserts `data` (one JSON array, in parts); on a data error, finds the rows at fault by bisection and sets
   * them aside. When every row fails, the fault is not in the rows (a schema the rows do not fit, say):
   * nothing is set aside, the error stands, and the block is retried later like any other failure.
   */
  async #insertChecked(target: Target, data: readonly Buffer[], token: string): Promise<void> {
    try {
      await this.#inner.insertRaw(target.table, data, token, target.columns);
    } catch (err) {
      if (!isDataError(err)) throw err;
      const lines = rowLines(Buffer.concat(data), target.columns !== undefined);
      const refused: { line: number; err: unknown }[] = [];
      await this.#bisect(target, lines, 0, lines.length, token, err, refused);
      if (refused.length === lines.length) throw err;
      for (const r of refused) await this.#reject(target, lines[r.line]!, r.err);
    }
  }

  /** Inserts the good rows of `lines[lo, hi)` (which failed as a whole with `err`); collects the refused ones. */
  async #bisect(
    target: Target,
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
        await this.#inner.insertRaw(target.table, lines.slice(a, b), `${token}:${a}-${b}`, target.columns);
      } catch (e) {
        if (!isDataError(e)) throw e;
        await this.#bisect(target, lines, a, b, token, e, refused);
      }
    }
  }

  async #reject({ table, columns }: Target, line: Buffer, err: unknown): Promise<void> {
    // A row of values is set aside as an object, named the way an operator reads it.
    const row = columns ? JSON.stringify(valuesAsRow(columns, line)) : line.toString().trimEnd();
    const error = err instanceof Error ? err.message.split('\n')[0] : String(err);
    this.#deps.metrics.storeRowsRejected.inc({ table });
    this.#deps.logger.error(
      { table, error },
      'commit log: the store refused a row; set aside in rejected.jsonl',
    );
    await appendFile(
      join(this.#options.dir, 'rejected.jsonl'),
      `${JSON.stringify({ at: new Date().toISOString(), table, error, row })}\n`,
    );
  }
}

/** The deduplication token of the block of a log between two positions: the same block, the same token. */
export function blockToken(logId: string, from: LogPosition, to: LogPosition): string {
  return `${logId}:${from.segment}.${from.offset}-${to.segment}.${to.offset}`;
}

/**
 * One JSON array of the rows of several frames, each an array (or, from logs of earlier versions, one object
 * a line): JSONEachRow input reads one array, not several one after another. Always a buffer of its own,
 * unless given one whole buffer that is an array already: a view into `encode`'s slab, kept as a frame until
 * applied, would keep the whole slab.
 */
export function jsonArrayOf(frames: readonly Buffer[]): Buffer {
  const only = frames.length === 1 ? frames[0]! : undefined;
  if (only && only[0] === OPEN_BRACKET && only.byteLength === only.buffer.byteLength) return only;
  return Buffer.concat(jsonArrayParts(frames));
}

/**
 * `jsonArrayOf` as the pieces to write one after another, without copying them into one buffer: the applier
 * hands a block of a few MB to the engine this way (a copy of it on the main thread took milliseconds).
 */
export function jsonArrayParts(frames: readonly Buffer[]): Buffer[] {
  return [OPEN, ...jsonMemberParts(frames), CLOSE];
}

/**
 * `jsonArrayParts` without the enclosing brackets: the rows of the frames, one after another, separated by
 * commas. JSONCompactEachRow, which rows given as values go to, reads rows so and reads no enclosing array.
 */
function jsonMemberParts(frames: readonly Buffer[]): Buffer[] {
  const parts: Buffer[] = [];
  for (const f of frames) {
    const members = f[0] === OPEN_BRACKET ? f.subarray(1, f.length - 1) : linesAsMembers(f);
    if (members.length === 0) continue;
    if (parts.length > 0) parts.push(COMMA);
    parts.push(members);
  }
  return parts;
}

const OPEN_BRACKET = 0x5b;
const SLAB_BYTES = 4 * 1024 * 1024;
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const COMMA = Buffer.from(',');

/** JSON lines as array members: a JSON text holds no raw newline, so every newline separates two rows. */
function linesAsMembers(lines: Buffer): Buffer {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] === 0x0a || lines[end - 1] === 0x0d)) end--;
  const out = Buffer.from(lines.subarray(0, end));
  for (let i = out.indexOf(0x0a); i !== -1; i = out.indexOf(0x0a, i + 1)) out[i] = 0x2c;
  return out;
}

/** What one insert of the applier goes to: a table, with the column list of rows given as values. */
interface Target {
  readonly table: string;
  readonly columns: readonly string[] | undefined;
}

/**
 * The rows of a block one JSON text a line (each ending in a newline), to look for the ones at fault. Rows of
 * values (`values`) come as the members of arrays, separated by commas.
 */
function rowLines(data: Buffer, values: boolean): Buffer[] {
  if (!values && data[0] !== OPEN_BRACKET) return splitLines(data);
  const text = data.toString('utf8');
  const rows = JSON.parse(values ? `[${text}]` : text) as unknown[];
  return rows.map((r) => Buffer.from(`${JSON.stringify(r)}\n`));
}

/** A row of values (one JSON text) as an object of its columns. */
function valuesAsRow(columns: readonly string[], line: Buffer): Row {
  const values = JSON.parse(line.toString('utf8')) as unknown[];
  return Object.fromEntries(columns.map((c, i) => [c, values[i]]));
}

function splitLines(data: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (;;) {
    const nl = data.indexOf(10, start);
    if (nl === -1) break;
    lines.push(data.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < data.length) lines.push(data.subarray(start));
  return lines;
}

export interface EmbeddedStoreConfig {
  readonly dataDir: string;
  readonly storeFsync: boolean;
  readonly storeMaxPendingMb: number;
  readonly storeApplyIntervalMs: number;
}

/**
 * Opens the embedded store of a data directory: chDB in `<dataDir>/chdb`, schema migrated, and the commit log
 * in `<dataDir>/commit-log` applied, so what a previous run committed is in the tables before anything reads.
 */
export async function openEmbeddedStore(
  config: EmbeddedStoreConfig,
  deps: LoggedStoreDeps,
): Promise<LoggedStore> {
  const inner = ClickHouseStore.open(
    { kind: 'chdb', path: join(config.dataDir, 'chdb') },
    { onEngineWaiting: (n) => deps.metrics.storeEngineWaiting.set(n) },
  );
  try {
    await migrate(inner, deps.logger);
    return await LoggedStore.open(
      inner,
      {
        dir: join(config.dataDir, 'commit-log'),
        fsync: config.storeFsync,
        maxPendingBytes: config.storeMaxPendingMb * 1024 * 1024,
        applyIntervalMs: config.storeApplyIntervalMs,
      },
      deps,
    );
  } catch (err) {
    await inner.close().catch(() => undefined);
    throw err;
  }
}
