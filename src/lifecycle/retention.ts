import type { Logger } from '../core/logger.ts';
import type { Catalog, Store } from '../core/ports.ts';
import { chTime } from '../store/ch-time.ts';
import { countAndDelete } from './erasure.ts';

export interface RetentionConfig {
  /** How often projects' retention is enforced (WEIR_RETENTION_INTERVAL_SECONDS). */
  readonly intervalMs: number;
  /** The first sweep after start, once the process has settled. @default a minute, or the interval if shorter */
  readonly firstMs?: number;
}

export interface RetentionDeps {
  readonly catalog: Catalog;
  readonly store: Store;
  readonly logger: Logger;
}

/** A project's rows older than its retention, by table: the time column each is kept by. */
const AGED: readonly { table: string; time: string }[] = [
  { table: 'events', time: 'timestamp' },
  { table: 'ingestion_warnings', time: 'timestamp' },
  { table: 'quarantine', time: 'quarantined_at' },
];

/**
 * Event retention (SPEC §3 `event_retention_days`, docs/operations.md "Retention"): every interval, each
 * project that sets one loses its events whose `timestamp` is older than that many days, with its ingestion
 * warnings and rows set aside of that age. ClickHouse's TTL cannot say "per project, as the catalog says
 * now", so these are scheduled deletes; a project's answers and materializations then follow as after an
 * erasure (`dataDeletedAt`).
 */
export class RetentionSweeper {
  readonly #config: RetentionConfig;
  readonly #deps: RetentionDeps;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;
  #closed = false;

  constructor(config: RetentionConfig, deps: RetentionDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  start(): void {
    this.#schedule(this.#config.firstMs ?? Math.min(60_000, this.#config.intervalMs));
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#sweeping;
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#sweeping = this.sweep()
        .catch((err: unknown) =>
          this.#deps.logger.warn({ err }, 'retention sweep failed; tried again next time'),
        )
        .finally(() => this.#schedule(this.#config.intervalMs));
    }, ms);
    this.#timer.unref();
  }

  /** One sweep of every project, at `now`: the rows deleted, by project and table. */
  async sweep(now = Date.now()): Promise<Map<number, Record<string, number>>> {
    const done = new Map<number, Record<string, number>>();
    const purge = new Set<string>();
    for (const project of this.#deps.catalog.listProjects()) {
      const days = project.eventRetentionDays;
      if (days === null || this.#closed) continue;
      const cutoff = chTime(now - days * 86_400_000);
      const deleted: Record<string, number> = {};
      for (const { table, time } of AGED) {
        const where = `project_id = {project:UInt64} AND ${time} < {cutoff:DateTime64(6, 'UTC')}`;
        const params = { project: project.id, cutoff };
        const n = await countAndDelete(this.#deps.store, table, where, params);
        if (n > 0) deleted[table] = n;
        if (n > 0) purge.add(table);
      }
      if (Object.keys(deleted).length === 0) continue;
      done.set(project.id, deleted);
      await this.#deps.catalog.updateProject(project.id, { dataDeletedAt: new Date().toISOString() });
      this.#deps.logger.info(
        { project: project.id, days, deleted },
        'retention: rows older than the project keeps deleted',
      );
    }
    // Merges do not reclaim expired rows: they sit in the large old part, which the merge selector rarely
    // merges again, and disk grew without bound. Once a sweep, after every project.
    for (const table of purge) await this.#deps.store.purgeDeleted(table);
    return done;
  }
}
