import { timingSafeEqual, createHash } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import {
  READ_KINDS,
  StoreQueryError,
  StoreThrottled,
  StoreWaitTimeout,
  type ParquetExporter,
  type ReadKind,
  type Store,
  type TableQueryOptions,
  type TableReader,
} from '../core/ports.ts';
import { PROPERTY_PARENTS, type PropertyCatalog, type PropertyParent } from '../core/property-catalog.ts';
import { PROPERTY_TYPES, type PropertyType } from '../core/property-types.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { apiRoute, type ApiRequest, type ApiResponse } from './api-route.ts';
import { objectBody, type JsonObject } from './json-input.ts';

/**
 * The store API of the process that owns the embedded store (`weir ingest`), for `weir query` nodes on other
 * machines: the engine runs only here (chDB is in-process), so a query node compiles, authorises and caches
 * a run itself and sends this process only the SQL. Mounted only with `WEIR_STORE_TOKEN`, and answered only
 * to a request bearing it: the token is a store password (whoever holds it runs any SQL), for query nodes
 * alone. The public APIs never reach these routes; docs/scaling.md documents them.
 *
 * - `POST /_store/table` `{sql, params, maxWaitMs?, project?, kind?}` → a ResultTable (`{columns, types, rows,
 *   statistics?}`); `project` and `kind` say whose read it is (TableQueryOptions).
 * - `POST /_store/rows` `{sql, params}` → `{rows}` (rows as objects: the property definitions' reload).
 * - `POST /_store/parquet` `{sql, params, maxWaitMs?, project?, kind?}` → the result as Parquet bytes (a
 *   materialization).
 * - `POST /_store/property-type` `{projectId, type, name, propertyType}` → `{definition}` (null: no such
 *   property): a type set through a query node's API, applied by this process's definitions, which own them.
 *
 * The engine's refusal of a query is `422 {store_error: {code, type, message, waitTimeout}}`, so the query node
 * answers its client exactly as this process would have.
 */
export interface StoreRoutesDeps {
  readonly store: TableReader & ParquetExporter & Pick<Store, 'query'>;
  readonly propertyDefinitions: PropertyCatalog;
  readonly token: string;
  /** Where Parquet results are written before they are sent. */
  readonly tmpDir: string;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

export const STORE_API = '/_store';

/**
 * Largest request of a query node: a query's printed SQL is at most 256 KiB (ClickHouse's max_query_size),
 * but its parameters come from variables a public request may carry up to 1 MiB of.
 */
const MAX_STORE_BODY_BYTES = 8 * 1024 * 1024;

export function registerStoreRoutes(app: HttpApp, deps: StoreRoutesDeps): void {
  const expected = digest(`Bearer ${deps.token}`);
  const authorised = (req: ApiRequest): void => {
    // Compared as digests: equal length, so timingSafeEqual applies, and nothing leaks through timing.
    if (!timingSafeEqual(digest(req.authorization), expected))
      throw new AppError('authentication_failed', {
        detail: 'The store API answers query nodes only: send Authorization: Bearer <WEIR_STORE_TOKEN>.',
      });
  };
  let nextFile = 0;

  const options = { maxBodyBytes: MAX_STORE_BODY_BYTES };
  apiRoute(
    app,
    deps,
    `${STORE_API}/table`,
    {
      post: (req) => {
        authorised(req);
        const q = readQuery(req.body);
        return engine(() => deps.store.queryTable(q.sql, q.params, q.options)).then((r) =>
          'status' in r ? r : { status: 200, body: r },
        );
      },
    },
    options,
  );
  apiRoute(
    app,
    deps,
    `${STORE_API}/rows`,
    {
      post: (req) => {
        authorised(req);
        const q = readQuery(req.body);
        return engine(() => deps.store.query(q.sql, q.params)).then((r) =>
          'status' in r ? r : { status: 200, body: { rows: r } },
        );
      },
    },
    options,
  );
  apiRoute(
    app,
    deps,
    `${STORE_API}/parquet`,
    {
      post: async (req) => {
        authorised(req);
        const q = readQuery(req.body);
        await mkdir(deps.tmpDir, { recursive: true });
        const file = join(deps.tmpDir, `store-api-${process.pid}-${++nextFile}.parquet`);
        try {
          const done = await engine(() => deps.store.exportParquet(q.sql, q.params, file, q.options));
          if (done !== undefined && 'status' in done) return done;
          // Whole in memory while it is sent: a materialization is held whole by the query nodes too.
          const data = await readFile(file);
          return { status: 200, bytes: { data, contentType: 'application/vnd.apache.parquet' } };
        } finally {
          await rm(file, { force: true });
        }
      },
    },
    options,
  );
  apiRoute(
    app,
    deps,
    `${STORE_API}/property-type`,
    {
      post: async (req) => {
        authorised(req);
        const body = objectBody(req.body, ['projectId', 'type', 'name', 'propertyType']);
        const projectId = body['projectId'];
        const type = body['type'];
        const name = body['name'];
        const propertyType = body['propertyType'];
        if (
          typeof projectId !== 'number' ||
          !Number.isSafeInteger(projectId) ||
          !PROPERTY_PARENTS.includes(type as PropertyParent) ||
          typeof name !== 'string' ||
          !PROPERTY_TYPES.includes(propertyType as PropertyType)
        )
          throw new AppError('invalid_input', {
            detail: 'A property type change is {projectId, type, name, propertyType}.',
          });
        const definition = await deps.propertyDefinitions.setType(
          projectId,
          type as PropertyParent,
          name,
          propertyType as PropertyType,
        );
        return { status: 200, body: { definition: definition ?? null } };
      },
    },
    options,
  );
}

interface StoreQuery {
  readonly sql: string;
  readonly params: Record<string, unknown>;
  readonly options: TableQueryOptions;
}

function readQuery(body: unknown): StoreQuery {
  const q: JsonObject = objectBody(body, ['sql', 'params', 'maxWaitMs', 'project', 'kind']);
  const { sql, params, maxWaitMs, project, kind } = q;
  if (typeof sql !== 'string') throw new AppError('invalid_input', { detail: "'sql' must be a string." });
  if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params)))
    throw new AppError('invalid_input', { detail: "'params' must be an object." });
  if (maxWaitMs !== undefined && (typeof maxWaitMs !== 'number' || !(maxWaitMs >= 0)))
    throw new AppError('invalid_input', { detail: "'maxWaitMs' must be a number of milliseconds." });
  if (project !== undefined && !Number.isSafeInteger(project))
    throw new AppError('invalid_input', { detail: "'project' must be a project id." });
  if (kind !== undefined && !READ_KINDS.includes(kind as ReadKind))
    throw new AppError('invalid_input', { detail: `'kind' must be one of ${READ_KINDS.join(', ')}.` });
  return {
    sql,
    params: (params ?? {}) as Record<string, unknown>,
    options: {
      maxWaitMs,
      project: project as number | undefined,
      kind: kind as ReadKind | undefined,
    },
  };
}

/** Runs the engine's part; its refusal as the 422 the query node turns back into the same StoreQueryError. */
async function engine<T>(run: () => Promise<T>): Promise<T | ApiResponse> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof StoreQueryError)) throw err;
    return {
      status: 422,
      body: {
        store_error: {
          code: err.code,
          type: err.type,
          message: err.message,
          waitTimeout: err instanceof StoreWaitTimeout,
          throttled: err instanceof StoreThrottled ? err.limit : undefined,
        },
      },
    };
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
