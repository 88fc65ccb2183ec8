import { randomUUID } from 'node:crypto';
import type { Logger } from '../core/logger.ts';
import type { ObjectStore } from '../core/object-store.ts';
import type { Catalog, Deletion, DeletionCounts, Store } from '../core/ports.ts';
import { eraseTargets, findTargets, NO_COUNTS, type PersonForgetter, type Targets } from './erasure.ts';
import { eraseProject } from './project-erasure.ts';

export type { PersonForgetter } from './erasure.ts';

export interface DeletionRunnerConfig {
  /** How often deletions are looked for (a deletion made in this process is started at once). @default 1000 */
  readonly pollMs?: number;
  /** How long a claimed deletion stays this process's without a renewal. @default 60000 */
  readonly leaseMs?: number;
  /**
   * Only this process runs deletions (the file catalog: one process owns the data directory), so a lease of
   * any other owner is a previous run's, gone: it is taken at once rather than waited out.
   */
  readonly exclusive: boolean;
}

export interface DeletionRunnerDeps {
  readonly catalog: Catalog;
  readonly store: Store;
  readonly ingest?: PersonForgetter;
  /** Where the project's materializations are (a project deletion removes them). */
  readonly objects?: ObjectStore;
  /** This process's property definitions, which a deleted project's are dropped from. */
  readonly properties?: { forgetProject(projectId: number): void };
  readonly logger: Logger;
}

/** The longest a failed deletion waits before it is tried again. */
const MAX_BACKOFF_MS = 60_000;

/**
 * Runs the deletions the catalog records (SPEC §3), wherever the store is written: `weir start`, and
 * `weir ingest`. One at a time, oldest first; a deletion is claimed with a lease (a compare-and-set, so of
 * several processes one runs it), renewed while it runs. A run that fails is retried with backoff, and one
 * that a crash cut short is taken again when its lease lapses: a deletion accepted always completes.
 */
export class DeletionRunner {
  readonly #config: Required<DeletionRunnerConfig>;
  readonly #deps: DeletionRunnerDeps;
  readonly #owner = `${process.pid}-${randomUUID()}`;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  /** When each failed deletion may be tried again. */
  readonly #retryAt = new Map<string, number>();

  constructor(config: DeletionRunnerConfig, deps: DeletionRunnerDeps) {
    this.#config = { pollMs: 1000, leaseMs: 60_000, ...config };
    this.#deps = deps;
  }

  start(): void {
    this.wake();
  }

  /** Looks for work now (a deletion was just accepted). */
  wake(): void {
    if (this.#closed || this.#running) return;
    clearTimeout(this.#timer);
    this.#running = this.#runAll().finally(() => {
      this.#running = undefined;
      if (!this.#closed) this.#timer = setTimeout(() => this.wake(), this.#config.pollMs);
    });
  }

  /** Stops; a deletion under way is left to its lease (the next start takes it again). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  async #runAll(): Promise<void> {
    for (const d of this.#deps.catalog.listDeletions()) {
      if (this.#closed) return;
      if (d.status === 'done' || (this.#retryAt.get(d.id) ?? 0) > Date.now()) continue;
      const claimed = await this.#claim(d.id);
      if (claimed) await this.#run(claimed);
    }
  }

  #free(d: Deletion): boolean {
    if (d.status === 'done') return false;
    if (d.lease === null || d.lease.owner === this.#owner || this.#config.exclusive) return true;
    return Date.parse(d.lease.until) < Date.now();
  }

  #claim(id: string): Promise<Deletion | undefined> {
    const now = new Date();
    let took = false;
    return this.#deps.catalog
      .updateDeletion(id, (d) => {
        took = false;
        if (!this.#free(d)) return undefined;
        took = true;
        return {
          status: 'running',
          startedAt: d.startedAt ?? now.toISOString(),
          attempts: d.attempts + 1,
          lease: this.#lease(),
        };
      })
      .then((d) => (took ? d : undefined));
  }

  #lease(): Deletion['lease'] {
    return { owner: this.#owner, until: new Date(Date.now() + this.#config.leaseMs).toISOString() };
  }

  async #run(deletion: Deletion): Promise<void> {
    const { logger } = this.#deps;
    const renew = setInterval(() => {
      void this.#deps.catalog
        .updateDeletion(deletion.id, (d) =>
          d.lease?.owner === this.#owner ? { lease: this.#lease() } : undefined,
        )
        .catch(() => undefined);
    }, this.#config.leaseMs / 3);
    try {
      const counts = await this.#erase(deletion);
      await this.#finish(deletion, counts);
      this.#retryAt.delete(deletion.id);
      logger.info(
        { deletion: deletion.id, project: deletion.projectId, kind: deletion.kind, counts },
        'deletion done',
      );
    } catch (err) {
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(deletion.attempts, 6));
      this.#retryAt.set(deletion.id, Date.now() + wait);
      logger.warn(
        { deletion: deletion.id, project: deletion.projectId, err, retryInMs: wait },
        'deletion failed; it is tried again',
      );
      await this.#deps.catalog
        .updateDeletion(deletion.id, (d) =>
          d.lease?.owner === this.#owner
            ? { lastError: String((err as Error)?.message ?? err), lease: null }
            : undefined,
        )
        .catch(() => undefined);
    } finally {
      clearInterval(renew);
    }
  }

  async #erase(deletion: Deletion): Promise<DeletionCounts> {
    const { store, catalog } = this.#deps;
    if (deletion.kind === 'project') {
      return eraseProject(deletion, {
        ...this.#deps,
        progress: async (counts) => {
          await catalog.updateDeletion(deletion.id, () => ({ counts }));
        },
      });
    }
    let current = deletion;
    let targets: Targets | null = current.targets;
    if (targets === null) {
      targets = await findTargets(store, current);
      const found = targets;
      current = (await catalog.updateDeletion(current.id, () => ({ targets: found }))) ?? current;
    }
    await this.#deps.ingest?.forgetPersons(current.projectId, targets.personIds, targets.distinctIds);
    return eraseTargets(store, current, targets, async (counts) => {
      await catalog.updateDeletion(current.id, () => ({ counts }));
    });
  }

  /**
   * Done: the counts kept, the ids it erased dropped from its record, and the project's data marked changed,
   * so answers and materializations made before are not served again.
   */
  async #finish(deletion: Deletion, counts: DeletionCounts): Promise<void> {
    const at = new Date().toISOString();
    if (deletion.kind === 'persons')
      await this.#deps.catalog.updateProject(deletion.projectId, { dataDeletedAt: at });
    await this.#deps.catalog.updateDeletion(deletion.id, () => ({
      status: 'done',
      finishedAt: at,
      counts: { ...NO_COUNTS, ...counts },
      lease: null,
      lastError: null,
      targets: null,
      distinctIds: [],
    }));
  }
}
