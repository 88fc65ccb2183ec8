import { NatsLink, replicasFor } from '../bus/jetstream/connection.ts';
import { IngestConsumers } from '../bus/jetstream/ingest-consumers.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Deletion, Store } from '../core/ports.ts';
import { freePort } from '../http/server.ts';
import { IngestService } from '../ingest/ingest-service.ts';
import { PERSONS_BUCKET, SharedState } from '../ingest/shared/shared-state.ts';
import { PropertyDefinitionRegistry } from '../ingest/property-definitions.ts';
import { DeletionRunner } from '../lifecycle/deletion-runner.ts';
import { isBackupSource } from '../lifecycle/backup.ts';
import { RetentionSweeper } from '../lifecycle/retention.ts';
import { openObjectStore } from '../objects/open-object-store.ts';
import { DataDirLock } from '../store/data-dir-lock.ts';
import { embeddedStore, openStore, type OpenedStore } from '../store/open-store.ts';
import { openCatalog, type RoleCatalog } from './catalog.ts';
import { ControlSocket } from './control-socket.ts';
import type { Teardown, TeardownState } from './teardown.ts';

/** What a shutdown cut short while ingest still commits leaves with JetStream: nothing lost, the bus has it. */
const UNACKNOWLEDGED = 'uncommitted batches are left unacknowledged on the bus and will be redelivered';

/**
 * The parts of the process that owns a data directory (`weir start`, `weir ingest`): the lock, the catalog,
 * the store, and ingest. The embedded store loads chDB when it is the one configured (store/open-store.ts);
 * `weir capture` never imports this module.
 */

/** A running process that owns a data directory: `weir start` or `weir ingest`. */
export interface Weir {
  readonly port: number;
  readonly url: string;
  readonly catalog: RoleCatalog;
  readonly metrics: Metrics;
  /** The analytical store (for tests and operator tools in the same process). */
  readonly store: Store;
  /** Stops taking work, finishes what is in progress, commits what was accepted, releases the data directory. */
  close(): Promise<void>;
  /** Where `close` is, for the shutdown deadline's last line. */
  shutdownState(): TeardownState;
}

export interface OwnedDataDir {
  readonly catalog: RoleCatalog;
  readonly store: OpenedStore;
}

/**
 * Locks the data directory when one process alone may hold it (chDB allows one process per directory, and
 * the file catalog has one writer), opens the catalog (`catalog.json` there, or the NATS KV bucket) and the
 * store (migrated; the embedded one with what its commit log held from the last run applied). With the server
 * store and the catalog in NATS KV nothing of the directory is owned, and any number of `weir ingest` may
 * run. First it checks that the role's port is free: a first start that failed to listen after making the
 * catalog would have made keys that nobody was shown (they are shown once, and stored hashed).
 */
export async function openDataDir(
  config: Config,
  deps: { logger: Logger; metrics: Metrics },
  teardown: Teardown,
): Promise<OwnedDataDir> {
  await freePort(config.host, config.port);
  if (embeddedStore(config) || config.catalog === 'file') {
    const lock = DataDirLock.acquire(config.dataDir);
    teardown.push(
      'release the data directory',
      () => lock.release(),
      'the lock file names a process that is gone: the next start takes it over',
    );
  }
  const catalog = await openCatalog(config, deps, teardown);
  const store = await openStore(config, deps);
  teardown.push(
    'close the store',
    () => store.close(),
    embeddedStore(config)
      ? 'committed rows stay in the commit log and are applied at the next start'
      : undefined,
  );
  if (embeddedStore(config) && isBackupSource(store)) {
    // Only the data directory's own objects are copied: a bucket's are backed up by the bucket's means.
    const objects = config.s3Bucket === undefined ? openObjectStore(config, config.dataDir) : undefined;
    const control = await ControlSocket.open(config.dataDir, {
      store,
      catalog,
      objects,
      logger: deps.logger,
    });
    teardown.push('close the control socket', async () => {
      await control?.close();
      await objects?.close();
    });
  }
  return { catalog, store };
}

/**
 * How often a process recording property definitions into a store others write too reads them again. Each
 * read is the whole table (at most 100,000 rows) for every ingest process, so not every second as query nodes
 * do; two seconds bound how long two processes disagree on a new property (its type, its events) and how soon
 * a row one write lost is restored, while the type set through the API is kept at each write anyway.
 */
const SHARED_RELOAD_MS = 2000;

/**
 * The property definitions of the store, read from it; recorded by this process's ingest (call before
 * `startIngest`, so that on shutdown ingest commits first and the definitions it recorded are written after).
 * On a store other processes write (the server store), read again and merged every two seconds.
 */
export async function openPropertyDefinitions(
  deps: { store: Store; logger: Logger },
  teardown: Teardown,
): Promise<PropertyDefinitionRegistry> {
  const definitions = new PropertyDefinitionRegistry(
    deps.store.soleWriter ? {} : { reloadMs: SHARED_RELOAD_MS },
    deps,
  );
  await definitions.start();
  teardown.push(
    'store the property definitions',
    () => definitions.close(),
    'property definitions seen since the last write are not stored until events carrying them arrive again',
  );
  return definitions;
}

/**
 * Ingest on the store, its duplicate window warmed; on shutdown it commits everything handed to it. On a store
 * other processes write too (a ClickHouse server), with NATS configured, person and group state is the
 * shared state in NATS KV (docs/persons-across-processes.md): other `weir ingest` processes change the same
 * persons. Closed after ingest has drained.
 */
export async function startIngest(
  config: Config,
  deps: {
    store: Store;
    metrics: Metrics;
    logger: Logger;
    properties: PropertyDefinitionRegistry;
    /** The catalog: events of a project deleted while they were on their way are dropped. */
    catalog?: Pick<RoleCatalog, 'listDeletions'>;
  },
  teardown: Teardown,
): Promise<IngestService> {
  const sharedState =
    !deps.store.soleWriter && config.natsUrl !== undefined
      ? await openSharedState({ ...config, natsUrl: config.natsUrl }, deps, teardown)
      : undefined;
  // Only a project known deleted: a project this process has not heard of yet (a shared catalog's copy a
  // moment behind the capture that took its events) is not one to drop events of.
  const catalog = deps.catalog;
  let seen: readonly Deletion[] | undefined;
  let deleted: ReadonlySet<number> = new Set();
  const projectExists = catalog
    ? (id: number): boolean => {
        const list = catalog.listDeletions();
        if (list !== seen) {
          seen = list;
          deleted = new Set(list.filter((d) => d.kind === 'project').map((d) => d.projectId));
        }
        return !deleted.has(id);
      }
    : undefined;
  const ingest = new IngestService(config, { ...deps, sharedState, projectExists });
  await ingest.start(config.dedupWindow);
  teardown.push(
    'commit what ingest holds',
    () => ingest.drain(),
    config.natsUrl === undefined
      ? 'events not yet committed were not answered 200: their clients send them again'
      : UNACKNOWLEDGED,
  );
  return ingest;
}

async function openSharedState(
  config: Config & { natsUrl: string },
  deps: { metrics: Metrics; logger: Logger },
  teardown: Teardown,
): Promise<SharedState> {
  const link = await NatsLink.open(config.natsUrl, 'persons', deps);
  teardown.push('close the persons connection', () => link.close());
  const state = await SharedState.open(link.nc, { replicas: replicasFor(link.nc, config.natsReplicas) });
  teardown.push('stop watching the persons bucket', () => state.close());
  if (state.bucketWide)
    deps.logger.warn(
      { bucket: PERSONS_BUCKET },
      'this nats-server (before 2.9.21) does not hold a per-record condition in a replicated bucket: every ' +
        'person write is conditional on the whole bucket, which is correct but slow; upgrade nats-server',
    );
  deps.logger.info({ bucket: PERSONS_BUCKET }, 'persons and groups shared through NATS KV');
  return state;
}

/**
 * Consumes every lane of the JetStream bus into ingest; on shutdown, stops pulling and acks what it handled.
 * A batch it could not commit (the store unreachable) or acknowledge (NATS unreachable) is safe on the bus,
 * but the shutdown was not clean: the step fails, saying so, and the process exits non-zero.
 */
export async function consumeBus(
  config: Config & { natsUrl: string },
  deps: { ingest: IngestService; metrics: Metrics; logger: Logger },
  teardown: Teardown,
): Promise<IngestConsumers> {
  const consumers = await IngestConsumers.start(config, { sink: deps.ingest, ...deps });
  teardown.push(
    'stop consuming',
    async () => {
      const left = await consumers.stop();
      const problems: string[] = [];
      if (left.unacknowledged > 0)
        problems.push(
          `${left.unacknowledged} batch(es) ingest could not commit or acknowledge are left unacknowledged ` +
            'on the bus and will be redelivered',
        );
      if (left.unconfirmed)
        problems.push(
          'NATS did not confirm the last acknowledgements in time: those batches may be delivered again, ' +
            'and their events are then dropped as duplicates',
        );
      if (problems.length > 0) throw new Error(problems.join('; '));
    },
    UNACKNOWLEDGED,
  );
  return consumers;
}

/**
 * Runs the deletions the catalog records (erasures, deleted projects) and enforces projects' event retention,
 * in a process that writes the store.
 * Stopped before ingest drains: a deletion under way is taken again by the next start.
 */
export function startDeletions(
  config: Config,
  deps: {
    catalog: RoleCatalog;
    store: Store;
    ingest: IngestService;
    logger: Logger;
    properties: PropertyDefinitionRegistry;
  },
  teardown: Teardown,
): DeletionRunner {
  // A project's materializations are deleted with it: the object store the API's refreshes write to.
  const objects = openObjectStore(config, config.dataDir, { idleTimeoutMs: config.s3TimeoutSeconds * 1000 });
  teardown.push("close the deletions' object store", () => objects.close());
  const runner = new DeletionRunner({ exclusive: config.catalog === 'file' }, { ...deps, objects });
  runner.start();
  const retention = new RetentionSweeper({ intervalMs: config.retentionIntervalSeconds * 1000 }, deps);
  retention.start();
  teardown.push('stop enforcing retention', () => retention.close());
  teardown.push(
    'stop running deletions',
    () => runner.close(),
    'a deletion under way is taken again, where it stopped, when its lease lapses',
  );
  return runner;
}
