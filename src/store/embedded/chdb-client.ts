import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { Session } from 'chdb';
import { createChdbConnection } from 'chdb/connection';
import {
  StoreQueryError,
  StoreWaitTimeout,
  type ParquetExporter,
  type ResultTable,
  type Row,
  type Values,
  type Store,
  type TableQueryOptions,
  type TableReader,
} from '../../core/ports.ts';
import type { Logger } from '../../core/logger.ts';
import { ChdbGate, EngineWaitTimeout, type GatePriority } from './chdb-gate.ts';
import { MIGRATIONS, type Migration } from '../migrations.ts';

type ChConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];

export type StoreLocation =
  { readonly kind: 'chdb'; readonly path: string } | { readonly kind: 'http'; readonly url: string };

/** chDB's own query call: runs off the main thread; its errors carry the engine's code as `clickhouseCode`. */
type ChdbQuery = (sql: string, options: { format: string }) => Promise<unknown>;
type ChdbBoundQuery = (sql: string, params: Record<string, unknown>) => Promise<void>;

/**
 * How the embedded store inserts a block of JSONEachRow bytes: written to a file of its own, then read by the
 * engine with `INSERT … FROM INFILE`. chDB's passthrough insert (`rawInsert`, the bytes inline after the
 * statement) cost ~5 µs more engine CPU per event row than the same bytes read from a file (7.7-9.0 against
 * 2.2-3.3 µs a row, 5,000-row blocks of event rows, measured on this project's 2-core machine, 2026-11-22)
 * — a sixth of all the CPU an event costs. The file is only a hand-over: the commit log holds the durable
 * copy, so it is not synced, and it is removed once the insert ends.
 */
class FileInserts {
  readonly #dir: string;
  readonly #query: ChdbQuery;
  #next = 0;

  constructor(dir: string, query: ChdbQuery) {
    // What a crash left mid-insert is in the commit log still: the files can go.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    this.#dir = dir;
    this.#query = query;
  }

  /** `columns`: the data is rows of values in their order (JSONCompactEachRow), not objects (JSONEachRow). */
  async insert(
    table: string,
    data: readonly Buffer[],
    settings: Readonly<Record<string, string | number>>,
    columns: readonly string[] | undefined,
  ): Promise<void> {
    const file = join(this.#dir, `${++this.#next}.json`);
    try {
      const handle = await open(file, 'w');
      try {
        await handle.writev(data);
      } finally {
        await handle.close();
      }
      const with_ = Object.entries(settings)
        .map(([k, v]) => `${k} = ${typeof v === 'number' ? v : sqlString(v)}`)
        .join(', ');
      await this.#query(
        `INSERT INTO \`${table}\`${columnList(columns)} FROM INFILE ${sqlString(file)} COMPRESSION 'none' ` +
          `SETTINGS ${with_} FORMAT ${columns ? 'JSONCompactEachRow' : 'JSONEachRow'}`,
        { format: 'CSV' },
      );
    } finally {
      await rm(file, { force: true });
    }
  }
}

/** ` (a, b, …)` for the columns of rows given as values; nothing for rows given as objects. */
function columnList(columns: readonly string[] | undefined): string {
  return columns ? ` (${columns.map((c) => `\`${c}\``).join(', ')})` : '';
}

/** A ClickHouse string literal. */
function sqlString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Settings of every insert. Rows reach the store already deduplicated by uuid; re-sorting and collapsing each
 * block costs a good share of a small insert, and merges (or FINAL) still collapse replaced versions. A JSON
 * object given for a String column is stored as its JSON text: a row may carry `properties` as an object, so
 * it is serialised once, with the row, rather than once alone and again escaped inside the row.
 */
const INSERT_SETTINGS = { optimize_on_insert: 0, input_format_json_read_objects_as_strings: 1 } as const;

/**
 * In-process (chDB), an insert runs on one thread: on a small machine the engine's parallel parsing took the
 * cores capture and ingest run on, for no gain in throughput (measured: the same CPU per row either way), and
 * the bursts showed up as latency spikes in capture.
 */
const EMBEDDED_INSERT_SETTINGS = {
  ...INSERT_SETTINGS,
  input_format_parallel_parsing: 0,
  max_threads: 1,
  max_insert_threads: 1,
} as const;

/**
 * Threads the in-process engine runs its background merges on, on a machine of `cores` cores: one core is
 * left to capture and ingest. chDB's own default is two, and on a 2-core machine a merge (a few hundred ms
 * of CPU on each of two threads, every few seconds under load) then took both cores from the main thread:
 * at the single-event max-throughput search (`npm run bench:capture -- --mode single`), three alternated
 * pairs sustained 50,725, 51,099 and 49,541 requests/s with one merge thread against 41,016, 46,750 and
 * 47,389 with two (bench/results/single-event-latency.md, session 15). One thread merges far faster than
 * a part a second per table is made.
 */
export function embeddedMergeThreads(cores: number): number {
  return Math.min(2, Math.max(1, cores - 1));
}

/**
 * The Store on ClickHouse through `@clickhouse/client`: over HTTP to a server, or in-process on chDB via
 * `chdb/connection`. The SQL is the same; only the connection differs. The client's types stay in here.
 */
export class ClickHouseStore implements Store, TableReader, ParquetExporter {
  readonly #client: ClickHouseClient;
  readonly #fileInserts: FileInserts | undefined;
  /** In-process (chDB) only: every engine call waits its turn here, not on a thread of Node's pool. */
  readonly #gate: ChdbGate | undefined;
  /** In-process only: the connection that configured the engine (see `open`), closed last. */
  readonly #engine: Session | undefined;
  /** In-process only: runs a statement with bound parameters that writes its own output file. */
  readonly #outfile: ChdbBoundQuery | undefined;

  private constructor(
    client: ClickHouseClient,
    fileInserts?: FileInserts,
    gate?: ChdbGate,
    engine?: Session,
    outfile?: ChdbBoundQuery,
  ) {
    this.#client = client;
    this.#fileInserts = fileInserts;
    this.#gate = gate;
    this.#engine = engine;
    this.#outfile = outfile;
  }

  /** `onEngineWaiting`: in-process, hears how many engine calls wait for their turn (see ChdbGate). */
  static open(
    location: StoreLocation,
    options: { readonly onEngineWaiting?: (waiting: number) => void } = {},
  ): ClickHouseStore {
    if (location.kind === 'http') return new ClickHouseStore(createClient({ url: location.url }));
    // chDB configures its engine from the first connection to a data directory, and `chdb/connection` opens
    // its own without engine arguments: this session carries them, and stays open as long as the store.
    const engine = new Session(location.path, {
      connectionArgs: [`--background_pool_size=${embeddedMergeThreads(availableParallelism())}`],
    });
    try {
      const connection = createChdbConnection({ path: location.path });
      // chdb ships its own copy of clickhouse-js's Connection types; the shapes are the same.
      const client = createClient({ connection: connection as unknown as ChConnection });
      const { chdb } = connection as unknown as { chdb: { queryAsync: ChdbQuery } };
      const gate = new ChdbGate({
        onWaiting: options.onEngineWaiting,
        // Any statement that succeeds takes what a failed one left on the connection (see ChdbGate); this
        // one adds nothing of its own.
        clear: () => chdb.queryAsync('SELECT 1 FORMAT Null', { format: 'CSV' }),
      });
      const fileInserts = new FileInserts(join(location.path, 'weir-inserts'), (sql, options) =>
        gate.run('store', () => chdb.queryAsync(sql, options)),
      );
      // The connection's own calls take no parameters; the engine's session does, on the same engine. It
      // serves only statements that write their own output file, so nothing it answers is ever read.
      const outfile: ChdbBoundQuery = (sql, params) =>
        engine.queryBindAsync(sql, params, { format: 'CSV' }).then(() => undefined);
      return new ClickHouseStore(client, fileInserts, gate, engine, outfile);
    } catch (err) {
      engine.close();
      throw err;
    }
  }

  /** `work` (one engine call) through the gate when the engine is in-process, else at once. */
  #call<T>(priority: GatePriority, work: () => Promise<T>, maxWaitMs?: number): Promise<T> {
    return this.#gate ? this.#gate.run(priority, work, maxWaitMs) : work();
  }

  /**
   * Inserts rows already written as JSON bytes, given in parts that follow one another, as one block: objects
   * (JSONEachRow, one array or one a line), or with `columns`, arrays of their values in that order
   * (JSONCompactEachRow, separated by commas or newlines). `token` makes a repeated insert of the same block
   * a no-op (tables carry `non_replicated_deduplication_window`).
   */
  async insertRaw(
    table: string,
    data: readonly Buffer[],
    token: string,
    columns?: readonly string[],
  ): Promise<void> {
    if (this.#fileInserts) {
      await this.#fileInserts.insert(
        table,
        data,
        { insert_deduplication_token: token, ...EMBEDDED_INSERT_SETTINGS },
        columns,
      );
      return;
    }
    // Over HTTP: the server runs inserts side by side, and nothing here waits on a thread of Node's pool.
    await this.#client.insert({
      table,
      values: Readable.from(data),
      format: columns ? 'JSONCompactEachRow' : 'JSONEachRow',
      ...(columns ? { columns: [...columns] as [string, ...string[]] } : {}),
      clickhouse_settings: { insert_deduplication_token: token, ...INSERT_SETTINGS },
    });
  }

  async insert(table: string, rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#call('store', () =>
      this.#client.insert({
        table,
        values: rows,
        format: 'JSONEachRow',
        clickhouse_settings: INSERT_SETTINGS,
      }),
    );
  }

  async insertValues(table: string, columns: readonly string[], rows: readonly Values[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#call('store', () =>
      this.#client.insert({
        table,
        values: rows as unknown[][],
        format: 'JSONCompactEachRow',
        columns: [...columns] as [string, ...string[]],
        clickhouse_settings: INSERT_SETTINGS,
      }),
    );
  }

  async query<T = Row>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const rs = await this.#call('store', () =>
      this.#client.query({ query: sql, query_params: exactIntegers(params), format: 'JSONEachRow' }),
    );
    return rs.json<T>();
  }

  /**
   * Runs one SELECT and returns it as a table. JSONCompactEachRowWithNamesAndTypes: names and types, then rows
   * as arrays. (chDB 3.4 writes JSONCompact out of order for an empty result WITH TOTALS; this format has no
   * totals, and the resolver refuses WITH TOTALS.) A reader's query: in-process, the store's own work goes
   * first (see ChdbGate).
   */
  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    let lines: unknown[][];
    try {
      const rs = await this.#call(
        'reader',
        () =>
          this.#client.query({
            query: sql,
            query_params: exactIntegers(params),
            format: 'JSONCompactEachRowWithNamesAndTypes',
          }),
        options.maxWaitMs,
      );
      lines = await rs.json<unknown[]>();
    } catch (err) {
      throw toStoreQueryError(err);
    }
    const [columns = [], types = [], ...rows] = lines;
    return { columns: columns.map(String), types: types.map(String), rows };
  }

  /**
   * Writes a SELECT's result to `path` as Parquet. In-process the engine writes the file itself (`INTO
   * OUTFILE`); from a server the answer is streamed to the file. Either way the result never sits whole in
   * this process's memory.
   */
  async exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    options: TableQueryOptions = {},
  ): Promise<void> {
    try {
      if (this.#outfile) {
        const outfile = this.#outfile;
        await this.#call(
          'reader',
          () => outfile(`${sql} INTO OUTFILE ${sqlString(path)} FORMAT Parquet`, exactIntegers(params)),
          options.maxWaitMs,
        );
        return;
      }
      const result = await this.#client.exec({
        query: `${sql} FORMAT Parquet`,
        query_params: exactIntegers(params),
      });
      await pipeline(result.stream, createWriteStream(path));
    } catch (err) {
      throw toStoreQueryError(err);
    }
  }

  async command(sql: string): Promise<void> {
    await this.#call('store', () => this.#client.command({ query: sql }));
  }

  async close(): Promise<void> {
    try {
      await this.#client.close();
    } finally {
      this.#engine?.close();
    }
  }
}

/**
 * Parameters with each whole number beyond ±2^53 (a variable's 1e20) as a bigint of the same value. chDB's
 * client refuses such a number (it cannot tell one that lost digits on the way), though the engine reads it
 * well: as a bigint it is written digit for digit, the exact value of the double, by either client.
 */
function exactIntegers(params: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(params)) {
    const exact = exactInteger(v);
    if (exact !== v) (out ??= { ...params })[k] = exact;
  }
  return out ?? params;
}

function exactInteger(value: unknown): unknown {
  if (typeof value === 'number')
    return Number.isSafeInteger(value) || !Number.isInteger(value) ? value : BigInt(value);
  return Array.isArray(value) && value.some((v) => exactInteger(v) !== v) ? value.map(exactInteger) : value;
}

/** The engine's error as a StoreQueryError; anything else (a broken connection, a bug) as it is. */
function toStoreQueryError(err: unknown): unknown {
  if (err instanceof EngineWaitTimeout) return new StoreWaitTimeout(err.message);
  // Matched by shape: chDB's connection builds its errors with its own copy of clickhouse-js's error class.
  const { code, type } = err as { code?: unknown; type?: unknown };
  if (!(err instanceof Error) || typeof code !== 'string' || !/^\d+$/.test(code) || typeof type !== 'string')
    return err;
  const message = err.message.replace(/\s*\(version [^)]*\)\s*$/, '').trim();
  return new StoreQueryError(Number(code), type, message);
}

/** Applies the migrations not yet recorded, in order. Safe to run at every start. */
export async function migrate(
  store: Store,
  logger: Logger,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<void> {
  await store.command(
    `CREATE TABLE IF NOT EXISTS weir_migrations (version UInt32, name String, applied_at DateTime DEFAULT now())
     ENGINE = MergeTree ORDER BY version`,
  );
  const applied = new Set(
    (await store.query<{ version: number }>('SELECT version FROM weir_migrations')).map((r) =>
      Number(r.version),
    ),
  );
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    for (const statement of m.statements) await store.command(statement);
    await store.insert('weir_migrations', [{ version: m.version, name: m.name }]);
    logger.info({ version: m.version, name: m.name }, 'applied schema migration');
  }
}
