import { mkdirSync, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { Session } from 'chdb';
import { createChdbConnection } from 'chdb/connection';
import {
  StoreWaitTimeout,
  type ParquetExporter,
  type ResultTable,
  type Row,
  type TableQueryOptions,
  type TableReader,
  type Values,
} from '../../core/ports.ts';
import { columnList, exactIntegers, INSERT_SETTINGS, sqlString } from '../sql.ts';
import { toStoreQueryError } from '../store-errors.ts';
import { ChdbGate, EngineWaitTimeout } from './chdb-gate.ts';

type ChConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];

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
 * The chDB engine in this process, through `@clickhouse/client` over `chdb/connection`: the embedded store's
 * engine (under its commit log, logged-store.ts), and tests' and benchmarks' direct way to the engine. Every
 * engine call waits its turn at one gate (chDB runs one statement at a time); inserts of whole blocks go in
 * from a file. The client's and chDB's types stay in here.
 */
export class ChdbClient implements TableReader, ParquetExporter {
  readonly #client: ClickHouseClient;
  readonly #fileInserts: FileInserts;
  /** Every engine call waits its turn here, not on a thread of Node's pool. */
  readonly #gate: ChdbGate;
  /** The connection that configured the engine (see `open`), closed last. */
  readonly #engine: Session;
  /** Runs a statement with bound parameters that writes its own output file. */
  readonly #outfile: ChdbBoundQuery;

  private constructor(
    client: ClickHouseClient,
    fileInserts: FileInserts,
    gate: ChdbGate,
    engine: Session,
    outfile: ChdbBoundQuery,
  ) {
    this.#client = client;
    this.#fileInserts = fileInserts;
    this.#gate = gate;
    this.#engine = engine;
    this.#outfile = outfile;
  }

  /**
   * Opens the engine on the data directory `path` (chDB's own, not Weir's). `onEngineWaiting` hears how many
   * engine calls wait for their turn (see ChdbGate).
   */
  static open(
    path: string,
    options: { readonly onEngineWaiting?: (waiting: number) => void } = {},
  ): ChdbClient {
    // chDB configures its engine from the first connection to a data directory, and `chdb/connection` opens
    // its own without engine arguments: this session carries them, and stays open as long as the store.
    const engine = new Session(path, {
      connectionArgs: [`--background_pool_size=${embeddedMergeThreads(availableParallelism())}`],
    });
    try {
      const connection = createChdbConnection({ path });
      // chdb ships its own copy of clickhouse-js's Connection types; the shapes are the same.
      const client = createClient({ connection: connection as unknown as ChConnection });
      const { chdb } = connection as unknown as { chdb: { queryAsync: ChdbQuery } };
      const gate = new ChdbGate({
        onWaiting: options.onEngineWaiting,
        // Any statement that succeeds takes what a failed one left on the connection (see ChdbGate); this
        // one adds nothing of its own.
        clear: () => chdb.queryAsync('SELECT 1 FORMAT Null', { format: 'CSV' }),
      });
      const fileInserts = new FileInserts(join(path, 'weir-inserts'), (sql, options) =>
        gate.run('store', () => chdb.queryAsync(sql, options)),
      );
      // The connection's own calls take no parameters; the engine's session does, on the same engine. It
      // serves only statements that write their own output file, so nothing it answers is ever read.
      const outfile: ChdbBoundQuery = (sql, params) =>
        engine.queryBindAsync(sql, params, { format: 'CSV' }).then(() => undefined);
      return new ChdbClient(client, fileInserts, gate, engine, outfile);
    } catch (err) {
      engine.close();
      throw err;
    }
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
    await this.#fileInserts.insert(
      table,
      data,
      { insert_deduplication_token: token, ...EMBEDDED_INSERT_SETTINGS },
      columns,
    );
  }

  async insert(table: string, rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#gate.run('store', () =>
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
    await this.#gate.run('store', () =>
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
    const rs = await this.#gate.run('store', () =>
      this.#client.query({ query: sql, query_params: exactIntegers(params), format: 'JSONEachRow' }),
    );
    return rs.json<T>();
  }

  /**
   * Runs one SELECT and returns it as a table. JSONCompactEachRowWithNamesAndTypes: names and types, then rows
   * as arrays. (chDB 3.4 writes JSONCompact out of order for an empty result WITH TOTALS; this format has no
   * totals, and the resolver refuses WITH TOTALS.) A reader's query: the store's own work goes first (see
   * ChdbGate).
   */
  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    let lines: unknown[][];
    try {
      const rs = await this.#gate.run(
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
      throw toEmbeddedQueryError(err);
    }
    const [columns = [], types = [], ...rows] = lines;
    return { columns: columns.map(String), types: types.map(String), rows };
  }

  /**
   * Writes a SELECT's result to `path` as Parquet: the engine writes the file itself (`INTO OUTFILE`), so the
   * result never sits whole in this process's memory.
   */
  async exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    options: TableQueryOptions = {},
  ): Promise<void> {
    try {
      await this.#gate.run(
        'reader',
        () => this.#outfile(`${sql} INTO OUTFILE ${sqlString(path)} FORMAT Parquet`, exactIntegers(params)),
        options.maxWaitMs,
      );
    } catch (err) {
      throw toEmbeddedQueryError(err);
    }
  }

  async command(sql: string): Promise<void> {
    await this.#gate.run('store', () => this.#client.command({ query: sql }));
  }

  async close(): Promise<void> {
    try {
      await this.#client.close();
    } finally {
      this.#engine.close();
    }
  }
}

/** A wait for the gate given up as the store's timeout; the engine's own errors as StoreQueryError. */
function toEmbeddedQueryError(err: unknown): unknown {
  if (err instanceof EngineWaitTimeout) return new StoreWaitTimeout(err.message);
  return toStoreQueryError(err);
}
