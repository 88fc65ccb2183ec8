import type { EventBatch } from './event.ts';

/**
 * The ports between Weir's layers. Adapters (embedded or JetStream bus, chDB or ClickHouse-server store,
 * file or NATS KV catalog) implement them at the edge; nothing above a port knows which adapter runs.
 */

/** Carries captured events to ingest. */
export interface Bus {
  /**
   * Hands the batches on. Resolves only once every event is durable (a JetStream ack, or the embedded
   * store's commit); rejects with AppError `unavailable` when the bus cannot take them now.
   */
  publish(batches: readonly EventBatch[]): Promise<void>;
  /** Whether the bus can accept events now (drives `/_ready`). */
  isReady(): boolean;
  /** Stops taking events and finishes what was taken. */
  close(): Promise<void>;
}

export type Row = Record<string, unknown>;

/**
 * A row as its values alone, in the order of a column list given with it (ClickHouse's JSONCompactEachRow).
 * Ingest writes event rows this way: the JSON text of a row is much shorter than as an object (no names), and
 * cheaper to make.
 */
export type Values = readonly unknown[];

/**
 * The analytical store. Two adapters: embedded (chDB in-process under a commit log, store/embedded/) and
 * server (ClickHouse over HTTP, store/server/); every member means something in both.
 */
export interface Store {
  /** Inserts rows; resolves when they are committed. */
  insert(table: string, rows: readonly Row[]): Promise<void>;
  /** Inserts rows given as values in the order of `columns` (the rest take their defaults); as `insert`. */
  insertValues(table: string, columns: readonly string[], rows: readonly Values[]): Promise<void>;
  /**
   * The bytes of some rows (objects, or values), made at once: a JSON array of them. `insertEncoded` commits
   * several such encodings as one insert. The group-commit writer holds bytes, not row objects, while an
   * earlier commit is under way: objects held that long outlive young-generation GCs, which then spend their
   * time copying them.
   */
  encode(rows: readonly Row[] | readonly Values[]): Buffer;
  /**
   * Commits encodings of `encode` (all objects, or all values in the order of `columns`) as one insert of
   * `rows` rows: one block, retried whole under one deduplication token, so a retry never stores it twice.
   */
  insertEncoded(
    table: string,
    rows: number,
    chunks: readonly Buffer[],
    columns?: readonly string[],
  ): Promise<void>;
  /**
   * How many commits the store takes at once to advantage (the group-commit writer keeps up to this many
   * under way, and batches the rest behind them): one for the embedded store (its commit log measured best
   * with one), more for a server, which runs inserts side by side.
   */
  readonly commitsInFlight: number;
  /**
   * This process is the only one that writes the store: true for the embedded store alone (its data
   * directory is locked to one process). Ingest may then keep state of its own about what the store holds,
   * such as which distinct ids have a person. A ClickHouse server may have any number of writers: false.
   */
  readonly soleWriter: boolean;
  /** Runs a query with typed parameters (`{name:Type}` placeholders); returns rows as objects. */
  query<T = Row>(sql: string, params?: Record<string, unknown>, options?: QueryOptions): Promise<T[]>;
  /** Runs a statement that returns no rows (DDL). */
  command(sql: string): Promise<void>;
  /**
   * Deletes the rows of one of Weir's tables that `where` selects (a condition with typed `{name:Type}`
   * parameters, as a query's): once it resolves no read sees them, and the engine drops them from disk as it
   * merges. The embedded store first applies everything committed, so a row committed before the call is
   * deleted too; on a cluster it runs on every shard's table.
   */
  deleteRows(table: string, where: string, params: Record<string, unknown>): Promise<void>;
  /**
   * Rewrites the parts of `table` that hold rows `deleteRows` deleted, so their bytes leave the disk now
   * rather than at some later merge (an erasure's promise); resolves when the rewrite is done. On a cluster
   * it runs on every shard's table. Costs a rewrite of each such part: once per erasure, once per retention
   * sweep.
   */
  purgeDeleted(table: string): Promise<void>;
  /**
   * False while the store is too far behind to take a new request's rows whole (the embedded store's log not
   * yet applied, a server's inserts not yet answered, past a bound); capture then refuses the request up
   * front (503) rather than have part of it stored.
   */
  accepting(): boolean;
  /**
   * Resolves once every row committed before the call is visible to a `fresh: false` query: when the
   * embedded store has applied its log that far; at once on a server, whose commits are visible when made.
   */
  visible(): Promise<void>;
  close(): Promise<void>;
}

/** Which rows set aside by the store to list or replay. */
export interface QuarantineFilter {
  /** Only this project's rows (an API caller's); every project's when absent (the operator's CLI). */
  readonly projectId?: number;
  readonly ids?: readonly string[];
  readonly status?: 'held' | 'replayed';
  /** @default 1000, the most */
  readonly limit?: number;
  readonly offset?: number;
}

/** A row the engine refused, as it was set aside (SPEC §2: kept with the reason, replayable). */
export interface QuarantinedRow {
  readonly id: string;
  readonly projectId: number;
  readonly table: string;
  /** The event's uuid, for a row of `events`. */
  readonly eventUuid: string | null;
  /** The engine's error number and name, and its message. */
  readonly code: number;
  readonly reason: string;
  readonly error: string;
  /** `held` until a replay stores it. */
  readonly status: 'held' | 'replayed';
  /** Replays tried. */
  readonly attempts: number;
  readonly quarantinedAt: string;
  /** The row as it was refused: an object of its columns (or its text, when it was not JSON). */
  readonly row: unknown;
}

/** What replaying one row did: stored, or refused again (and still held). */
export interface QuarantineReplay {
  readonly id: string;
  readonly table: string;
  readonly result: 'stored' | 'refused';
  readonly error?: string;
}

/** The rows a store set aside because the engine refused them: listed, and replayed after a fix. */
export interface QuarantineStore {
  listQuarantined(filter: QuarantineFilter): Promise<QuarantinedRow[]>;
  /** Inserts each held row of `filter` again, alone; resolves with what became of each. */
  replayQuarantined(filter: QuarantineFilter): Promise<QuarantineReplay[]>;
}

/**
 * The store cannot serve a read now (the embedded store cannot apply what it committed, say): the caller is
 * told to come back (503 with Retry-After), never handed the store's own failure as its answer.
 */
export class StoreUnavailable extends Error {
  readonly retryAfterSeconds: number;

  constructor(message: string, options: { cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(message, { cause: options.cause });
    this.name = 'StoreUnavailable';
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }
}

export interface QueryOptions {
  /**
   * Whether the query must see every committed row (the default). Ingest's own state lookups pass false:
   * they keep what they wrote in memory until `visible()`, so they never need rows the store has not shown
   * yet, and spare the store the work of showing them first.
   */
  readonly fresh?: boolean;
}

/** A query's result as a table: names and ClickHouse types of its columns, rows as arrays in column order. */
export interface ResultTable {
  readonly columns: readonly string[];
  readonly types: readonly string[];
  readonly rows: readonly unknown[][];
  /** What the engine reports of the run, when it does. */
  readonly statistics?: {
    readonly elapsedSeconds: number;
    readonly rowsRead: number;
    readonly bytesRead: number;
  };
}

/**
 * What the query API needs of the store: one SELECT (with its own SETTINGS clause, if any) whose result comes
 * back as a table, so that duplicate column names survive and column types are known. Rejects with a
 * StoreQueryError when the engine refuses or stops the query.
 */
export interface TableReader {
  queryTable(sql: string, params: Record<string, unknown>, options?: TableQueryOptions): Promise<ResultTable>;
}

/**
 * A store that can write a query's result to a local file as Parquet, without holding the result in memory
 * (what a materialization refresh needs). The codec is a setting of the query's own SETTINGS clause.
 */
export interface ParquetExporter {
  exportParquet(
    sql: string,
    params: Record<string, unknown>,
    path: string,
    options?: TableQueryOptions,
  ): Promise<void>;
}

export interface TableQueryOptions {
  /**
   * How long the query may wait for an engine busy with other work before it is given up unrun, failing
   * with a StoreWaitTimeout. Only the embedded store (chDB, a few reads at once) makes queries wait.
   */
  readonly maxWaitMs?: number;
  /** The project the read is for: the embedded store takes waiting reads project by project, in turn. */
  readonly project?: number;
  /** What the read is for: an ad-hoc query's share of the store is capped (StoreThrottled). @default 'endpoint' */
  readonly kind?: ReadKind;
}

/**
 * Who a read of the store is for: a query of the query API (`adhoc`), an endpoint run on raw data
 * (`endpoint`), or a materialization's refresh (`materialize`).
 */
export type ReadKind = 'adhoc' | 'endpoint' | 'materialize';
export const READ_KINDS: readonly ReadKind[] = ['adhoc', 'endpoint', 'materialize'];

/** The engine refused or stopped a query: its error, converted once at the store's edge. */
export class StoreQueryError extends Error {
  /** The engine's error number (ClickHouse: 47 for UNKNOWN_IDENTIFIER, …). */
  readonly code: number;
  /** The engine's error name (`UNKNOWN_IDENTIFIER`, `TIMEOUT_EXCEEDED`, …). */
  readonly type: string;

  constructor(code: number, type: string, message: string) {
    super(message);
    this.name = 'StoreQueryError';
    this.code = code;
    this.type = type;
  }
}

/**
 * The query was refused unrun: its project already has its limit of ad-hoc queries running or waiting for the
 * store. `limit` names the setting, for the caller's detail.
 */
export class StoreThrottled extends StoreQueryError {
  readonly limit: string;

  constructor(message: string, limit: string) {
    super(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', message);
    this.name = 'StoreThrottled';
    this.limit = limit;
  }
}

/** The query was given up unrun: it waited for the engine, busy with other work, past its `maxWaitMs`. */
export class StoreWaitTimeout extends StoreQueryError {
  constructor(message: string) {
    super(159, 'TIMEOUT_EXCEEDED', message);
    this.name = 'StoreWaitTimeout';
  }
}

export interface Project {
  readonly id: number;
  readonly name: string;
  /** The project API key (`phc_…`): public, write-only, sent by SDKs in capture bodies. */
  readonly apiToken: string;
  readonly createdAt: string;
  /**
   * Store no client IP: capture neither adds `$ip` nor keeps one an event sent, so no address reaches the bus
   * or the store, and GeoIP has nothing to look up (PostHog's "Discard client IP data").
   */
  readonly anonymizeIps: boolean;
  /** Days an event is kept after its timestamp, then deleted by the store's retention; null: kept for ever. */
  readonly eventRetentionDays: number | null;
  /**
   * Distinct ids whose events capture drops (an erasure's suppression, Segment's "suppress"), each as
   * `suppressionHash`: the catalog never holds an erased id itself.
   */
  readonly suppressedDistinctIds: readonly string[];
  /**
   * When data of the project was last deleted (an erasure done, a retention sweep): a cached answer or a
   * materialization computed before then is not served again.
   */
  readonly dataDeletedAt: string | null;
}

/** A change to a project's settings; a field left out keeps its value. */
export interface ProjectPatch {
  readonly name?: string;
  readonly anonymizeIps?: boolean;
  /** null: keep events for ever. */
  readonly eventRetentionDays?: number | null;
  readonly dataDeletedAt?: string;
  /** Suppression hashes to add (`suppressionHash`). */
  readonly suppress?: readonly string[];
  /** Suppression hashes to remove. */
  readonly unsuppress?: readonly string[];
}

/** The most distinct ids one project may have suppressed (its record must fit a KV value of 1 MB). */
export const MAX_SUPPRESSED_PER_PROJECT = 20_000;

/** What a deletion erases: persons (and, if asked, their events), or a whole project. */
export type DeletionKind = 'persons' | 'project';

/** `queued` until a process takes it, `running` (retried after a failure or a crash) until `done`. */
export type DeletionStatus = 'queued' | 'running' | 'done';

/** What a deletion removed, by kind of data. */
export interface DeletionCounts {
  readonly persons: number;
  readonly distinctIds: number;
  readonly events: number;
  /** Rows set aside by the store (the quarantine) and ingestion warnings that named the persons. */
  readonly quarantined: number;
  readonly warnings: number;
  /** Rows of the project's other tables (groups, property definitions) and objects: a project deletion. */
  readonly other: number;
}

/** A durable request to erase data (SPEC §3): accepted at once (202), run by a process that writes the store. */
export interface Deletion {
  /** Opaque, stable. */
  readonly id: string;
  readonly projectId: number;
  readonly kind: DeletionKind;
  /** The persons asked for, by uuid (kind `persons`). */
  readonly personIds: readonly string[];
  /**
   * The persons asked for by distinct id (kind `persons`). Emptied once done (`distinctIdCount` keeps how
   * many): the record of an erasure does not keep the ids it erased.
   */
  readonly distinctIds: readonly string[];
  readonly distinctIdCount: number;
  readonly deleteEvents: boolean;
  /** Capture drops these distinct ids' events from now on. */
  readonly suppress: boolean;
  readonly status: DeletionStatus;
  readonly createdAt: string;
  /** The personal API key that asked, or null (the operator). */
  readonly createdBy: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  /** Runs begun: more than one after a failure or a crash. */
  readonly attempts: number;
  /** Why the last run failed (it is retried), or null. */
  readonly lastError: string | null;
  readonly counts: DeletionCounts | null;
  /** Who runs it now and until when (another process waits for it to lapse), or null. */
  readonly lease: { readonly owner: string; readonly until: string } | null;
  /**
   * What a run found to delete — every person and distinct id — kept before anything is deleted, so a run
   * after a crash deletes the same even once the links that led to them are gone. Emptied once done.
   */
  readonly targets: { readonly personIds: readonly string[]; readonly distinctIds: readonly string[] } | null;
}

export type NewDeletion =
  | {
      readonly kind: 'persons';
      readonly projectId: number;
      readonly personIds: readonly string[];
      readonly distinctIds: readonly string[];
      readonly deleteEvents: boolean;
      readonly suppress: boolean;
      readonly createdBy: string | null;
    }
  | { readonly kind: 'project'; readonly projectId: number; readonly createdBy: string | null };

/** What a change of a deletion sets; an absent field stays as it is. */
export type DeletionChange = Partial<
  Pick<
    Deletion,
    | 'status'
    | 'startedAt'
    | 'finishedAt'
    | 'attempts'
    | 'lastError'
    | 'counts'
    | 'lease'
    | 'targets'
    | 'distinctIds'
  >
>;

/**
 * What a personal API key may do (SPEC §3); `*` is every scope. `person:read` lists persons; `person:write`
 * deletes them (with their events), as PostHog's scopes of those names.
 */
export const SCOPES = [
  'query:read',
  'endpoint:read',
  'endpoint:write',
  'project:write',
  'person:read',
  'person:write',
  '*',
] as const;
export type Scope = (typeof SCOPES)[number];

/** The projects a personal API key reaches: the ids it lists, or `'*'` for every project. */
export type ProjectReach = readonly number[] | '*';

/** A personal API key as the catalog keeps it: never its value, only what is safe to show. */
export interface PersonalApiKey {
  /** Opaque, stable; not secret. */
  readonly id: string;
  readonly label: string;
  readonly scopes: readonly Scope[];
  readonly projects: ProjectReach;
  /** Prefix and last four characters of the value, to recognise a key without revealing it. */
  readonly mask: string;
  readonly createdAt: string;
  /** The key that made this one (null for a key made by the operator), so a key can manage what it made. */
  readonly createdBy: string | null;
  /** Set once the key is revoked; a revoked key never authenticates again. */
  readonly revokedAt: string | null;
}

export interface NewPersonalApiKey {
  readonly label: string;
  readonly scopes: readonly Scope[];
  readonly projects: ProjectReach;
  readonly createdBy: string | null;
}

/** The types a SQL endpoint's variable can be declared with (SPEC §4). */
export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'date', 'datetime', 'list'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

/** A declared variable of a SQL endpoint: `{"browser": {"type": "string"}}`. */
export interface VariableDeclaration {
  readonly type: VariableType;
}

/** How often a materialized endpoint version is refreshed (SPEC §4). */
export const SYNC_FREQUENCIES = ['5min', '1hour', '6hour', '12hour', '24hour', '7day'] as const;
export type SyncFrequency = (typeof SYNC_FREQUENCIES)[number];

/** The bucket a materialized range variable's column is kept at (SPEC §4). */
export const MATERIALIZATION_BUCKETS = ['hour', 'day', 'week', 'month'] as const;
export type MaterializationBucket = (typeof MATERIALIZATION_BUCKETS)[number];

/** Where a version's materialization stands (SPEC §4); kept with the version in the catalog. */
export interface MaterializationState {
  /** `pending`: a refresh is asked for; `running`: one is under way; then `completed` or `failed`. */
  readonly status: 'pending' | 'running' | 'completed' | 'failed';
  /** When the result being served was computed; null before the first completed refresh. */
  readonly lastMaterializedAt: string | null;
  readonly rows: number | null;
  readonly bytes: number | null;
  /** Why the last refresh failed (the previous result, if any, is still served). */
  readonly error: string | null;
  /** The object holding the result being served; null before the first completed refresh. */
  readonly objectKey: string | null;
  /** Who runs the refresh now and until when (a lease another process respects), or null. */
  readonly lease: { readonly owner: string; readonly until: string } | null;
  /** When the last refresh ended, completed or failed (the next is due a sync interval after). */
  readonly refreshedAt: string | null;
  /** How runs are answered from the object (the query layer's plan, plain JSON), or null. */
  readonly serving: unknown;
}

/** The query an endpoint runs: SQL in the dialect, or an insight. */
export interface HogQLEndpointQuery {
  readonly kind: 'HogQLQuery';
  /** The SQL text, in the dialect of DESIGN.md. */
  readonly query: string;
}
/**
 * An insight-based query (SPEC §4): PostHog's TrendsQuery, FunnelsQuery or RetentionQuery object, kept as
 * it was given (checked by the query layer when the version is made).
 */
export interface InsightEndpointQuery {
  readonly kind: 'TrendsQuery' | 'FunnelsQuery' | 'RetentionQuery';
  readonly [field: string]: unknown;
}
export type EndpointQuery = HogQLEndpointQuery | InsightEndpointQuery;

/** One version of an endpoint. What it runs and accepts (query, variables) never changes once made. */
export interface EndpointVersion {
  /** 1, 2, …: the n-th version is `versions[n - 1]`. */
  readonly version: number;
  readonly query: EndpointQuery;
  /** Declared types by variable name; a placeholder without a declaration is typed by its value. */
  readonly variables: Readonly<Record<string, VariableDeclaration>>;
  /** An inactive version does not run (404), while the endpoint's other versions do. */
  readonly isActive: boolean;
  readonly isMaterialized: boolean;
  /** The version's materialization, once one was asked for; absent before. */
  readonly materialization?: MaterializationState;
  readonly createdAt: string;
  /** The personal API key that made it, or null. */
  readonly createdBy: string | null;
}

/** A named, saved query of a project (SPEC §4), with its versions. */
export interface Endpoint {
  /** Opaque, stable across renames and versions. */
  readonly id: string;
  readonly projectId: number;
  /** Unique in the project; the path segment that addresses it. */
  readonly name: string;
  readonly description: string;
  /** How long a run's result may be served from the cache. */
  readonly cacheAgeSeconds: number;
  /** An inactive endpoint does not run, whatever the version (404). */
  readonly isActive: boolean;
  readonly syncFrequency: SyncFrequency;
  /** The bucket range variables of its materialized versions are kept at. @default 'day' */
  readonly materializationBucket: MaterializationBucket;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Oldest first; never empty, never shortened. The newest is the current version. */
  readonly versions: readonly EndpointVersion[];
}

export interface NewEndpoint {
  readonly name: string;
  readonly description: string;
  readonly cacheAgeSeconds: number;
  readonly isActive: boolean;
  readonly syncFrequency: SyncFrequency;
  readonly materializationBucket: MaterializationBucket;
  readonly query: EndpointQuery;
  readonly variables: Readonly<Record<string, VariableDeclaration>>;
  readonly isMaterialized: boolean;
  readonly createdBy: string | null;
}

/** What an update changes; an absent field stays as it is. */
export interface EndpointChange {
  readonly name?: string;
  readonly description?: string;
  readonly cacheAgeSeconds?: number;
  readonly isActive?: boolean;
  readonly syncFrequency?: SyncFrequency;
  readonly materializationBucket?: MaterializationBucket;
  /** Adds a version after the newest (a changed query). */
  readonly newVersion?: Omit<EndpointVersion, 'version' | 'createdAt' | 'isActive'>;
  /** Changes the flags of an existing version. */
  readonly version?: {
    readonly version: number;
    readonly isActive?: boolean;
    readonly isMaterialized?: boolean;
    /** Replaces the version's materialization state. */
    readonly materialization?: MaterializationState;
  };
}

/**
 * Projects, keys and endpoints. Reads are synchronous and served from memory (capture's hot path and every API
 * request's auth must not do I/O); changes are asynchronous and resolve once durable and visible to the
 * reads of this process. Changes never lose one another, however many run at once. A NATS KV adapter
 * fits the same shape: reads from a watched in-memory copy, changes as CAS writes on revision.
 */
/** What capture needs of the catalog: project API keys. A `weir capture` process has only this view. */
export interface ProjectKeys {
  /** The project a project API key names, or undefined. Hot path of capture: must not do I/O. */
  projectByApiToken(token: string): Project | undefined;
  close(): Promise<void>;
}

export interface Catalog extends ProjectKeys {
  /**
   * Changes made so far: a different number after every change the reads below could see. What was worked out
   * from the catalog (who a key is, what an endpoint runs) still holds while this is the same.
   */
  readonly revision: number;
  project(id: number): Project | undefined;
  /** Every project, by id. */
  listProjects(): readonly Project[];
  /** The key with this value, revoked or not (callers refuse a revoked one), or undefined. */
  personalKeyByValue(value: string): PersonalApiKey | undefined;
  personalKey(id: string): PersonalApiKey | undefined;
  /** Every key, revoked ones included, oldest first. */
  listPersonalKeys(): readonly PersonalApiKey[];

  /**
   * Makes a project with a new project API key. `grantTo` (a key id) gains the project in the same change,
   * so the key that made a project can never be left without it.
   */
  createProject(input: {
    readonly name: string;
    readonly grantTo?: string;
    /** The new project's event retention (the configured default for new projects). @default null */
    readonly eventRetentionDays?: number | null;
  }): Promise<Project>;
  /** Changes a project's name or settings; undefined when there is no such project. */
  updateProject(id: number, patch: ProjectPatch): Promise<Project | undefined>;
  /** Makes a personal API key; its value is returned here and never again (only its hash is kept). */
  createPersonalKey(input: NewPersonalApiKey): Promise<{ key: PersonalApiKey; value: string }>;
  /** Revokes a key at once; false when there is no such key or it was already revoked. */
  revokePersonalKey(id: string): Promise<boolean>;

  /** The project's endpoint of this name, or undefined. */
  endpoint(projectId: number, name: string): Endpoint | undefined;
  /** The project's endpoints, oldest first. */
  listEndpoints(projectId: number): readonly Endpoint[];
  /**
   * Makes an endpoint with its version 1. Rejects with AppError `endpoint_exists` when the project already
   * has one of that name, however many creates race: exactly one of them wins.
   */
  createEndpoint(projectId: number, input: NewEndpoint): Promise<Endpoint>;
  /**
   * Applies the change `decide` makes of the newest state of the endpoint (so a change computed from what
   * it replaces is never lost to a concurrent one); `decide` may throw to refuse. Undefined when there is no
   * such endpoint. A rename to a name the project uses rejects with AppError `endpoint_exists`.
   */
  updateEndpoint(
    projectId: number,
    name: string,
    decide: (current: Endpoint) => EndpointChange,
  ): Promise<Endpoint | undefined>;
  /**
   * Deletes an endpoint and every version of it; false when there was none. `check` sees the newest state
   * first and may throw to refuse (a conditional delete).
   */
  deleteEndpoint(projectId: number, name: string, check?: (current: Endpoint) => void): Promise<boolean>;

  /** A deletion by id, or undefined. */
  deletion(id: string): Deletion | undefined;
  /** Every deletion, done ones included, oldest first. */
  listDeletions(): readonly Deletion[];
  /**
   * Records a deletion, queued. A persons deletion that suppresses adds its distinct ids to the project's
   * suppressions first, so capture drops them from the moment it is accepted. Rejects with AppError
   * `too_many_suppressed` past MAX_SUPPRESSED_PER_PROJECT.
   */
  createDeletion(input: NewDeletion & { readonly suppressionHashes?: readonly string[] }): Promise<Deletion>;
  /**
   * Applies the change `decide` makes of the newest state of a deletion (undefined from `decide`: none), as
   * a compare-and-set: a lease taken by two processes at once goes to one. Undefined when there is none.
   */
  updateDeletion(
    id: string,
    decide: (current: Deletion) => DeletionChange | undefined,
  ): Promise<Deletion | undefined>;
  /**
   * Deletes a project: from this change on its project API key names nothing and it lists nowhere; a
   * deletion of kind `project` is recorded to erase its data, endpoints and materializations. Undefined when
   * there is no such project.
   */
  deleteProject(id: number, createdBy: string | null): Promise<Deletion | undefined>;
  /** Removes what is left of a deleted project in the catalog (its endpoints); idempotent. */
  removeProjectRecords(id: number): Promise<void>;
}
