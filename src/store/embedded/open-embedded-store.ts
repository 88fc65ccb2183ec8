import { join } from 'node:path';
import { migrate } from '../migrate.ts';
import { ChdbClient } from './chdb-client.ts';
import { LoggedStore, type LoggedStoreDeps } from './logged-store.ts';

export interface EmbeddedStoreConfig {
  readonly dataDir: string;
  readonly storeFsync: boolean;
  readonly storeMaxPendingMb: number;
  readonly storeApplyIntervalMs: number;
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
  const inner = ChdbClient.open(join(config.dataDir, 'chdb'), {
    onEngineWaiting: (n) => deps.metrics.storeEngineWaiting.set(n),
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
