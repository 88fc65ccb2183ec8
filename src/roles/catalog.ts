import { NatsLink, replicasFor } from '../bus/jetstream/connection.ts';
import { FileCatalog, type Bootstrap } from '../catalog/file-catalog.ts';
import { KvCatalog } from '../catalog/kv-catalog.ts';
import { ReadOnlyFileCatalog } from '../catalog/read-only-file-catalog.ts';
import type { CatalogSnapshot } from '../catalog/catalog-state.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Catalog, Endpoint, Project, ProjectKeys } from '../core/ports.ts';
import type { Teardown } from './teardown.ts';

/**
 * The catalog as the roles use it, whichever holds it (`WEIR_CATALOG`): `catalog.json` in the data directory
 * (the embedded default, one owner) or the NATS KV bucket every role on any machine shares.
 */
export interface RoleCatalog extends Catalog {
  /** What a first start made and must show once (project 1, its keys); undefined on every later start. */
  readonly bootstrap: Bootstrap | undefined;
  /** Calls `listener` with every project after each change (capture threads take the project keys so). */
  onChange(listener: (projects: readonly Project[]) => void): void;
  /** Calls `listener` with an endpoint's id and new state after any change of it (shared catalogs only). */
  onEndpointChange?(listener: (endpointId: string, endpoint: Endpoint | undefined) => void): void;
  /** Every record as it is now (a backup's copy of the catalog). */
  snapshot(): CatalogSnapshot;
  /** False while a shared catalog's copy cannot follow its store (NATS away); a file is always followed. */
  readonly following?: boolean;
}

/** Where the KV catalog is, for messages: `nats KV bucket weir_catalog`. */
export function catalogPlace(config: Config): string {
  return config.catalog === 'nats' ? `NATS KV bucket ${config.catalogBucket}` : config.dataDir;
}

/**
 * Opens the catalog a process that changes it uses (`weir start`, `weir ingest`, `weir query`), closed by
 * the teardown. `bootstrap`: whether an empty catalog gets project 1 and its keys (the caller shows them).
 */
export async function openCatalog(
  config: Config,
  deps: { metrics: Metrics; logger: Logger },
  teardown: Teardown,
): Promise<RoleCatalog> {
  if (config.catalog === 'file') {
    const catalog = await FileCatalog.open(config);
    teardown.push('close the catalog', () => catalog.close());
    return catalog;
  }
  return openKvCatalog(config, deps, teardown, true);
}

/**
 * The project keys `weir capture` authenticates with: the owner's `catalog.json`, read-only (same machine),
 * or the KV bucket (any machine). Capture never makes project 1: on an empty bucket it knows no project until
 * a query or ingest process has made one.
 */
export async function openProjectKeys(
  config: Config,
  deps: { metrics: Metrics; logger: Logger },
  teardown: Teardown,
): Promise<{ keys: ProjectKeys; isReady: () => boolean }> {
  if (config.catalog === 'file') {
    const catalog = await ReadOnlyFileCatalog.open({ dataDir: config.dataDir }, deps.logger);
    teardown.push('stop reading the catalog', () => catalog.close());
    return { keys: catalog, isReady: () => catalog.loaded };
  }
  const catalog = await openKvCatalog(config, deps, teardown, false);
  return { keys: catalog, isReady: () => catalog.following };
}

async function openKvCatalog(
  config: Config,
  deps: { metrics: Metrics; logger: Logger },
  teardown: Teardown,
  bootstrap: boolean,
): Promise<KvCatalog> {
  if (config.natsUrl === undefined)
    throw new ConfigError('WEIR_CATALOG=nats keeps the catalog in NATS KV: set WEIR_NATS_URL or --nats-url');
  const link = await NatsLink.open(config.natsUrl, 'catalog', deps);
  teardown.push('close the catalog connection', () => link.close());
  const catalog = await KvCatalog.open(link.nc, {
    bucket: config.catalogBucket,
    replicas: replicasFor(link.nc, config.natsReplicas),
    replicasConfigured: config.natsReplicas !== undefined,
    bootstrap,
    connected: () => link.connected,
    bootstrapProjectApiKey: config.bootstrapProjectApiKey,
    bootstrapPersonalApiKey: config.bootstrapPersonalApiKey,
    eventRetentionDays: config.eventRetentionDays,
  });
  teardown.push('close the catalog', () => catalog.close());
  deps.logger.info({ bucket: config.catalogBucket }, 'catalog in NATS KV');
  return catalog;
}
