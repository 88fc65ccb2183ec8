/**
 * The Catalog in a NATS JetStream KV bucket, for roles that run on machines of their own (issue 27).
 *
 * Key layout: one KV key per record, not one snapshot key.
 * - `meta.next-project-id`: the next project id (a JSON number); created last by the bootstrap, so its
 *   presence says the bucket is bootstrapped.
 * - `meta.bootstrap`: the first start's plan (project 1 and its `*` key, hashed), claimed with a create so
 *   that of two processes opening an empty bucket at once exactly one plan is used; anyone may finish it.
 * - `projects.<id>`, `keys.<key id>` (the record with `valueHash`, exactly as the file catalog stores it,
 *   never the value), `endpoints.<project id>.n<base64url(name)>` (the endpoint with every version),
 *   `deletions.<id>` (an erasure or a project deletion, with its state).
 * Per-record keys because a KV value is limited by the server's max_payload (1 MB by default) while a catalog
 * with many endpoints and versions is not, and because two nodes changing different records then never
 * conflict: only changes of one record retry each other.
 *
 * Reads are served from an in-memory copy kept current by a watch of the whole bucket. Every change is a
 * compare-and-set on the KV revision of the record as it was read (CasBucket: on a replicated bucket of a
 * nats-server before 2.9.21, conditional on the whole bucket, so that changes of different records retry each
 * other too, which a catalog's rate of change affords); on a conflict the record is read again and the change
 * worked out again from the newest state (`decide` runs again), so nothing is lost. A change that spans
 * records is ordered so that a crash between its writes leaves nothing a reader could misuse (see
 * `createProject`; a rename is the one exception, documented there).
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type {
  Catalog,
  Deletion,
  DeletionChange,
  Endpoint,
  EndpointChange,
  NewDeletion,
  NewEndpoint,
  NewPersonalApiKey,
  PersonalApiKey,
  Project,
  ProjectPatch,
} from '../core/ports.ts';
import { CasBucket, KvConflict } from '../kv/cas-bucket.ts';
import {
  CatalogState,
  changedDeletion,
  projectRecord,
  type CatalogSnapshot,
  type StoredPersonalApiKey,
} from './catalog-state.ts';
import {
  bootstrapRecords,
  bootstrapReport,
  newDeletion,
  newEndpoint,
  newPersonalKey,
  newProjectFields,
  type Bootstrap,
} from './records.ts';

export interface KvCatalogOptions {
  readonly bucket: string;
  /** JetStream replicas of the bucket's stream when it is made (3 on a three-node cluster). @default 1 */
  readonly replicas?: number;
  /** Whether `replicas` was configured: only then is an existing bucket changed to it. @default false */
  readonly replicasConfigured?: boolean;
  /**
   * Whether this process may make project 1 and its key in an empty bucket. `weir capture` may not: it has
   * no one to show the keys to, so it waits for a query or ingest process to do it. @default true
   */
  readonly bootstrap?: boolean;
  /**
   * Whether the connection is up now. The watch survives a reconnect by itself (it resumes where it was), so
   * while the server is away only the connection tells that the copy may be behind. @default always
   */
  readonly connected?: () => boolean;
  readonly bootstrapProjectApiKey: string | undefined;
  readonly bootstrapPersonalApiKey: string | undefined;
  /** Project 1's event retention in days, when this open makes it; 0 or absent: for ever. */
  readonly eventRetentionDays?: number;
}

/** The bucket the roles share by default (`WEIR_CATALOG_BUCKET`). */
export const CATALOG_BUCKET = 'weir_catalog';
/** How long a watch that failed waits before it is started again. */
const REWATCH_MS = 500;
const COUNTER = 'meta.next-project-id';
const BOOTSTRAP = 'meta.bootstrap';
/** Conflicts in a row after which a change gives up: each one means another change succeeded, so this is only reached under a storm. */
const MAX_ATTEMPTS = 1000;

const projectKey = (id: number): string => `projects.${id}`;
const deletionKey = (id: string): string => `deletions.${id}`;
const personalKeyKey = (id: string): string => `keys.${id}`;
// Base64url keeps any name within KV's key alphabet; the `n` keeps an empty name a valid token.
const endpointKey = (projectId: number, name: string): string =>
  `endpoints.${projectId}.n${Buffer.from(name).toString('base64url')}`;

/** A record as last seen, with its KV revision; `value` undefined: deleted. */
interface Entry {
  readonly revision: number;
  readonly value: unknown;
}

interface BootstrapPlan {
  readonly project: Project;
  readonly key: StoredPersonalApiKey;
}

export class KvCatalog implements Catalog {
  readonly #cas: CasBucket;
  readonly #kv: KV;
  readonly #records = new Map<string, Entry>();
  #state: CatalogState | undefined;
  #revision = 0;
  readonly #listeners: ((projects: readonly Project[]) => void)[] = [];
  readonly #endpointListeners: ((endpointId: string, endpoint: Endpoint | undefined) => void)[] = [];
  #following = false;
  #closed = false;
  /** Each record's local queue: changes of one record by this process wait for each other instead of conflicting. */
  readonly #tails = new Map<string, Promise<unknown>>();
  readonly #pending = new Set<Promise<unknown>>();
  #stopWatch: (() => void) | undefined;
  #watching: Promise<void> = Promise.resolve();
  /** Set on the open whose bootstrap plan was used. */
  bootstrap: Bootstrap | undefined;

  readonly #connected: () => boolean;

  private constructor(cas: CasBucket, connected: () => boolean) {
    this.#cas = cas;
    this.#kv = cas.kv;
    this.#connected = connected;
  }

  get revision(): number {
    return this.#revision;
  }

  /**
   * Opens (creating if need be) the bucket on `nc`, which stays the caller's to close. Resolves once every
   * record is in memory and, on an empty bucket, project 1 and a `*` key exist.
   */
  static async open(nc: NatsConnection, options: KvCatalogOptions): Promise<KvCatalog> {
    const cas = await CasBucket.open(nc, {
      bucket: options.bucket,
      replicas: options.replicas,
      resize: options.replicasConfigured === true && options.replicas !== undefined,
    });
    const catalog = new KvCatalog(cas, options.connected ?? (() => true));
    await catalog.#watch();
    if (catalog.#records.get(COUNTER)?.value === undefined && (options.bootstrap ?? true))
      await catalog.#bootstrap(options);
    return catalog;
  }

  /**
   * Whether the copy in memory follows the bucket: false while the connection is down, and from a failure of
   * the watch until it runs again. The roles' `/_ready` says so.
   */
  get following(): boolean {
    return this.#following && this.#connected();
  }

  /**
   * Fills an empty bucket with a whole catalog (`weir catalog import`), the id counter last, so that a bucket
   * the import did not finish reads as not bootstrapped rather than as a catalog missing records. A bucket that
   * holds any record is refused: an import never mixes two catalogs. Resolves with the records written.
   */
  static async importSnapshot(
    nc: NatsConnection,
    options: { readonly bucket: string; readonly replicas?: number },
    snapshot: CatalogSnapshot,
  ): Promise<number> {
    const cas = await CasBucket.open(nc, options);
    for await (const key of await cas.kv.keys()) {
      throw new Error(`the bucket '${options.bucket}' already holds a catalog (it has the record '${key}')`);
    }
    const records: [string, unknown][] = [
      ...snapshot.projects.map((p): [string, unknown] => [projectKey(p.id), p]),
      ...snapshot.personalApiKeys.map((k): [string, unknown] => [personalKeyKey(k.id), k]),
      ...snapshot.endpoints.map((e): [string, unknown] => [endpointKey(e.projectId, e.name), e]),
      ...snapshot.deletions.map((d): [string, unknown] => [deletionKey(d.id), d]),
      [COUNTER, snapshot.nextProjectId],
    ];
    for (const [key, value] of records) await cas.create(key, value);
    return records.length;
  }

  /** The whole catalog as the file catalog stores it (`weir catalog export`): key values as hashes only. */
  snapshot(): CatalogSnapshot {
    return this.#current().snapshot;
  }

  projectByApiToken(token: string): Project | undefined {
    return this.#current().projectByApiToken(token);
  }

  project(id: number): Project | undefined {
    return this.#current().project(id);
  }

  listProjects(): readonly Project[] {
    return this.#current().snapshot.projects;
  }

  personalKeyByValue(value: string): PersonalApiKey | undefined {
    return this.#current().personalKeyByValue(value);
  }

  personalKey(id: string): PersonalApiKey | undefined {
    return this.#current().personalKey(id);
  }

  listPersonalKeys(): readonly PersonalApiKey[] {
    return this.#current().snapshot.personalApiKeys;
  }

  /**
   * Three writes, in the order that keeps a crash harmless: claim the id (the counter), grant it to `grantTo`,
   * then write the project. A crash after the claim leaves a gap in the ids; after the grant, a key granted
   * an id no project has (and none ever will: the id is taken). The project is never visible without its grant.
   */
  createProject(input: {
    readonly name: string;
    readonly grantTo?: string;
    readonly eventRetentionDays?: number | null;
  }): Promise<Project> {
    const fields = newProjectFields(input.name, input.eventRetentionDays);
    return this.#track(async () => {
      // Refuses an unknown key before an id is taken (withProject throws), as the file catalog does.
      this.#current().withProject(fields, input.grantTo);
      const id = await this.#changing(COUNTER, async () => {
        const { value, revision } = this.#entry(COUNTER);
        const next = value as number;
        await this.#put(COUNTER, next + 1, revision);
        return next;
      });
      const project: Project = { id, ...fields };
      if (input.grantTo !== undefined) {
        const key = personalKeyKey(input.grantTo);
        await this.#changing(key, async () => {
          const { value, revision } = this.#entry(key);
          const stored = value as StoredPersonalApiKey | undefined;
          if (!stored) throw new Error(`no personal API key ${input.grantTo}`);
          if (stored.projects === '*') return;
          await this.#put(key, { ...stored, projects: [...stored.projects, id] }, revision);
        });
      }
      await this.#put(projectKey(id), project, 0);
      return project;
    });
  }

  updateProject(id: number, patch: ProjectPatch): Promise<Project | undefined> {
    const key = projectKey(id);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision } = this.#entry(key);
        const changed = this.#current().withProjectPatch(id, patch);
        if (!changed) return this.#current().project(id);
        await this.#put(key, changed.project, revision);
        return changed.project;
      }),
    );
  }

  async createPersonalKey(input: NewPersonalApiKey): Promise<{ key: PersonalApiKey; value: string }> {
    const { key, value } = newPersonalKey(input);
    await this.#track(async () => {
      this.#current().withKey(key); // the same refusals as the file catalog
      await this.#put(personalKeyKey(key.id), key, 0);
    });
    return { key, value };
  }

  revokePersonalKey(id: string): Promise<boolean> {
    const key = personalKeyKey(id);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision } = this.#entry(key);
        const next = this.#current().withKeyRevoked(id, new Date().toISOString());
        if (!next) return false;
        await this.#put(key, next.personalKey(id), revision);
        return true;
      }),
    );
  }

  endpoint(projectId: number, name: string): Endpoint | undefined {
    return this.#current().endpoint(projectId, name);
  }

  listEndpoints(projectId: number): readonly Endpoint[] {
    return this.#current().endpointsOf(projectId);
  }

  createEndpoint(projectId: number, input: NewEndpoint): Promise<Endpoint> {
    const endpoint = newEndpoint(projectId, input);
    const key = endpointKey(projectId, input.name);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision } = this.#entry(key);
        // Throws `endpoint_exists` once a conflict has shown the name taken: exactly one create wins.
        this.#current().withEndpoint(endpoint);
        await this.#put(key, endpoint, revision);
        return endpoint;
      }),
    );
  }

  /**
   * A rename writes the endpoint under its new name (a create: a taken name is `endpoint_exists`), then deletes
   * the old record if it is still as read, undoing the first write if it is not. A crash between the two writes
   * leaves the endpoint under both names until one is deleted; a single-key rename needs endpoints keyed by id.
   */
  updateEndpoint(
    projectId: number,
    name: string,
    decide: (current: Endpoint) => EndpointChange,
  ): Promise<Endpoint | undefined> {
    const key = endpointKey(projectId, name);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision } = this.#entry(key);
        const state = this.#current();
        const current = state.endpoint(projectId, name);
        if (!current) return undefined;
        const change = decide(current);
        if (Object.values(change).every((v) => v === undefined)) return current;
        const changed = state.withEndpointChanged(projectId, name, change, new Date().toISOString());
        if (!changed) return undefined;
        const { endpoint } = changed;
        if (endpoint.name === name) {
          await this.#put(key, endpoint, revision);
          return endpoint;
        }
        const newKey = endpointKey(projectId, endpoint.name);
        const created = await this.#put(newKey, endpoint, this.#entry(newKey).revision);
        try {
          await this.#delete(key, revision);
        } catch (err) {
          if (err instanceof KvConflict) await this.#delete(newKey, created);
          throw err;
        }
        return endpoint;
      }),
    );
  }

  deleteEndpoint(projectId: number, name: string, check?: (current: Endpoint) => void): Promise<boolean> {
    const key = endpointKey(projectId, name);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision } = this.#entry(key);
        const current = this.#current().endpoint(projectId, name);
        if (!current) return false;
        check?.(current);
        await this.#delete(key, revision);
        return true;
      }),
    );
  }

  deletion(id: string): Deletion | undefined {
    return this.#current().deletion(id);
  }

  listDeletions(): readonly Deletion[] {
    return this.#current().snapshot.deletions;
  }

  /**
   * Two writes: the suppressions first, so that a crash between them leaves ids suppressed with no deletion
   * (which the caller, not told of success, asks again) rather than a deletion whose ids still capture.
   */
  createDeletion(input: NewDeletion & { readonly suppressionHashes?: readonly string[] }): Promise<Deletion> {
    const deletion = newDeletion(input);
    return this.#track(async () => {
      const hashes = input.suppressionHashes ?? [];
      if (hashes.length > 0) await this.updateProject(input.projectId, { suppress: hashes });
      await this.#put(deletionKey(deletion.id), deletion, 0);
      return deletion;
    });
  }

  updateDeletion(
    id: string,
    decide: (current: Deletion) => DeletionChange | undefined,
  ): Promise<Deletion | undefined> {
    const key = deletionKey(id);
    return this.#track(() =>
      this.#changing(key, async () => {
        const { revision, value } = this.#entry(key);
        const current = value as Deletion | undefined;
        if (!current) return undefined;
        const change = decide(current);
        if (!change) return current;
        const next = changedDeletion(current, change);
        await this.#put(key, next, revision);
        return next;
      }),
    );
  }

  /**
   * The deletion is written first, then the project record goes: a crash between them leaves a deletion of
   * a project still there, and the deletion's run removes the project before anything else.
   */
  deleteProject(id: number, createdBy: string | null): Promise<Deletion | undefined> {
    const key = projectKey(id);
    return this.#track(async () => {
      if (!this.#current().project(id)) return undefined;
      const deletion = newDeletion({ kind: 'project', projectId: id, createdBy });
      await this.#put(deletionKey(deletion.id), deletion, 0);
      await this.#removeRecord(key);
      return deletion;
    });
  }

  removeProjectRecords(id: number): Promise<void> {
    return this.#track(async () => {
      await this.#removeRecord(projectKey(id));
      const prefix = `endpoints.${id}.`;
      for (const [key, { value }] of [...this.#records]) {
        if (key.startsWith(prefix) && value !== undefined) await this.#removeRecord(key);
      }
    });
  }

  /** Deletes a record whatever its revision (a conflict reads it again and deletes that). */
  #removeRecord(key: string): Promise<void> {
    return this.#changing(key, async () => {
      const { revision, value } = this.#entry(key);
      if (value !== undefined) await this.#delete(key, revision);
    });
  }

  /**
   * Calls `listener` with every project after each change this process sees, its own (before the change's
   * caller hears of it) and every other process's (as the watch delivers it).
   */
  onChange(listener: (projects: readonly Project[]) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Calls `listener` with an endpoint's id and its new state (undefined: deleted) whenever its record changes
   * or goes, by this process or another: what was cached of the endpoint may have to go with it.
   */
  onEndpointChange(listener: (endpointId: string, endpoint: Endpoint | undefined) => void): void {
    this.#endpointListeners.push(listener);
  }

  /** Waits for changes in progress, then stops watching. The connection is the caller's to close. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
    this.#closed = true;
    this.#stopWatch?.();
    await this.#watching;
  }

  /** The state of the records seen so far, rebuilt on the first read after a change (a flood rebuilds once). */
  #current(): CatalogState {
    this.#state ??= this.#build();
    return this.#state;
  }

  #build(): CatalogState {
    let nextProjectId = 1;
    const projects: Project[] = [];
    const personalApiKeys: StoredPersonalApiKey[] = [];
    const endpoints: Endpoint[] = [];
    const deletions: Deletion[] = [];
    for (const [key, { value }] of this.#records) {
      if (value === undefined) continue;
      if (key === COUNTER) nextProjectId = value as number;
      else if (key.startsWith('projects.')) projects.push(projectRecord(value as Project));
      else if (key.startsWith('keys.')) personalApiKeys.push(value as StoredPersonalApiKey);
      else if (key.startsWith('endpoints.')) endpoints.push(value as Endpoint);
      else if (key.startsWith('deletions.')) deletions.push(value as Deletion);
    }
    // KV delivers records in the order of their last change; the port promises ids and oldest first.
    const oldestFirst = (
      a: { createdAt: string; id: string },
      b: { createdAt: string; id: string },
    ): number =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    projects.sort((a, b) => a.id - b.id);
    personalApiKeys.sort(oldestFirst);
    endpoints.sort(oldestFirst);
    deletions.sort(oldestFirst);
    return new CatalogState({ version: 1, nextProjectId, projects, personalApiKeys, endpoints, deletions });
  }

  #entry(key: string): Entry {
    return this.#records.get(key) ?? { revision: 0, value: undefined };
  }

  /** Takes a record's value at `revision` if it is newer than what is known of it. */
  #apply(key: string, value: unknown, revision: number): void {
    const known = this.#records.get(key);
    if (known && known.revision >= revision) return;
    this.#records.set(key, { revision, value });
    this.#state = undefined;
    this.#revision++;
    if (this.#listeners.length > 0) {
      const projects = this.listProjects();
      for (const listener of this.#listeners) listener(projects);
    }
    if (key.startsWith('endpoints.') && this.#endpointListeners.length > 0) {
      const endpoint = value as Endpoint | undefined;
      const id = (endpoint ?? (known?.value as Endpoint | undefined))?.id;
      if (id !== undefined) for (const listener of this.#endpointListeners) listener(id, endpoint);
    }
  }

  /** Reads one record from the server (after a conflict: the copy in memory is behind). */
  async #fetch(key: string): Promise<void> {
    const e = await this.#kv.get(key);
    if (e) this.#apply(key, e.operation === 'PUT' ? e.json() : undefined, e.revision);
  }

  /** Writes `value` if the record is still at `expected` (0: it has never been written); its new revision. */
  async #put(key: string, value: unknown, expected: number): Promise<number> {
    const revision = await this.#cas.set(key, value, expected);
    this.#apply(key, value, revision);
    return revision;
  }

  /** Writes a delete marker if the record is still at `expected`. */
  async #delete(key: string, expected: number): Promise<void> {
    this.#apply(key, undefined, await this.#cas.set(key, undefined, expected));
  }

  /**
   * Runs `step` (which reads the state and the revisions it writes against, then writes) after this process's
   * earlier changes of `key`, and again after each conflict once the conflicting records are read anew.
   */
  #changing<T>(key: string, step: () => Promise<T>): Promise<T> {
    const run = (this.#tails.get(key) ?? Promise.resolve()).then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await step();
        } catch (err) {
          if (!(err instanceof KvConflict) || attempt >= MAX_ATTEMPTS) throw err;
          await this.#fetch(err.key);
        }
      }
    });
    const tail = run.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return run;
  }

  /** Keeps `close` waiting for a change in progress. */
  #track<T>(change: () => Promise<T>): Promise<T> {
    const run = change();
    this.#pending.add(run);
    void run.catch(() => undefined).then(() => this.#pending.delete(run));
    return run;
  }

  /**
   * Starts the watch of every record and resolves once it has delivered the bucket's content as it was when
   * the watch started (the newest revision then), so that reads after `open` see every record. A watch that
   * fails later (the server it used went away for good) is started again until it runs: it delivers every
   * record anew, and `#apply` keeps only what is newer than the copy.
   */
  async #watch(): Promise<void> {
    const lastSeq = (await this.#kv.status()).streamInfo.state.last_seq;
    const watcher = await this.#kv.watch();
    this.#stopWatch = () => watcher.stop();
    let loaded!: () => void;
    let failed!: (err: unknown) => void;
    const initial = new Promise<void>((resolve, reject) => {
      loaded = resolve;
      failed = reject;
    });
    let ran = false;
    const caughtUp = (): void => {
      ran = this.#following = true;
      loaded();
    };
    if (lastSeq === 0) caughtUp();
    this.#watching = (async () => {
      try {
        for await (const e of watcher) {
          this.#apply(e.key, e.operation === 'PUT' ? e.json() : undefined, e.revision);
          if (e.revision >= lastSeq) caughtUp();
        }
      } catch (err) {
        // Before the content is loaded the open fails; after, the copy is behind until a new watch runs.
        failed(err);
      }
      this.#following = false;
      // One that failed before it caught up is retried by whoever started it (`open`, `#rewatch`).
      if (ran && !this.#closed) this.#rewatch();
    })();
    await initial;
  }

  #rewatch(): void {
    const again = async (): Promise<void> => {
      while (!this.#closed) {
        await new Promise((r) => setTimeout(r, REWATCH_MS));
        if (this.#closed) return;
        try {
          await this.#watch();
          return;
        } catch {
          // NATS is still away: try again.
        }
      }
    };
    void again();
  }

  /**
   * Claims the bootstrap with a create of its plan; whoever loses uses the winner's plan. Every write after the
   * claim tolerates having been made already, so any opener finishes a bootstrap a crash interrupted.
   */
  async #bootstrap(options: KvCatalogOptions): Promise<void> {
    const { personal, ...mine } = bootstrapRecords(options);
    let won = false;
    // A plan already there is an interrupted bootstrap: finish it rather than replace it.
    if (this.#entry(BOOTSTRAP).value === undefined) {
      try {
        await this.#put(BOOTSTRAP, mine, 0);
        won = true;
      } catch (err) {
        if (!(err instanceof KvConflict)) throw err;
        await this.#fetch(BOOTSTRAP);
      }
    }
    const plan = this.#entry(BOOTSTRAP).value as BootstrapPlan;
    const ensure = async (key: string, value: unknown): Promise<void> => {
      try {
        await this.#put(key, value, 0);
      } catch (err) {
        if (!(err instanceof KvConflict)) throw err;
        await this.#fetch(key);
      }
    };
    await ensure(personalKeyKey(plan.key.id), plan.key);
    await ensure(projectKey(1), plan.project);
    await ensure(COUNTER, 2);
    if (won) this.bootstrap = bootstrapReport(options, plan.project, personal);
  }
}
