import type { Logger } from '../../../core/logger.ts';
import type { Metrics } from '../../../core/metrics.ts';
import type { ObjectStore } from '../../../core/object-store.ts';
import { ActorSupervisor } from './actor-supervisor.ts';
import type { ActorStats, RunAnswer, RunRequest } from './protocol.ts';

export interface QueryPoolConfig {
  /** Actor threads (WEIR_QUERY_THREADS): cores − 1, at least 1. */
  readonly threads: number;
  /** Bytes of Arrow tables all actors hold together (WEIR_MATERIALIZED_MEMORY_MB); each holds its share. */
  readonly memoryBytes: number;
  /**
   * A module URL exporting `executeServing` in place of the rewrite's, for tests that need an executor of
   * their own (one that crashes its thread, say). @default the rewrite's (src/query/materialize/execute.ts)
   */
  readonly executorModule?: string;
}

export interface QueryPoolDeps {
  readonly objects: ObjectStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * The query actor pool: materialized runs answered from Arrow tables held in worker threads, so a run never
 * waits for the engine and the main thread only routes messages. Each table belongs to one actor (by a hash
 * of its key): the actor reads it from the ObjectStore on its first run, keeps it while it fits in the
 * actor's share of the memory (least recently used out), and answers every run over it. An actor thread
 * that dies is started again by its supervisor, with its runs (ActorSupervisor).
 */
export class QueryPool {
  readonly #actors: ActorSupervisor[];
  readonly #metrics: Metrics;
  /** Each actor's latest held tables and bytes, summed into the gauges. */
  readonly #held: { tables: number; bytes: number }[];

  constructor(config: QueryPoolConfig, deps: QueryPoolDeps) {
    if (!Number.isInteger(config.threads) || config.threads < 1)
      throw new RangeError(`the query pool needs at least one thread, got ${config.threads}`);
    if (!(config.memoryBytes >= 0)) throw new RangeError(`invalid memoryBytes ${config.memoryBytes}`);
    this.#metrics = deps.metrics;
    this.#held = Array.from({ length: config.threads }, () => ({ tables: 0, bytes: 0 }));
    const share = Math.floor(config.memoryBytes / config.threads);
    this.#actors = this.#held.map(
      (_, index) =>
        new ActorSupervisor(
          { index, memoryBytes: share, executorModule: config.executorModule },
          {
            objects: deps.objects,
            logger: deps.logger,
            onStats: (stats) => this.#onStats(index, stats),
            onRestart: (reason) => deps.metrics.queryActorRestarts.inc({ reason }),
          },
        ),
    );
  }

  /**
   * Answers a run from its table, loading the table first if its actor does not hold it. Rejects with the
   * executor's AppError (a bad variable, say), a MaterializedTableError when the table cannot be had
   * (missing, unreadable, store unavailable), or AppError `unavailable` when its actor died twice with it.
   */
  async run(request: RunRequest): Promise<RunAnswer> {
    const started = performance.now();
    let result = 'error';
    try {
      const answer = await this.#actorOf(request.tableKey).run(request);
      result = 'ok';
      return answer;
    } finally {
      this.#metrics.materializedRunDuration.observe({ result }, (performance.now() - started) / 1000);
    }
  }

  /** Drops the table from memory (a newer materialization replaced it); a later run reads it again. */
  forget(tableKey: string): void {
    this.#actorOf(tableKey).forget(tableKey);
  }

  /** Ends the actor threads; runs not answered yet are answered 503. */
  async close(): Promise<void> {
    await Promise.all(this.#actors.map((a) => a.close()));
  }

  #actorOf(tableKey: string): ActorSupervisor {
    return this.#actors[fnv1a(tableKey) % this.#actors.length]!;
  }

  #onStats(index: number, stats: ActorStats | undefined): void {
    this.#held[index] = { tables: stats?.tables ?? 0, bytes: stats?.bytes ?? 0 };
    this.#metrics.materializedTables.set(this.#held.reduce((n, h) => n + h.tables, 0));
    this.#metrics.materializedBytes.set(this.#held.reduce((n, h) => n + h.bytes, 0));
    if (!stats) return;
    if (stats.loads > 0) this.#metrics.materializedLoads.inc({ result: 'ok' }, stats.loads);
    if (stats.loadFailures > 0) this.#metrics.materializedLoads.inc({ result: 'failed' }, stats.loadFailures);
    if (stats.evictions > 0) this.#metrics.materializedEvictions.inc(stats.evictions);
    for (const seconds of stats.loadSeconds) this.#metrics.materializedLoadDuration.observe(seconds);
  }
}

/** FNV-1a over the key's UTF-16 units: stable across processes, so a key's actor does not move on restart. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
