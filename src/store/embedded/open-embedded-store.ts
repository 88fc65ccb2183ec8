import { join } from 'node:path';
import { READ_KINDS } from '../../core/ports.ts';
import { migrate } from '../migrate.ts';
import { ChdbClient } from './chdb-client.ts';
import { LoggedStore, type LoggedStoreDeps } from './logged-store.ts';

export interface EmbeddedStoreConfig {
  readonly dataDir: string;
  readonly storeFsync: boolean;
  readonly storeMaxPendingMb: number;
  readonly storeApplyIntervalMs: number;
  /** Reader connections (ChdbReadOptions). @default 2 */
  readonly storeReaders?: number;
  /** @default 1 */
  readonly storeReadersPerProject?: number;
  /** @default 4 */
  readonly queryAdhocConcurrency?: number;
}

/**
 * Opens the embedded store of a data directory: chDB in `<dataDir>/chdb`, schema migrated, and the commit log
 * in `<dataDir>/commit-log` applied, so what a previous run committed is in the tables before anything reads.
 * This module loads chDB: only store/open-store.ts imports it, when the embedded store is the one configured.
 */
export async function openEmbeddedStore(
  config: EmbeddedStoreConfig,
  deps: LoggedStoreDeps,
): Promise<LoggedStore> {
  const { metrics } = deps;
  const inner = ChdbClient.open(join(config.dataDir, 'chdb'), {
    onEngineWaiting: (n) => metrics.storeEngineWaiting.set(n),
    reads: {
      readers: config.storeReaders ?? 2,
      readersPerProject: config.storeReadersPerProject ?? 1,
      adhocPerProject: config.queryAdhocConcurrency ?? 4,
      observer: {
        changed: (waiting, running) => {
          for (const kind of READ_KINDS) {
            metrics.storeReadsWaiting.set({ kind }, waiting[kind]);
            metrics.storeReadsRunning.set({ kind }, running[kind]);
          }
        },
        waited: (kind, ms) => metrics.storeReadWait.observe({ kind }, ms / 1000),
        refused: (kind, reason) => metrics.storeReadsRefused.inc({ kind, reason }),
      },
    },
  });
  try {
    await migrate(inner, deps.logger);
    if (config.storeFsync) await partsSynced(inner);
    return await LoggedStore.open(
      inner,
      {
        dir: join(config.dataDir, 'commit-log'),
        fsync: config.storeFsync,
        maxPendingBytes: config.storeMaxPendingMb * 1024 * 1024,
        applyIntervalMs: config.storeApplyIntervalMs,
      },
      deps,
    );
  } catch (err) {
    await inner.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Has the engine fsync every part it writes, inserted or merged, before it counts as written. The commit log
 * drops what it has applied, so an applied block's only copy is then its part; chDB neither syncs parts nor
 * keeps replaced ones (`old_parts_lifetime` 0), so an OS crash or a power cut could otherwise lose events the
 * log no longer holds. Idempotent, run at each open so
 * tables a later migration makes get it too.
 */
async function partsSynced(engine: ChdbClient): Promise<void> {
  const tables = await engine.query<{ name: string }>(
    "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree'",
  );
  for (const { name } of tables)
    await engine.command(
      `ALTER TABLE \`${name}\` MODIFY SETTING fsync_after_insert = 1, fsync_part_directory = 1, ` +
        'min_compressed_bytes_to_fsync_after_merge = 1',
    );
}
