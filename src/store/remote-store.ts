import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  StoreQueryError,
  StoreWaitTimeout,
  type ParquetExporter,
  type ResultTable,
  type Row,
  type Store,
  type TableQueryOptions,
  type TableReader,
} from '../core/ports.ts';
import type { PropertyDefinition, PropertyParent } from '../core/property-catalog.ts';
import type { PropertyType } from '../core/property-types.ts';
import { AppError } from '../errors/app-error.ts';

export interface RemoteStoreConfig {
  /** The store owner's URL (`weir ingest`), e.g. `http://ingest:8001`. */
  readonly url: string;
  /** `WEIR_STORE_TOKEN`, shown as a Bearer token. */
  readonly token: string;
  /** Longest a query may take, answer included, before it is given up. */
  readonly timeoutMs: number;
  /** Longest a Parquet export may take (a materialization refresh). */
  readonly exportTimeoutMs: number;
}

/**
 * The store as a `weir query` node reaches it: through the store API of the process that owns it
 * (api/store-routes.ts). Reads only, plus the one write a query node's API makes (a property's type), which
 * the owner applies. The engine's refusals come back as the same StoreQueryError the owner saw, so a run
 * through a query node answers as a run on the owner does; an owner that cannot be reached is a 503.
 */
export class RemoteStore implements TableReader, ParquetExporter, Pick<Store, 'query' | 'insert'> {
  readonly #config: RemoteStoreConfig;
  readonly #base: string;

  constructor(config: RemoteStoreConfig) {
    this.#config = config;
    this.#base = config.url.replace(/\/+$/, '');
  }

  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    const res = await this.#post(
      'table',
      { sql, params, maxWaitMs: options.maxWaitMs },
      this.#config.timeoutMs,
    );
    return (await res.json()) as ResultTable;
  }

  async query<T = Row>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const res = await this.#post('rows', { sql, params }, this.#config.timeoutMs);
    return ((await res.json()) as { rows: T[] }).rows;
  }

  /** Never called: what a query node writes goes through the owner (`setPropertyType`). */
  insert(table: string): Promise<void> {
    return Promise.reject(
      new Error(`a query node does not write the store (an insert into ${table} was tried)`),
    );
  }

  async exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    options: TableQueryOptions = {},
  ): Promise<void> {
    const res = await this.#post(
      'parquet',
      { sql, params, maxWaitMs: options.maxWaitMs },
      this.#config.exportTimeoutMs,
    );
    if (!res.body) throw new Error('the store owner sent no Parquet');
    await pipeline(Readable.fromWeb(res.body), createWriteStream(path));
  }

  /** Sets a property's type on the owner, which records the property definitions. */
  async setPropertyType(
    projectId: number,
    type: PropertyParent,
    name: string,
    propertyType: PropertyType,
  ): Promise<PropertyDefinition | undefined> {
    const res = await this.#post(
      'property-type',
      { projectId, type, name, propertyType },
      this.#config.timeoutMs,
    );
    return ((await res.json()) as { definition: PropertyDefinition | null }).definition ?? undefined;
  }

  async #post(route: string, body: unknown, timeoutMs: number): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(`${this.#base}/_store/${route}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.#config.token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError')
        throw new AppError('timeout', { detail: 'The store did not answer within the limit of the run.' });
      throw unreachable(`${(err as Error).message}${causeOf(err)}`);
    }
    if (res.ok) return res;
    const text = await res.text();
    if (res.status === 422) {
      const e = (JSON.parse(text) as { store_error: StoreErrorBody }).store_error;
      throw e.waitTimeout ? new StoreWaitTimeout(e.message) : new StoreQueryError(e.code, e.type, e.message);
    }
    if (res.status === 401)
      throw new Error(`the store owner at ${this.#base} refused WEIR_STORE_TOKEN (its token differs)`);
    // The owner is starting, stopping or overloaded (503), or failed (5xx): the run may be tried again.
    throw unreachable(`it answered ${res.status}: ${text.slice(0, 200)}`);
  }
}

interface StoreErrorBody {
  readonly code: number;
  readonly type: string;
  readonly message: string;
  readonly waitTimeout: boolean;
}

function unreachable(why: string): AppError {
  return new AppError('unavailable', {
    detail: `The store cannot be reached (${why}); retry after the time in Retry-After.`,
    retryAfterSeconds: 1,
    retriable: true,
  });
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string } }).cause;
  return cause?.code ? ` (${cause.code})` : '';
}
