/**
 * Materializations of endpoint versions (SPEC §4): the scheduler that refreshes them, and what the run path
 * asks of them.
 *
 * - A version with `is_materialized` is due when it has never been refreshed, when a refresh is asked for
 *   (`pending`: on enable, or `POST …/materialize`), a sync interval after its last refresh ended, or when
 *   the lease of a refresh under way has run out (its process died).
 * - A refresh is claimed in the catalog (status `running` with a lease naming this process), so one refresh
 *   per version runs at a time however many processes share the catalog. It ends `completed` (the new
 *   object named, the old one swept) or `failed` (the error shown, the previous result still served).
 * - A result is served while it is younger than twice its sync interval; older, runs go to the raw data.
 */
import { hostname } from 'node:os';
import type { Logger } from '../../core/logger.ts';
import type { PropertyDefinitions } from '../../core/property-types.ts';
import type {
  Catalog,
  Endpoint,
  EndpointVersion,
  MaterializationState,
  SyncFrequency,
} from '../../core/ports.ts';
import { compileVersion } from '../compile/version.ts';
import { planMaterialization } from './rewrite.ts';
import type { ServingPlan } from './serving.ts';
import type { MaterializationWriter } from './writer.ts';

export const SYNC_SECONDS: Readonly<Record<SyncFrequency, number>> = {
  '5min': 300,
  '1hour': 3600,
  '6hour': 6 * 3600,
  '12hour': 12 * 3600,
  '24hour': 24 * 3600,
  '7day': 7 * 24 * 3600,
};

/** A version's result as a run may be answered from it. */
export interface Servable {
  readonly objectKey: string;
  readonly at: string;
  readonly serving: ServingPlan;
}

export interface MaterializationsConfig {
  /** How often due refreshes are looked for. @default 1000 */
  readonly tickMs?: number;
  /**
   * How long a claim holds without being renewed: the refreshing process renews it every third of this,
   * so a refresh whose process died is taken over this long after. @default 60000
   */
  readonly leaseMs?: number;
  /** The database of the store tables. */
  readonly database?: string;
}

export interface MaterializationsDeps {
  readonly catalog: Catalog;
  readonly writer: MaterializationWriter;
  readonly logger: Logger;
  /** Told when an object stops being served (a newer one replaced it): the pool drops it. */
  readonly onReplaced?: (objectKey: string) => void;
  /** Told when a version's result changed: its cached answers go. */
  readonly onChanged?: (endpointId: string) => void;
  /** The projects' property types, which a SQL endpoint's query reads its properties as. */
  readonly properties?: PropertyDefinitions;
}

export class Materializations {
  readonly #config: Required<Omit<MaterializationsConfig, 'database'>> & { database?: string };
  readonly #deps: MaterializationsDeps;
  /** This process, as a lease names it. */
  readonly #owner = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #closed = false;

  constructor(config: MaterializationsConfig, deps: MaterializationsDeps) {
    this.#config = {
      tickMs: config.tickMs ?? 1000,
      leaseMs: config.leaseMs ?? 60_000,
      database: config.database,
    };
    this.#deps = deps;
  }

  start(): void {
    this.#timer = setInterval(() => void this.tick(), this.#config.tickMs);
    this.#timer.unref();
    void this.tick();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#ticking;
  }

  /** Refreshes every due version, one at a time; a tick that finds the previous still running does nothing. */
  tick(): Promise<void> {
    if (this.#ticking || this.#closed) return this.#ticking ?? Promise.resolve();
    this.#ticking = this.#refreshDue().finally(() => {
      this.#ticking = undefined;
    });
    return this.#ticking;
  }

  /** The status SPEC §4 shows for a version. */
  static status(version: EndpointVersion): MaterializationState['status'] | 'none' {
    if (!version.isMaterialized) return 'none';
    return version.materialization?.status ?? 'pending';
  }

  /** The result a run of `version` may be answered from now, or undefined (it goes to the raw data). */
  servable(endpoint: Endpoint, version: EndpointVersion, now = Date.now()): Servable | undefined {
    const state = version.materialization;
    if (!version.isMaterialized || !state?.objectKey || !state.lastMaterializedAt || !state.serving)
      return undefined;
    const at = Date.parse(state.lastMaterializedAt);
    if (now - at > 2 * SYNC_SECONDS[endpoint.syncFrequency] * 1000) return undefined;
    // Computed before data of the project was erased: it may hold what is gone, so it is never served again.
    if (at < this.#deletedAt(endpoint)) return undefined;
    return {
      objectKey: state.objectKey,
      at: state.lastMaterializedAt,
      serving: state.serving as ServingPlan,
    };
  }

  /** When data of the endpoint's project was last deleted (ms since the epoch; 0: never). */
  #deletedAt(endpoint: Endpoint): number {
    const at = this.#deps.catalog.project(endpoint.projectId)?.dataDeletedAt;
    return at ? Date.parse(at) : 0;
  }

  /**
   * A served result is missing or damaged: it is no longer served (runs go to the raw data), the state
   * says why, and a refresh is asked for. A failure to record it is only logged.
   */
  unreadable(endpoint: Endpoint, n: number, objectKey: string, detail: string): void {
    void this.#deps.catalog
      .updateEndpoint(endpoint.projectId, endpoint.name, (current) => {
        const v = current.versions[n - 1];
        if (!v?.isMaterialized || v.materialization?.objectKey !== objectKey) return {};
        const error = `The materialization could not be read (${detail}); it is being refreshed.`;
        const state = { ...pendingState(v), objectKey: null, serving: null, error };
        return { version: { version: n, materialization: state } };
      })
      .then(() => this.tick())
      .catch((err: unknown) =>
        this.#deps.logger.warn({ err }, 'could not record an unreadable materialization'),
      );
  }

  async #refreshDue(): Promise<void> {
    const now = Date.now();
    for (const project of this.#deps.catalog.listProjects()) {
      for (const endpoint of this.#deps.catalog.listEndpoints(project.id)) {
        for (const version of endpoint.versions) {
          if (this.#closed) return;
          if (isDue(endpoint, version, now, this.#deletedAt(endpoint)))
            await this.#refresh(endpoint, version.version);
        }
      }
    }
  }

  /** Moves this process's lease on a refresh under way forward (a failure is logged: the claim may lapse). */
  async #renew(endpoint: Endpoint, n: number): Promise<void> {
    const until = new Date(Date.now() + this.#config.leaseMs).toISOString();
    await this.#deps.catalog
      .updateEndpoint(endpoint.projectId, endpoint.name, (current) => {
        const v = current.versions[n - 1];
        const state = v?.materialization;
        if (!state || state.lease?.owner !== this.#owner) return {};
        return {
          version: { version: n, materialization: { ...state, lease: { owner: this.#owner, until } } },
        };
      })
      .catch((err: unknown) => this.#deps.logger.warn({ err }, 'could not renew a materialization lease'));
  }

  /** Claims, writes and records one refresh of a version; a failure is recorded, never thrown. */
  async #refresh(endpoint: Endpoint, n: number): Promise<void> {
    const { catalog, writer, logger } = this.#deps;
    const startedAt = new Date();
    const claimed = await catalog.updateEndpoint(endpoint.projectId, endpoint.name, (current) => {
      const v = current.versions[n - 1];
      if (!v || !isDue(current, v, startedAt.getTime(), this.#deletedAt(current))) return {};
      const lease = {
        owner: this.#owner,
        until: new Date(startedAt.getTime() + this.#config.leaseMs).toISOString(),
      };
      return { version: { version: n, materialization: { ...stateOf(v), status: 'running', lease } } };
    });
    const version = claimed?.versions[n - 1];
    if (!claimed || version?.materialization?.lease?.owner !== this.#owner) return; // another took it
    const previous = version.materialization.objectKey;
    let outcome: Partial<MaterializationState>;
    const renewal = setInterval(() => void this.#renew(claimed, n), this.#config.leaseMs / 3);
    try {
      const properties = this.#deps.properties?.forProject(claimed.projectId);
      const plan = planMaterialization(version, compileVersion(version, this.#config.database, properties), {
        now: startedAt,
        database: this.#config.database,
        bucket: claimed.materializationBucket,
        properties,
      });
      if ('cannot' in plan) throw new Error(plan.cannot);
      const written = await writer.write(
        plan,
        { projectId: claimed.projectId, endpointId: claimed.id, version: n },
        startedAt,
      );
      outcome = {
        status: 'completed',
        objectKey: written.objectKey,
        lastMaterializedAt: written.at,
        rows: written.rows,
        bytes: written.bytes,
        serving: written.serving,
        error: null,
      };
    } catch (err) {
      logger.warn({ err, endpoint: claimed.name, version: n }, 'materialization refresh failed');
      outcome = { status: 'failed', error: err instanceof Error ? err.message : String(err) };
    } finally {
      clearInterval(renewal);
    }
    const recorded = await catalog.updateEndpoint(claimed.projectId, claimed.name, (current) => {
      const v = current.versions[n - 1];
      if (!v || v.materialization?.lease?.owner !== this.#owner) return {};
      const done: MaterializationState = {
        ...stateOf(v),
        ...outcome,
        lease: null,
        refreshedAt: new Date().toISOString(),
      };
      return { version: { version: n, materialization: done } };
    });
    if (outcome.status !== 'completed' || !recorded) return;
    this.#deps.onChanged?.(claimed.id);
    if (previous && previous !== outcome.objectKey) this.#deps.onReplaced?.(previous);
    await writer.sweep(claimed.projectId, claimed.id, n, outcome.objectKey!);
  }
}

function stateOf(v: EndpointVersion): MaterializationState {
  return (
    v.materialization ?? {
      status: 'pending',
      lastMaterializedAt: null,
      rows: null,
      bytes: null,
      error: null,
      objectKey: null,
      lease: null,
      refreshedAt: null,
      serving: null,
    }
  );
}

/** Whether a version's refresh should start now (see the file comment). */
function isDue(endpoint: Endpoint, v: EndpointVersion, now: number, deletedAt: number): boolean {
  if (!v.isMaterialized || !v.isActive || !endpoint.isActive) return false;
  const state = v.materialization;
  if (!state || state.status === 'pending') return true;
  if (state.status === 'running')
    return !state.lease || Date.parse(state.lease.until) < now || ownerGone(state.lease.owner);
  const ended = state.refreshedAt ? Date.parse(state.refreshedAt) : 0;
  // Data of the project was deleted since the last refresh ended: at once, not at the next sync.
  if (ended < deletedAt) return true;
  return now - ended >= SYNC_SECONDS[endpoint.syncFrequency] * 1000;
}

/**
 * Whether a lease's process is known to be gone: it ran on this machine and no process has its pid now
 * (a `kill -9` mid-refresh, then a restart). Its refresh is taken over at once rather than when the lease
 * lapses. A pid reused since is taken for alive, and the lease then lapses as usual.
 */
function ownerGone(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== hostname() || pid === undefined || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** A pending state for a refresh asked for now, keeping what is served meanwhile. */
export function pendingState(v: EndpointVersion): MaterializationState {
  const state = stateOf(v);
  return state.status === 'running' ? state : { ...state, status: 'pending' };
}
