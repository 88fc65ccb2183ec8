import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { ParquetExporter, QuarantineStore, Store, TableReader } from '../core/ports.ts';

/** The store a process writes and reads: the port, with the query API's reads of it and its quarantine. */
export type OpenedStore = Store & TableReader & ParquetExporter & QuarantineStore;

export interface OpenStoreDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * Opens the store the config names, schema migrated: the server store when `WEIR_CLICKHOUSE_URL` is set
 * (ClickHouse over HTTP), else the embedded store of the data directory (chDB under its commit log, what a
 * previous run committed applied first). Each adapter is loaded only when it is the one opened, so a process
 * on a server store never loads chDB. Above this, nothing knows which one runs.
 *
 * `migrate: false` (a `weir query` node) opens the server store without touching its schema; the embedded
 * store is always migrated (the process that opens it owns it).
 */
export async function openStore(
  config: Config,
  deps: OpenStoreDeps,
  options: { readonly migrate?: boolean } = {},
): Promise<OpenedStore> {
  if (config.clickhouseUrl !== undefined) {
    const { ServerStore } = await import('./server/server-store.ts');
    return ServerStore.open(
      {
        url: config.clickhouseUrl,
        user: config.clickhouseUser,
        password: config.clickhousePassword,
        database: config.clickhouseDatabase,
        cluster: config.clickhouseCluster,
        maxPendingBytes: config.storeMaxPendingMb * 1024 * 1024,
        // A materialization refresh may run ten times a run's limit (roles/api.ts); the engine enforces
        // both, and this only bounds a server that stopped answering.
        requestTimeoutMs: config.queryTimeoutSeconds * 10 * 1000 + 30_000,
        adhocPerProject: config.queryAdhocConcurrency,
      },
      deps,
      options,
    );
  }
  const { openEmbeddedStore } = await import('./embedded/open-embedded-store.ts');
  return openEmbeddedStore(config, deps);
}

/** Whether the config's store is the embedded one, whose data directory one process alone may hold. */
export function embeddedStore(config: Config): boolean {
  return config.clickhouseUrl === undefined;
}
