import { mkdirSync, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createClient, parseError, type ClickHouseClient } from '@clickhouse/client';
import { Session } from 'chdb';
import { createChdbConnection } from 'chdb/connection';
import {
  StoreThrottled,
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
import {
  ChdbGate,
  EngineThrottled,
  EngineWaitTimeout,
  ReaderGate,
  type ReaderGateObserver,
} from './chdb-gate.ts';

type ChConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];

/** chDB's own query call: runs off the main thread; its errors carry the engine's code as `clickhouseCode`. */
type ChdbQuery = (sql: string, options: { format: string }) => Promise<unknown>;

/**
 * How the embedded store inserts a block of JSONEachRow bytes: written to a file of its own, then read by the
 * engine with `INSERT … FROM INFILE`. chDB's passthrough insert (`rawInsert`, the bytes inline after the
 * statement) cost the engine several times the CPU per event row of the same bytes read from a file, a large
 * share of all an event costs. The file is only a hand-over: the commit log
 * holds the durable copy, so it is not synced, and it is removed once the insert ends.
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
 * of CPU on each of two threads, every few seconds under load) then took both cores from the main thread,
 * and capture sustained fewer single events a second with two merge threads than with one. One thread merges
 * far faster than a part a second per table is made.
 */
export function embeddedMergeThreads(cores: number): number {
  return Math.min(2, Math.max(1, cores - 1));
}

/** How the engine's reads are shared: see ReaderGate. */
export interface ChdbReadOptions {
  /** Connections reads run on, side by side. @default 2 */
  readonly readers?: number;
  /** Reads one project runs at once. @default 1 */
  readonly readersPerProject?: number;
  /** Ad-hoc queries one project has running or waiting; one more is refused. @default 4 */
  readonly adhocPerProject?: number;
  readonly observer?: ReaderGateObserver;
}

/**
 * The chDB engine in this process, through `@clickhouse/client` over `chdb/connection`: the embedded store's
 * engine (under its commit log, logged-store.ts), and tests' and benchmarks' direct way to the engine. The
 * store's own calls (inserts, lookups, statements) wait their turn at one gate on one connection; reads (the
 * query API, endpoint runs, materialization refreshes) run side by side on connections of their own, behind
 * the reader gate (fair between projects). Inserts of whole blocks go in from a file. The client's and
 * chDB's types stay in here.
 */
export class ChdbClient implements TableReader, ParquetExporter {
  readonly #client: ClickHouseClient;
  readonly #fileInserts: FileInserts;
  /** Every call of the store's own waits its turn here, not on a thread of Node's pool. */
  readonly #gate: ChdbGate;
  /** The connection that configured the engine (see `open`), closed last. */
  readonly #engine: Session;
  /** The connections reads run on, one read each at a time, handed out by `#readerGate`. */
  readonly #readers: readonly Session[];
  readonly #readerGate: ReaderGate;
  /** Reader connections whose session settings are made (`#read`). */
  readonly #readersReady: boolean[] = [];

  private constructor(
    client: ClickHouseClient,
    fileInserts: FileInserts,
    gate: ChdbGate,
    engine: Session,
    readers: readonly Session[],
    readerGate: ReaderGate,
  ) {
    this.#client = client;
    this.#fileInserts = fileInserts;
    this.#gate = gate;
    this.#engine = engine;
    this.#readers = readers;
    this.#readerGate = readerGate;
  }

  /**
   * Opens the engine on the data directory `path` (chDB's own, not Weir's). `onEngineWaiting` hears how many
   * of the store's own calls wait for their turn (see ChdbGate); `reads` shapes the reader connections.
   */
  static open(
    path: string,
    options: { readonly onEngineWaiting?: (waiting: number) => void; readonly reads?: ChdbReadOptions } = {},
  ): ChdbClient {
    // chDB configures its engine from the first connection to a data directory, and `chdb/connection` opens
    // its own without engine arguments: this session carries them, and stays open as long as the store.
    // BACKUP to a File() destination needs a path the engine allows, and `weir backup` writes where the
    // operator says. Only Weir's own code and operators (weir sql, the store token) run raw SQL here.
    const engine = new Session(path, {
      connectionArgs: [
        `--background_pool_size=${embeddedMergeThreads(availableParallelism())}`,
        '--backups.allowed_path=/',
      ],
    });
    const readers: Session[] = [];
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
      const reads = options.reads ?? {};
      for (let i = 0; i < Math.max(1, reads.readers ?? 2); i++) readers.push(new Session(path));
      const readerGate = new ReaderGate({
        connections: readers.length,
        perProject: reads.readersPerProject ?? 1,
        adhocPerProject: reads.adhocPerProject ?? 4,
        observer: reads.observer,
        clear: (slot) => readers[slot]!.queryAsync('SELECT 1 FORMAT Null', { format: 'CSV' }),
      });
      return new ChdbClient(client, fileInserts, gate, engine, readers, readerGate);
    } catch (err) {
      for (const r of readers) r.close();
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

  /** The store's own query (a lookup, a read of its bookkeeping): on the store's connection, before reads. */
  async query<T = Row>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const rs = await this.#gate.run('store', () =>
      this.#client.query({ query: sql, query_params: exactIntegers(params), format: 'JSONEachRow' }),
    );
    return rs.json<T>();
  }

  /**
   * Runs one SELECT and returns it as a table, on a reader connection (see ReaderGate).
   * JSONCompactEachRowWithNamesAndTypes: names and types, then rows as arrays. (chDB 3.4 writes JSONCompact
   * out of order for an empty result WITH TOTALS; this format has no totals, and the resolver refuses WITH
   * TOTALS.)
   */
  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    let text: string;
    try {
      text = await this.#read(
        options,
        (session) =>
          session.queryAsync(sql, { format: 'JSONCompactEachRowWithNamesAndTypes' }).then((r) => r.text()),
        params,
      );
    } catch (err) {
      throw toEmbeddedQueryError(err);
    }
    const [columns = [], types = [], ...rows] = jsonLines(text);
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
      await this.#read(
        { kind: 'materialize', ...options },
        (session) =>
          session.queryAsync(`${sql} INTO OUTFILE ${sqlString(path)} FORMAT Parquet`, { format: 'CSV' }),
        params,
      );
    } catch (err) {
      throw toEmbeddedQueryError(err);
    }
  }

  /**
   * One read on a reader connection when its turn comes. Its parameters are set on that connection first
   * (`SET param_…`) and the statement runs with none: chdb-node runs every statement with bound parameters
   * in one process-wide line (its binding is not safe across connections), which would put reads back one at
   * a time. Set on a connection, they stay on it, also after the read:
   * a statement naming a parameter its `params` lack would read a value an earlier read set there, so callers
   * pass every parameter they print (the printer binds each one it prints).
   */
  #read<T>(
    options: TableQueryOptions,
    run: (session: Session) => Promise<T>,
    params: Record<string, unknown>,
  ): Promise<T> {
    const set = setParams(exactIntegers(params));
    return this.#readerGate.run(
      {
        project: options.project ?? projectOf(params),
        kind: options.kind ?? 'endpoint',
        maxWaitMs: options.maxWaitMs,
      },
      async (slot) => {
        const session = this.#readers[slot]!;
        if (!this.#readersReady[slot]) {
          // A long list variable makes a long SET; the query's own length Weir bounds before it gets here.
          await session.queryAsync(`SET max_query_size = ${MAX_SET_BYTES}`, { format: 'CSV' });
          this.#readersReady[slot] = true;
        }
        if (set) await session.queryAsync(set, { format: 'CSV' });
        return run(session);
      },
    );
  }

  async command(sql: string, params: Record<string, unknown> = {}): Promise<void> {
    await this.#gate.run('store', () =>
      this.#client.command({ query: sql, query_params: exactIntegers(params) }),
    );
  }

  async close(): Promise<void> {
    try {
      await this.#client.close();
    } finally {
      for (const r of this.#readers) r.close();
      this.#engine.close();
    }
  }
}

/** The longest statement a reader connection parses: a SET of a read's parameters may be long. */
const MAX_SET_BYTES = 64 * 1024 * 1024;

/** The project a printed query is confined to (its `weir_project` parameter), when the caller did not say. */
function projectOf(params: Record<string, unknown>): number | undefined {
  const p = params['weir_project'];
  return typeof p === 'number' ? p : typeof p === 'bigint' ? Number(p) : undefined;
}

/** The lines of a JSON-lines answer, each parsed. */
function jsonLines(text: string): unknown[][] {
  const out: unknown[][] = [];
  let at = 0;
  while (at < text.length) {
    let end = text.indexOf('\n', at);
    if (end === -1) end = text.length;
    if (end > at) out.push(JSON.parse(text.slice(at, end)) as unknown[]);
    at = end + 1;
  }
  return out;
}

/**
 * `SET param_a = '…', …` for a read's parameters, or undefined for none. Each value in ClickHouse's escaped
 * text form, as chdb-node's binding sends it (a string escaped, other values as literals), given as a string.
 * The reader connections take statements of up to MAX_SET_BYTES.
 */
export function setParams(params: Record<string, unknown>): string | undefined {
  const entries = Object.entries(params);
  if (entries.length === 0) return undefined;
  return `SET ${entries.map(([k, v]) => `param_${k} = ${sqlString(paramText(v))}`).join(', ')}`;
}

function paramText(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'string') return escaped(value, TEXT_ESCAPES);
  return literal(value);
}

/** A value as a ClickHouse literal: what a parameter of a non-string type is read from. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return `'${escaped(value, LITERAL_ESCAPES)}'`;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`cannot bind the number ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  throw new TypeError(`cannot bind a value of type ${typeof value}`);
}

const TEXT_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  '\0': '\\0',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
const LITERAL_ESCAPES: Readonly<Record<string, string>> = { ...TEXT_ESCAPES, "'": "\\'" };

function escaped(s: string, table: Readonly<Record<string, string>>): string {
  return s.replace(/[\\\0\b\f\n\r\t']/g, (c) => table[c] ?? c);
}

/**
 * A wait for a gate given up as the store's timeout, a refused ad-hoc query as StoreThrottled; the engine's own
 * errors (chDB's, on a reader connection, or the client's) as StoreQueryError.
 */
function toEmbeddedQueryError(err: unknown): unknown {
  if (err instanceof EngineWaitTimeout) return new StoreWaitTimeout(err.message);
  if (err instanceof EngineThrottled) return new StoreThrottled(err.message, 'WEIR_QUERY_ADHOC_CONCURRENCY');
  const code = (err as { clickhouseCode?: unknown }).clickhouseCode;
  // chDB's own errors carry the engine's message as the client's would; read them as the client reads them.
  if (err instanceof Error && typeof code === 'number') return toStoreQueryError(parseError(err.message));
  return toStoreQueryError(err);
}
