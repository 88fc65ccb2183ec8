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
