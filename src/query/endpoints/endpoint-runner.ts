/**
 * The run of an endpoint (SPEC §4): version → variables → cache, or the query on raw data. What it adds to
 * the query API's run:
 * - a cache of results by (project, endpoint, version, variables, page), served while younger than the
 *   endpoint's `cache_age_seconds`, bounded in bytes, dropped when the endpoint changes;
 * - single flight: identical runs that arrive while one executes wait for it instead of running again;
 * - a bound on the queries one project executes at once (429 `throttled` past it), so one project cannot
 *   take every store slot; cached answers and runs that join a flight take none;
 * - a deadline: 504 `timeout` when the store has not answered within the run's execution limit (plus a
 *   little), even when the query waited in the store's queue rather than ran.
 *
 * An answer is serialised once, when its result is computed: a cached answer is those bytes, sent as they are.
 */
import type { Endpoint, EndpointVersion, TableReader } from '../../core/ports.ts';
import type { Logger } from '../../core/logger.ts';
import type { PropertyDefinitions, PropertyTypes } from '../../core/property-types.ts';
import { AppError } from '../../errors/app-error.ts';
import { DEFAULT_LIMITS, type QueryLimits } from '../clickhouse/printer.ts';
import { bindVariables, type BoundVariable } from '../clickhouse/variables.ts';
import {
  runCompiledQuery,
  Timings,
  type CompiledQuery,
  type HogQLQueryResult,
  type Timing,
} from '../hogql-query.ts';
import {
  compileInsightRun,
  finishInsightRows,
  planInsightRun,
  type PreparedInsightRun,
} from '../insights/insight.ts';
import {
  MaterializedTableError,
  type RunAnswer as PoolRunAnswer,
  type RunRequest as PoolRunRequest,
} from '../materialize/pool/protocol.ts';
import type { Servable } from '../materialize/materializations.ts';
import { servingVariables } from '../materialize/rewrite.ts';
import { servingHogql } from '../materialize/serving-hogql.ts';
import { compileVersion, type CompiledVersion } from '../compile/version.ts';
import { pageRows, paginate, type Page } from './pagination.ts';
import { ResultCache } from './result-cache.ts';

export type Refresh = 'cache' | 'force' | 'direct';
export const REFRESH_MODES: readonly Refresh[] = ['cache', 'force', 'direct'];

export interface RunRequest {
  readonly refresh: Refresh;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly debug: boolean;
  /** @default the newest version */
  readonly version?: number;
  readonly limit?: number;
  readonly offset?: number;
}

/** A run's answer: the whole JSON body (SPEC §4). A cached answer is bytes made once and sent as they are. */
export interface RunAnswer {
  readonly json: string | Buffer;
  /**
   * On a cached answer sent as its bytes: true while the same run would still be answered with them (its
   * result is still cached and young enough), as long as the endpoint does not change.
   */
  readonly holds?: () => boolean;
}

/**
 * A run's answer as a table, for an encoding other than JSON (SPEC §4, `format`): the rows, columns, types
 * and `hasMore` of the JSON answer, and the fields beside them.
 */
export interface RunTable {
  readonly rows: readonly (readonly unknown[])[];
  readonly columns: readonly string[];
  readonly types: readonly string[];
  readonly hasMore: boolean;
  readonly name: string;
  readonly version: number;
  readonly isCached: boolean;
  readonly lastRefresh: string;
  /** When the materialization that answered was computed; null for a run on raw data. */
  readonly materializedAt: string | null;
}

export interface EndpointRunnerConfig {
  /** @default DEFAULT_LIMITS */
  readonly limits?: QueryLimits;
  /** Queries one project's runs may execute at once. @default 8 */
  readonly maxRunsPerProject?: number;
  /** Bytes of cached results. @default 128 MiB */
  readonly cacheMaxBytes?: number;
  /** The database of the store tables. @default 'default' */
  readonly database?: string;
}

/**
 * A computed result, as cached. `answer` is the whole body of a cached answer as UTF-8 bytes, made once when
 * the result is computed: `{"results":…,"columns":…,"types":…,"hasMore":…,"name":…,"endpoint_version":…,
 * "is_cached":true,…}`. Its bytes 1 to 1 + `resultBytes` are the result part, which every other answer of
 * this result (the run that made it, runs that joined its flight, debug runs) is built around.
 */
interface Computed {
  readonly answer: Buffer;
  readonly resultBytes: number;
  /** The endpoint's name and version the answer names. */
  readonly name: string;
  readonly version: number;
  readonly startedAt: number;
  readonly lastRefresh: string;
  /** When the materialization the result was answered from was computed; null for a run on raw data. */
  readonly materializedAt: string | null;
  readonly hogql: string;
  readonly clickhouse: string;
  readonly timings: readonly Timing[];
}

/** A result a run has just computed: what is cached, and the rows it was made from (not cached). */
interface Fresh {
  readonly computed: Computed;
  readonly rows: unknown[][];
  readonly columns: readonly string[];
  readonly types: readonly string[];
  readonly hasMore: boolean;
}

/** How a run's answer is made, from a cached result or one just computed: JSON bytes, or a table. */
interface Answers<T> {
  cached(computed: Computed, name: string, holds: () => boolean, clock: Timings | undefined): T;
  fresh(fresh: Fresh, name: string, debug: boolean): T;
}

/** What one run executes, and how its result becomes the answer's rows. */
interface RunPlan {
  readonly bound: ReadonlyMap<string, BoundVariable>;
  /** What else tells this run's result apart from others with the same bound values. */
  readonly keyExtra: string;
  readonly query: () => CompiledQuery;
  /** The values to bind when they are not `bound` itself (an insight binds those its query uses). */
  readonly bind: () => ReadonlyMap<string, BoundVariable> | undefined;
  readonly shape: (result: HogQLQueryResult) => { rows: unknown[][]; hasMore: boolean };
  /**
   * Set for a run answered from a materialization: it runs in the query pool instead of the store (no slot,
   * no engine queue), and the answer says when the materialization was computed.
   */
  readonly materialized?: {
    readonly at: string;
    readonly execute: () => Promise<HogQLQueryResult & { readonly hasMore: boolean }>;
    /** The run on raw data, when the materialization cannot be read (missing, damaged, its actor gone). */
    readonly fallback: RunPlan;
  };
}

/** What the run path needs of materializations (src/query/materialize/): the result to serve, the pool. */
export interface MaterializedRuns {
  servable(endpoint: Endpoint, version: EndpointVersion): Servable | undefined;
  run(request: PoolRunRequest): Promise<PoolRunAnswer>;
  /** Told when a version's served result is missing or damaged (runs go to the raw data meanwhile). */
  unreadable(endpoint: Endpoint, version: number, objectKey: string, detail: string): void;
}

/** Time the store has beyond the engine's own execution limit to answer (queueing, transfer). */
const DEADLINE_GRACE_MS = 2000;
const RETRY_AFTER_SECONDS = 1;

export class EndpointRunner {
  readonly #store: TableReader;
  readonly #limits: QueryLimits;
  readonly #maxRuns: number;
  readonly #database: string | undefined;
  readonly #cache: ResultCache<Computed>;
  readonly #flights = new Map<string, Promise<Fresh>>();
  readonly #running = new Map<number, number>();

  readonly #materialized: MaterializedRuns | undefined;
  readonly #logger: Logger | undefined;
  readonly #properties: PropertyDefinitions | undefined;
  readonly #deletedAt: (projectId: number) => number;

  constructor(
    config: EndpointRunnerConfig,
    deps: {
      readonly store: TableReader;
      readonly materialized?: MaterializedRuns;
      readonly logger?: Logger;
      /** The projects' property types, which a SQL endpoint's query reads its properties as. */
      readonly properties?: PropertyDefinitions;
      /**
       * When data of a project was last deleted (ms since the epoch; 0: never): a result cached from a run
       * that started before is not served.
       */
      readonly dataDeletedAt?: (projectId: number) => number;
    },
  ) {
    this.#store = deps.store;
    this.#deletedAt = deps.dataDeletedAt ?? (() => 0);
    this.#materialized = deps.materialized;
    this.#logger = deps.logger;
    this.#properties = deps.properties;
    this.#limits = config.limits ?? DEFAULT_LIMITS;
    this.#maxRuns = config.maxRunsPerProject ?? 8;
    this.#database = config.database;
    this.#cache = new ResultCache({ maxBytes: config.cacheMaxBytes ?? 128 * 1024 * 1024 });
  }

  /** Bytes the cache holds now. */
  get cachedBytes(): number {
    return this.#cache.bytes;
  }

  /** Forgets every cached result of an endpoint (it changed, or is gone). */
  invalidate(endpointId: string): void {
    this.#cache.invalidate(endpointId);
  }

  /**
   * Runs a version of an endpoint. A cached answer comes back at once, not as a promise: a cached run is the
   * hot path, and each promise and tick costs it. Bad input throws the AppError at once too.
   */
  run(endpoint: Endpoint, request: RunRequest): RunAnswer | Promise<RunAnswer> {
    return this.#run(endpoint, request, JSON_ANSWERS);
  }

  /**
   * Runs a version as `run` does (the same cache, flights and limits) and answers the result as a table,
   * for an encoding other than JSON; `debug` adds nothing to a table.
   */
  runTable(endpoint: Endpoint, request: RunRequest): RunTable | Promise<RunTable> {
    return this.#run(endpoint, request, TABLE_ANSWERS);
  }

  #run<T>(endpoint: Endpoint, request: RunRequest, answers: Answers<T>): T | Promise<T> {
    const clock = request.debug ? new Timings() : undefined;
    const version = runnableVersion(endpoint, request.version);
    if (request.refresh === 'direct' && !version.isMaterialized) {
      throw new AppError('direct_not_materialized', {
        detail: `refresh 'direct' runs a materialized version on raw data; version ${version.version} of '${endpoint.name}' is not materialized, so every run of it is direct already: use 'cache' or 'force'.`,
        attr: 'refresh',
      });
    }
    const page: Page = { limit: request.limit, offset: request.offset };
    const types = this.#properties?.forProject(endpoint.projectId);
    const plan = this.#plan(endpoint, version, request, page, types);
    const key = cacheKey(endpoint, version, plan.bound, page) + plan.keyExtra;

    if (request.refresh === 'cache') {
      const hit = this.#cache.get(key);
      const fresh = (h: { startedAt: number }): boolean =>
        Date.now() - h.startedAt < endpoint.cacheAgeSeconds * 1000 &&
        h.startedAt >= this.#deletedAt(endpoint.projectId);
      if (hit && fresh(hit)) {
        const holds = (): boolean =>
          this.#cache.get(key) === hit &&
          fresh(hit) &&
          // A property type set since makes the answer another one (its key has the types' version).
          this.#properties?.forProject(endpoint.projectId).version === types?.version;
        return answers.cached(hit.value, endpoint.name, holds, clock);
      }
      const flight = this.#flights.get(key);
      if (flight) return flight.then((f) => answers.fresh(f, endpoint.name, request.debug));
    }
    return this.#execute(key, endpoint, version.version, plan, clock ?? new Timings()).then((f) =>
      answers.fresh(f, endpoint.name, request.debug),
    );
  }

  /**
   * What a run of `version` executes: a SQL version's query with its variables bound and the page written
   * in; an insight's query compiled for the range as of now and its magic variables (SPEC §4).
   */
  #plan(
    endpoint: Endpoint,
    version: EndpointVersion,
    request: RunRequest,
    page: Page,
    types: PropertyTypes | undefined,
  ): RunPlan {
    const compiled = compileVersion(version, this.#database, types);
    const served = request.refresh === 'direct' ? undefined : this.#materialized?.servable(endpoint, version);
    if (!served || !this.#materialized) {
      const direct = this.#directPlan(compiled, version, request, page);
      // A SQL answer depends on the property types it was compiled with: a new type is a new answer.
      return compiled.kind === 'sql' && types
        ? { ...direct, keyExtra: `${direct.keyExtra}\0t${types.version}` }
        : direct;
    }
    const pool = this.#materialized;
    // The run on raw data if the materialization cannot be read; made first, so a page on an insight is
    // refused here as on a direct run.
    const fallback = this.#directPlan(compiled, version, request, page);
    // Checked as a direct run checks them: the same refusals, whichever path answers.
    const variables = servingVariables(compiled, request.variables);
    return {
      ...fallback,
      bound: new Map(),
      keyExtra: `\0m\0${served.objectKey}\0${JSON.stringify(variables)}`,
      shape: (result) => ({
        rows: result.results,
        hasMore: (result as { hasMore?: boolean }).hasMore ?? false,
      }),
      materialized: {
        at: served.at,
        fallback,
        execute: async () => {
          const clock = new Timings();
          const answer = await pool.run({
            tableKey: served.objectKey,
            plan: served.serving,
            variables,
            page,
          });
          clock.lap('./materialized');
          return {
            results: answer.rows,
            columns: answer.columns,
            types: answer.types,
            hasMore: answer.hasMore,
            hogql: servingHogql(served.serving, endpoint.name, version.version, variables),
            clickhouse: '',
            timings: clock.done(),
          };
        },
      },
    };
  }

  /** A run on raw data: a SQL version's query with its page, or an insight compiled for now. */
  #directPlan(compiled: CompiledVersion, version: EndpointVersion, request: RunRequest, page: Page): RunPlan {
    if (compiled.kind === 'sql') {
      return {
        bound: bindVariables(compiled.resolved.variables, request.variables, compiled.declaredTypes),
        keyExtra: '',
        query: () => paginate(compiled, page),
        bind: () => undefined,
        shape: (result) => pageRows(result.results, page),
      };
    }
    if (page.limit !== undefined || page.offset !== undefined) {
      throw new AppError('invalid_input', {
        detail: `'limit' and 'offset' page the rows of SQL endpoints; an insight endpoint answers its whole table.`,
        attr: page.limit !== undefined ? 'limit' : 'offset',
      });
    }
    const plan = planInsightRun(compiled.insight, request.variables, {
      now: new Date(),
      materialized: version.isMaterialized,
      database: this.#database,
    });
    // Compiled only when the run executes: a cached answer needs the plan's values alone.
    let prepared: PreparedInsightRun | undefined;
    const prepare = (): PreparedInsightRun => (prepared ??= compileInsightRun(plan, this.#database));
    return {
      bound: plan.values,
      keyExtra: plan.key,
      query: () => prepare().compiled,
      // The bound values the query uses (a run binds only those).
      bind: () => prepare().bound,
      shape: (result) => finishInsightRows(prepare(), result.columns, result.results),
    };
  }

  /** Runs the query as the one flight for `key`, and caches what it answers. */
  #execute(key: string, endpoint: Endpoint, version: number, plan: RunPlan, clock: Timings): Promise<Fresh> {
    const projectId = endpoint.projectId;
    const startedAt = Date.now();
    const direct = (p: RunPlan): Promise<HogQLQueryResult> => {
      // Compiled before a slot is taken: a compile that throws must not hold one.
      const compiled = p.query();
      const bound = p.bind() ?? p.bound;
      const release = this.#acquire(projectId);
      const run = runCompiledQuery(
        compiled,
        bound,
        projectId,
        { store: this.#store, limits: this.#limits, database: this.#database },
        clock,
      );
      // The slot is the store's: it is held until the query ends, even past the deadline.
      run.then(release, release);
      return run;
    };
    // What answered: the materialization, or the raw data (also when the materialization cannot be read).
    let answered = plan;
    let materializedAt: string | null = null;
    let query: Promise<HogQLQueryResult>;
    const m = plan.materialized;
    if (m) {
      // From memory in the query pool: no store slot, no engine queue.
      query = m.execute().then(
        (result) => {
          materializedAt = m.at;
          return result;
        },
        (err: unknown) => {
          if (!canFallBack(err)) throw err;
          this.#logger?.warn(
            { err, endpoint: endpoint.name, version },
            'materialization unreadable; run on raw data',
          );
          if (
            err instanceof MaterializedTableError &&
            (err.problem === 'not_found' || err.problem === 'damaged')
          ) {
            this.#materialized?.unreadable(endpoint, version, err.tableKey, err.message);
          }
          answered = m.fallback;
          return direct(m.fallback);
        },
      );
    } else {
      query = direct(plan);
    }
    const flight = withDeadline(query, this.#limits).then((result) => {
      const { rows, hasMore } = answered.shape(result);
      const resultJson = `"results":${JSON.stringify(rows)},"columns":${JSON.stringify(result.columns)},"types":${JSON.stringify(result.types)},"hasMore":${hasMore}`;
      const lastRefresh = new Date(startedAt).toISOString();
      const tail = `,${JSON.stringify(answerFields(endpoint.name, version, true, lastRefresh, materializedAt)).slice(1)}`;
      const answer = Buffer.from(`{${resultJson}${tail}`);
      const computed: Computed = {
        answer,
        resultBytes: answer.length - 1 - Buffer.byteLength(tail),
        name: endpoint.name,
        version,
        startedAt,
        lastRefresh,
        materializedAt,
        hogql: result.hogql,
        clickhouse: result.clickhouse,
        timings: result.timings,
      };
      this.#cache.set(
        key,
        endpoint.id,
        computed,
        answer.length + result.hogql.length + result.clickhouse.length,
        startedAt,
      );
      return { computed, rows, columns: result.columns, types: result.types, hasMore };
    });
    this.#flights.set(key, flight);
    const land = (): void => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
    };
    flight.then(land, land);
    return flight;
  }

  /** A slot for one of the project's queries; 429 `throttled` when they are all taken. */
  #acquire(projectId: number): () => void {
    const running = this.#running.get(projectId) ?? 0;
    if (running >= this.#maxRuns) {
      throw new AppError('throttled', {
        detail: `Project ${projectId} already runs ${running} endpoint queries at once, its limit; retry after the time in Retry-After.`,
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      });
    }
    this.#running.set(projectId, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.#running.get(projectId) ?? 1) - 1;
      if (now === 0) this.#running.delete(projectId);
      else this.#running.set(projectId, now);
    };
  }
}

/** The fields of an answer beside the result (SPEC §4), in their order. */
function answerFields(
  name: string,
  version: number,
  cached: boolean,
  lastRefresh: string,
  materializedAt: string | null,
): Record<string, unknown> {
  return {
    name,
    endpoint_version: version,
    is_cached: cached,
    last_refresh: lastRefresh,
    endpoint_materialized: materializedAt !== null,
    endpoint_materialized_at: materializedAt,
  };
}

/** Answers as JSON bytes: a cached answer is its bytes as they are, for as long as they hold. */
const JSON_ANSWERS: Answers<RunAnswer> = {
  cached(computed, name, holds, clock) {
    if (clock) {
      clock.lap('./cache');
      return { json: answerOf(computed, name, true, clock.done()) };
    }
    if (computed.name !== name) return { json: answerOf(computed, name, true) };
    return { json: computed.answer, holds };
  },
  // A result a run computed, or waited for while another run computed it: not cached.
  fresh: ({ computed }, name, debug) => ({
    json: answerOf(computed, name, false, debug ? computed.timings : undefined),
  }),
};

/** Answers as tables: the rows just computed, or those of the cached answer's bytes read back. */
const TABLE_ANSWERS: Answers<RunTable> = {
  cached(computed, name) {
    const result = JSON.parse(`{${computed.answer.toString('utf8', 1, 1 + computed.resultBytes)}}`) as {
      results: unknown[][];
      columns: string[];
      types: string[];
      hasMore: boolean;
    };
    return tableOf(computed, name, true, { ...result, rows: result.results });
  },
  fresh: (fresh, name) => tableOf(fresh.computed, name, false, fresh),
};

function tableOf(
  computed: Computed,
  name: string,
  isCached: boolean,
  result: Pick<RunTable, 'rows' | 'columns' | 'types' | 'hasMore'>,
): RunTable {
  return {
    rows: result.rows,
    columns: result.columns,
    types: result.types,
    hasMore: result.hasMore,
    name,
    version: computed.version,
    isCached,
    lastRefresh: computed.lastRefresh,
    materializedAt: computed.materializedAt,
  };
}

/** An answer of a computed result other than its cached answer: another name, not cached, or with debug. */
function answerOf(computed: Computed, name: string, cached: boolean, timings?: readonly Timing[]): string {
  const fields = answerFields(name, computed.version, cached, computed.lastRefresh, computed.materializedAt);
  if (timings) {
    fields['hogql'] = computed.hogql;
    fields['clickhouse'] = computed.clickhouse;
    fields['timings'] = timings;
  }
  const result = computed.answer.toString('utf8', 1, 1 + computed.resultBytes);
  return `{${result},${JSON.stringify(fields).slice(1)}`;
}

/** The version a run asks for, if it may run: 404 for an inactive endpoint, an unknown or inactive version. */
function runnableVersion(endpoint: Endpoint, n: number | undefined): EndpointVersion {
  if (!endpoint.isActive) {
    throw new AppError('not_found', { detail: `Endpoint '${endpoint.name}' is inactive.` });
  }
  const version = endpoint.versions[(n ?? endpoint.versions.length) - 1];
  if (!version) {
    throw new AppError('not_found', {
      detail: `Endpoint '${endpoint.name}' has no version ${n}; its versions are 1 to ${endpoint.versions.length}.`,
      attr: 'version',
    });
  }
  if (!version.isActive) {
    throw new AppError('not_found', {
      detail: `Version ${version.version} of endpoint '${endpoint.name}' is inactive.`,
      attr: 'version',
    });
  }
  return version;
}

function cacheKey(
  endpoint: Endpoint,
  version: EndpointVersion,
  bound: ReadonlyMap<string, BoundVariable>,
  page: Page,
): string {
  // NUL separates the parts: JSON never has a raw one, and names and ids have none, so two different runs
  // never share a key. Built as one string, not JSON of nested arrays: it is made on every run, cached or not.
  let key = `${endpoint.projectId}\0${endpoint.id}\0${version.version}\0${page.limit ?? ''}\0${page.offset ?? 0}`;
  for (const b of bound.values()) key += `\0${b.name}\0${b.type}\0${JSON.stringify(b.value)}`;
  return key;
}

/** The query's answer, or 504 `timeout` once the store has had its execution limit and a grace. */
function withDeadline<T>(query: Promise<T>, limits: QueryLimits): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(
          new AppError('timeout', {
            detail: `The query did not answer within the limit of ${limits.maxExecutionSeconds} s; narrow its time range or simplify it.`,
          }),
        );
      },
      limits.maxExecutionSeconds * 1000 + DEADLINE_GRACE_MS,
    );
  });
  return Promise.race([query, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Whether a materialized run's failure leaves the raw data to answer: the table cannot be had, or its
 * actor died with the run. A bad variable (the executor's own 400) is the caller's, and answered as it is.
 */
function canFallBack(err: unknown): boolean {
  return err instanceof MaterializedTableError || (err instanceof AppError && err.code === 'unavailable');
}
