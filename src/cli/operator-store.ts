import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import { DataDirLock } from '../store/data-dir-lock.ts';
import { embeddedStore, openStore, type OpenedStore } from '../store/open-store.ts';

/**
 * Runs an operator's command (`weir sql`, `weir quarantine`) on the store directly: a data directory's
 * embedded store (the engine allows one process per directory, so it refuses one that a running Weir holds),
 * or the ClickHouse server of WEIR_CLICKHOUSE_URL. Opening applies what the commit log holds, so the command
 * sees every event Weir acknowledged.
 */
export async function withOperatorStore<T>(
  dataDir: string | undefined,
  run: (store: OpenedStore) => Promise<T>,
): Promise<T> {
  const config = loadConfig(process.env, dataDir === undefined ? {} : { 'data-dir': dataDir });
  const lock = embeddedStore(config) ? DataDirLock.acquire(config.dataDir) : undefined;
  const store = await openStore(config, {
    logger: createLogger('warn', process.stderr),
    metrics: new Metrics({ defaultMetrics: false }),
  }).catch((err: unknown) => {
    lock?.release();
    throw err;
  });
  try {
    return await run(store);
  } finally {
    await store.close();
    lock?.release();
  }
}
