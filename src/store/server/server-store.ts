import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type {
  ParquetExporter,
  QuarantineFilter,
  QuarantinedRow,
  QuarantineReplay,
  QuarantineStore,
  ResultTable,
  Row,
  Store,
  TableQueryOptions,
  TableReader,
} from '../../core/ports.ts';
import { AdhocLimit } from '../adhoc-limit.ts';
import { jsonArrayParts, jsonMemberParts } from '../json-rows.ts';
import { migrate } from '../migrate.ts';
import { Quarantine } from '../quarantine.ts';
import { CheckedInserts } from '../refused-rows.ts';
import { PendingBytes, RowInserts } from '../row-inserts.ts';
import {
  columnList,
  deleteStatement,
  exactIntegers,
  INSERT_SETTINGS,
  purgeStatement,
  sqlString,
} from '../sql.ts';
import { clusterStatements, isSharded } from './cluster-schema.ts';
import { RequestRetry } from './request-retry.ts';

export interface ServerStoreConfig {
  /** The server's HTTP interface, without credentials. */
  readonly url: string;
  readonly user: string;
  readonly password: string | undefined;
  /** The database of Weir's tables; created when missing. */
  readonly database: string;
  /** With a cluster's name, the schema is made `ON CLUSTER` (cluster-schema.ts). */
  readonly cluster: string | undefined;
  /** Bytes of inserts sent and not yet answered past which inserts are refused (back-pressure). */
  readonly maxPendingBytes: number;
  /** Longest one request may take, its answer included (a query's own limit is the engine's). */
  readonly requestTimeoutMs: number;
  /** Ad-hoc queries one project may have running at once (AdhocLimit). @default 4 */
  readonly adhocPerProject?: number;
}

export interface ServerStoreDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * Inserts of one store under way at once. A server runs inserts side by side, so the group-commit writer
 * need not wait for one to be answered before sending the next; but every insert makes a part on the server
 * (per partition), and small parts are what a ClickHouse server suffers from (merges, `TOO_MANY_PARTS`): two
 * keep one block travelling while the next gathers, and no more.
 */
const COMMITS_IN_FLIGHT = 2;

/**
 * The Store on a ClickHouse server (or cluster) over HTTP, through `@clickhouse/client`. No engine in this
 * process, no commit log: a commit is an insert the server has answered, visible at once. Inserts, queries
 * and statements run side by side (the server has its own limits), and this process is one writer of many:
 * `soleWriter` is false.
 *
 * An insert is one block of JSON bytes under a deduplication token of its own; a retry after a failure that
 * may have left the block stored (a connection reset before the answer, the server busy) sends the same
 * bytes under the same token, and the server stores the block once. A block the engine refuses as bad data
 * is bisected like the embedded store's (refused-rows.ts): the refused rows are set aside in the quarantine
 * table, which every process on the server shares, and the rest stored, so one bad row cannot hold a
 * partition of the bus up for ever.
 */
export class ServerStore extends RowInserts implements Store, TableReader, ParquetExporter, QuarantineStore {
  readonly soleWriter = false;
  readonly commitsInFlight = COMMITS_IN_FLIGHT;
  readonly #client: ClickHouseClient;
  readonly #config: ServerStoreConfig;
  readonly #deps: ServerStoreDeps;
  readonly #inserts: CheckedInserts;
  readonly #quarantine: Quarantine;
  readonly #retry: RequestRetry;
  readonly #adhoc: AdhocLimit;
  /** Settings of every insert: the shared ones, and on a cluster a Distributed insert that waits for shards. */
  readonly #insertSettings: Record<string, string | number>;
  /** Settings of every query: on a cluster, a subquery over a Distributed table is sent to every shard. */
  readonly #querySettings: Record<string, string | number>;
  /** Bytes of inserts sent and not yet answered. */
  readonly #pending: PendingBytes;

  private constructor(client: ClickHouseClient, config: ServerStoreConfig, deps: ServerStoreDeps) {
    const pending = new PendingBytes(
      config.maxPendingBytes,
      'sent to the server and not yet answered',
      deps.metrics,
    );
    super(pending);
    this.#pending = pending;
    this.#client = client;
    this.#config = config;
    this.#deps = deps;
    this.#retry = new RequestRetry({}, deps);
    this.#adhoc = new AdhocLimit(config.adhocPerProject ?? 4, () =>
      deps.metrics.storeReadsRefused.inc({ kind: 'adhoc', reason: 'adhoc_limit' }),
    );
    const insert = (
      table: string,
      data: readonly Buffer[],
      token: string,
      columns: readonly string[] | undefined,
    ): Promise<void> => this.#insertBlock(table, data, token, columns);
    this.#quarantine = new Quarantine({ insert, query: (sql, params) => this.query(sql, params), ...deps });
    this.#inserts = new CheckedInserts({
      insert,
      setAside: (target, rows, token) => this.#quarantine.setAside(target, rows, token),
    });
    const onCluster = config.cluster !== undefined;
    // Without it a Distributed table answers an insert once the rows are queued on this node, before any
    // shard has them: neither committed nor visible, and the token would not reach the shards' tables.
    this.#insertSettings = { ...INSERT_SETTINGS, ...(onCluster ? { distributed_foreground_insert: 1 } : {}) };
    // Weir's joins of events with events (funnels, retention) are subqueries over a Distributed table; the
    // person tables are a full copy on every node and need nothing (cluster-schema.ts).
    this.#querySettings = onCluster ? { distributed_product_mode: 'global' } : {};
  }

  /**
   * Connects, creates the database when missing and (unless `migrate` is false: a `weir query` node leaves the
   * schema to the processes that write) applies the migrations.
   */
  static async open(
    config: ServerStoreConfig,
    deps: ServerStoreDeps,
    options: { readonly migrate?: boolean } = {},
  ): Promise<ServerStore> {
    const connect = (database: string | undefined): ClickHouseClient =>
      createClient({
        url: config.url,
        username: config.user,
        password: config.password ?? '',
        ...(database === undefined ? {} : { database }),
        request_timeout: config.requestTimeoutMs,
        application: 'weir',
        // Ingest's lookups bind thousands of ids: past 4 KiB of parameters they go in the body, where no
        // URL length limit applies (a server takes 1 MiB of URL; a proxy in front of it may take far less).
        use_multipart_params_auto: true,
      });
    const store = new ServerStore(connect(config.database), config, deps);
    try {
      if (options.migrate !== false) {
        // The database must exist before a client can name it: these go without. A user allowed to write an
        // existing database may lack the right to create databases: only a missing one is created.
        const bare = connect(undefined);
        try {
          const found = await store.#retry.run('look for the database', async () => {
            const rs = await bare.query({
              query: 'SELECT name FROM system.databases WHERE name = {db:String}',
              query_params: { db: config.database },
              format: 'JSONEachRow',
            });
            return rs.json<{ name: string }>();
          });
          if (found.length === 0)
            await store.#retry.run('create the database', () =>
              bare.command({
                query: `CREATE DATABASE IF NOT EXISTS \`${config.database}\`${store.#onCluster()}`,
              }),
            );
        } finally {
          await bare.close();
        }
        await migrate(store, deps.logger, {
          render:
            config.cluster === undefined
              ? undefined
              : clusterStatements({ cluster: config.cluster, database: config.database }),
        });
      }
      return store;
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }

  #onCluster(): string {
    return this.#config.cluster === undefined ? '' : ` ON CLUSTER ${sqlString(this.#config.cluster)}`;
  }

  /**
   * Inserts encodings of `encode` as one block under a new deduplication token, retried whole under that
   * token (see the class). Refused with StoreBusyError while the bytes of inserts not yet answered are past
   * the bound, so capture answers 503 rather than queue without end behind a slow server.
   */
  async insertEncoded(
    table: string,
    rows: number,
    chunks: readonly Buffer[],
    columns?: readonly string[],
  ): Promise<void> {
    if (rows === 0) return;
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    const busy = this.#pending.refusal(bytes);
    if (busy) throw busy;
    this.#pending.add(bytes);
    try {
      await this.#inserts.insert(
        { table, columns },
        columns ? jsonMemberParts(chunks) : jsonArrayParts(chunks),
        randomUUID(),
      );
    } finally {
      this.#pending.add(-bytes);
    }
  }

  /** One block, as bytes: JSONEachRow (one array of objects) or JSONCompactEachRow (rows of `columns`). */
  #insertBlock(
    table: string,
    data: readonly Buffer[],
    token: string,
    columns: readonly string[] | undefined,
  ): Promise<void> {
    const format = columns ? 'JSONCompactEachRow' : 'JSONEachRow';
    return this.#retry.run(
      `insert into ${table}`,
      async () => {
        // A stream of bytes, read again from the start on a retry. (In object mode the client would take each
        // Buffer for a row and write its JSON form, `{"type":"Buffer",…}`: rows of defaults.)
        const result = await this.#client.exec({
          query: `INSERT INTO \`${table}\`${columnList(columns)} FORMAT ${format}`,
          values: Readable.from(data, { objectMode: false }),
          clickhouse_settings: { ...this.#insertSettings, insert_deduplication_token: token },
        });
        // The answer of an insert is empty; reading it to the end frees the connection.
        result.stream.resume();
        await new Promise<void>((resolve, reject) => {
          result.stream.once('end', resolve);
          result.stream.once('error', reject);
        });
      },
      { insert: true },
    );
  }

  listQuarantined(filter: QuarantineFilter): Promise<QuarantinedRow[]> {
    return this.#quarantine.listQuarantined(filter);
  }

  replayQuarantined(filter: QuarantineFilter): Promise<QuarantineReplay[]> {
    return this.#quarantine.replayQuarantined(filter);
  }

  /** An insert is visible once the server has answered it. */
  visible(): Promise<void> {
    return Promise.resolve();
  }

  async query<T = Row>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const end = this.#deps.metrics.storeQueryDuration.startTimer();
    try {
      return await this.#retry.run('query', async () => {
        const rs = await this.#client.query({
          query: sql,
          query_params: exactIntegers(params),
          format: 'JSONEachRow',
          clickhouse_settings: this.#querySettings,
        });
        return rs.json<T>();
      });
    } finally {
      end();
    }
  }

  /**
   * One SELECT as a table: JSONCompactEachRowWithNamesAndTypes (names, types, then rows as arrays). An ad-hoc
   * query past its project's limit is refused unrun (StoreThrottled).
   */
  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    // A server queues nothing here: `maxWaitMs` is for the embedded store, whose reads wait for a connection.
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    const release =
      options.kind === 'adhoc' && options.project !== undefined
        ? this.#adhoc.take(options.project)
        : undefined;
    const end = this.#deps.metrics.storeQueryDuration.startTimer();
    try {
      const lines = await this.#retry.run('query', async () => {
        const rs = await this.#client.query({
          query: sql,
          query_params: exactIntegers(params),
          format: 'JSONCompactEachRowWithNamesAndTypes',
          clickhouse_settings: this.#querySettings,
        });
        return rs.json<unknown[]>();
      });
      const [columns = [], types = [], ...rows] = lines;
      return { columns: columns.map(String), types: types.map(String), rows };
    } finally {
      end();
      release?.();
    }
  }

  /** Writes a SELECT's result to `path` as Parquet, streamed from the server to the file as it comes. */
  async exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    _options: TableQueryOptions = {},
  ): Promise<void> {
    await this.#retry.run('export', async () => {
      const result = await this.#client.exec({
        query: `${sql} FORMAT Parquet`,
        query_params: exactIntegers(params),
        clickhouse_settings: this.#querySettings,
      });
      await pipeline(result.stream, createWriteStream(path));
    });
  }

  async command(sql: string): Promise<void> {
    await this.#retry.run('statement', () => this.#client.command({ query: sql }));
  }

  /**
   * A delete is idempotent, so it is retried as a read is. On a cluster it goes to each shard's table (a
   * Distributed table takes no delete), on every node.
   */
  async deleteRows(table: string, where: string, params: Record<string, unknown>): Promise<void> {
    await this.#retry.run('delete', () =>
      this.#client.command({
        query: deleteStatement(this.#mutated(table), where, this.#onCluster()),
        query_params: exactIntegers(params),
      }),
    );
  }

  /** Where the deletes went, as they went; retried as a delete is (running it again rewrites nothing more). */
  async purgeDeleted(table: string): Promise<void> {
    await this.#retry.run('purge', () =>
      this.#client.command({ query: purgeStatement(this.#mutated(table), this.#onCluster()) }),
    );
  }

  /** The table a mutation of `table` goes to: on a cluster, each shard's (a Distributed table takes none). */
  #mutated(table: string): string {
    return this.#config.cluster !== undefined && isSharded(table) ? `${table}_local` : table;
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}
