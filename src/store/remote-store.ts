import { createWriteStream } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';
import {
  StoreQueryError,
  StoreThrottled,
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
  #base!: string;
  #agent!: Agent;
  #request!: typeof httpRequest;

  constructor(config: RemoteStoreConfig) {
    this.#config = config;
    this.retarget(config.url);
  }

  /** Sends the next requests to `url`: the owner moved (a query node follows its advertisement in NATS). */
  retarget(url: string): void {
    const base = url.replace(/\/+$/, '');
    if (base === this.#base) return;
    const secure = base.startsWith('https:');
    this.#agent?.destroy();
    this.#base = base;
    this.#agent = secure ? new HttpsAgent({ keepAlive: true }) : new Agent({ keepAlive: true });
    this.#request = secure ? httpsRequest : httpRequest;
  }

  /** Where the requests go now. */
  get url(): string {
    return this.#base;
  }

  async queryTable(
    sql: string,
    params: Record<string, unknown>,
    options: TableQueryOptions = {},
  ): Promise<ResultTable> {
    const res = await this.#post(
      'table',
      { sql, params, maxWaitMs: options.maxWaitMs, project: options.project, kind: options.kind },
      this.#config.timeoutMs,
    );
    return JSON.parse((await readAll(res)).toString('utf8')) as ResultTable;
  }

  async query<T = Row>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const res = await this.#post('rows', { sql, params }, this.#config.timeoutMs);
    return (JSON.parse((await readAll(res)).toString('utf8')) as { rows: T[] }).rows;
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
      { sql, params, maxWaitMs: options.maxWaitMs, project: options.project, kind: options.kind },
      this.#config.exportTimeoutMs,
    );
    await pipeline(res, createWriteStream(path));
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
    const body = JSON.parse((await readAll(res)).toString('utf8')) as {
      definition: PropertyDefinition | null;
    };
    return body.definition ?? undefined;
  }

  /** Closes the idle connections to the owner. */
  close(): void {
    this.#agent.destroy();
  }

  /**
   * POSTs to the store API and resolves with a 200's response, its body unread; any other answer is thrown
   * as what it means here. `node:http` with a keep-alive agent rather than `fetch`: fetch spent several times
   * the CPU per request, paid on every direct run.
   */
  #post(route: string, body: unknown, timeoutMs: number): Promise<IncomingMessage> {
    const data = Buffer.from(JSON.stringify(body));
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = this.#request(
        `${this.#base}/_store/${route}`,
        {
          method: 'POST',
          agent: this.#agent,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': data.length,
            Authorization: `Bearer ${this.#config.token}`,
          },
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          if (res.statusCode === 200) {
            resolve(res);
            return;
          }
          readAll(res).then(
            (text) => reject(this.#refusal(res.statusCode ?? 0, text.toString('utf8'))),
            reject,
          );
        },
      );
      req.on('error', (err) => {
        if (err.name === 'AbortError' || err.name === 'TimeoutError')
          reject(
            new AppError('timeout', { detail: 'The store did not answer within the limit of the run.' }),
          );
        else reject(unreachable(`${err.message}${causeOf(err)}`));
      });
      req.end(data);
    });
  }

  #refusal(status: number, text: string): Error {
    if (status === 422) {
      const e = (JSON.parse(text) as { store_error: StoreErrorBody }).store_error;
      if (e.throttled !== undefined) return new StoreThrottled(e.message, e.throttled);
      return e.waitTimeout ? new StoreWaitTimeout(e.message) : new StoreQueryError(e.code, e.type, e.message);
    }
    if (status === 401)
      return new Error(`the store owner at ${this.#base} refused WEIR_STORE_TOKEN (its token differs)`);
    // The owner is starting, stopping or overloaded (503), or failed (5xx): the run may be tried again.
    return unreachable(`it answered ${status}: ${text.slice(0, 200)}`);
  }
}

/** A response's whole body (a timeout or a broken connection rejects). */
function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(unreachable('the answer was cut off')));
  });
}

interface StoreErrorBody {
  readonly code: number;
  readonly type: string;
  readonly message: string;
  readonly waitTimeout: boolean;
  /** The limit that refused the read (StoreThrottled); absent from an owner before it. */
  readonly throttled?: string;
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
