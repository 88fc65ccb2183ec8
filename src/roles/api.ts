import type { HttpApp } from '../http/transport.ts';
import { registerEndpointRoutes } from '../api/endpoint-routes.ts';
import { registerEndpointRunRoutes } from '../api/endpoint-run-routes.ts';
import { registerManagementRoutes } from '../api/management-routes.ts';
import { registerPersonRoutes } from '../api/person-routes.ts';
import { registerQuarantineRoutes } from '../api/quarantine-routes.ts';
import { registerQueryRoutes } from '../api/query-routes.ts';
import { registerConsoleRoutes } from '../console/console-routes.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Catalog, Endpoint, ParquetExporter, QuarantineStore, TableReader } from '../core/ports.ts';
import { endpointEtag } from '../api/endpoint-etag.ts';
import type { PropertyCatalog } from '../core/property-catalog.ts';
import type { PropertyDefinitions } from '../core/property-types.ts';
import { registerPropertyDefinitionRoutes } from '../api/property-definition-routes.ts';
import type { InFlight } from '../http/in-flight.ts';
import { DEFAULT_LIMITS, type QueryLimits } from '../query/clickhouse/printer.ts';
import { EndpointRunner } from '../query/endpoints/endpoint-runner.ts';
import { Materializations } from '../query/materialize/materializations.ts';
import { QueryPool } from '../query/materialize/pool/query-pool.ts';
import { MaterializationWriter } from '../query/materialize/writer.ts';
import { openObjectStore } from '../objects/open-object-store.ts';
import { join } from 'node:path';
import type { Teardown } from './teardown.ts';

/**
 * The API of every process that serves it (`weir start`, `weir ingest`, `weir query`): management, the query
 * API, and endpoints (CRUD, runs, OpenAPI), with the run limits of the config.
 */
export function mountApi(
  app: HttpApp,
  config: Config,
  deps: {
    readonly catalog: Catalog & {
      onEndpointChange?(listener: (endpointId: string, endpoint: Endpoint | undefined) => void): void;
    };
    readonly store: TableReader & ParquetExporter;
    /**
     * The rows the store set aside, where this process opens the store itself (a query node reading an
     * embedded store through its owner has none: the owner's API serves them).
     */
    readonly quarantine?: QuarantineStore;
    readonly inFlight: InFlight;
    readonly logger: Logger;
    readonly metrics: Metrics;
    /** The property types ingest records (the query path types properties by them), and their API. */
    readonly propertyDefinitions: PropertyDefinitions & PropertyCatalog;
    /** This process runs deletions: told of each one accepted, to start it at once. */
    readonly onDeletion?: () => void;
  },
  teardown: Teardown,
): { runner: EndpointRunner; materializations: Materializations } {
  const limits: QueryLimits = { ...DEFAULT_LIMITS, maxExecutionSeconds: config.queryTimeoutSeconds };
  // The database queries name their tables in: the embedded engine's is `default`, and so is a server's
  // unless WEIR_CLICKHOUSE_DATABASE says otherwise.
  const database = config.clickhouseDatabase;
  // A shared catalog names objects every node must read: only a shared object store (S3) serves them. A
  // node without one neither refreshes nor serves materializations; its runs go to the raw data.
  const materializing = config.catalog === 'file' || config.s3Bucket !== undefined;
  if (!materializing)
    deps.logger.warn(
      'materializations are off on this node: with WEIR_CATALOG=nats they need WEIR_S3_BUCKET; runs go to the raw data',
    );
  // Materializations (SPEC §4): results in object storage, served from memory by the query actor pool.
  const objects = openObjectStore(config, config.dataDir, { idleTimeoutMs: config.s3TimeoutSeconds * 1000 });
  teardown.push('close the object store', () => objects.close());
  const pool = new QueryPool(
    { threads: config.queryThreads, memoryBytes: config.materializedMemoryMb * 1024 * 1024 },
    { objects, metrics: deps.metrics, logger: deps.logger },
  );
  teardown.push('stop the query pool', () => pool.close());
  const writer = new MaterializationWriter(
    {
      tmpDir: join(config.dataDir, 'tmp'),
      // A refresh reads the whole range and its result is stored, not sent: ten times a run's time.
      limits: { ...limits, maxExecutionSeconds: config.queryTimeoutSeconds * 10 },
    },
    { store: deps.store, objects, logger: deps.logger },
  );
  const changed: { invalidate: (id: string) => void } = { invalidate: () => undefined };
  const materializations = new Materializations(
    { database },
    {
      catalog: deps.catalog,
      writer,
      logger: deps.logger,
      onReplaced: (key) => pool.forget(key),
      onChanged: (id) => changed.invalidate(id),
      properties: deps.propertyDefinitions,
    },
  );
  const runner = new EndpointRunner(
    {
      limits,
      database,
      maxRunsPerProject: config.endpointRunConcurrency,
      cacheMaxBytes: config.endpointCacheMb * 1024 * 1024,
    },
    {
      store: deps.store,
      materialized: {
        servable: (endpoint, version) =>
          materializing ? materializations.servable(endpoint, version) : undefined,
        run: (request) => pool.run(request),
        unreadable: (endpoint, version, key, detail) =>
          materializations.unreadable(endpoint, version, key, detail),
      },
      logger: deps.logger,
      properties: deps.propertyDefinitions,
      dataDeletedAt: (id) => {
        const at = deps.catalog.project(id)?.dataDeletedAt;
        return at ? Date.parse(at) : 0;
      },
    },
  );
  changed.invalidate = (id) => runner.invalidate(id);
  if (materializing) materializations.start();
  teardown.push(
    'stop refreshing materializations',
    () => materializations.close(),
    'a refresh under way is left unfinished: its lease lapses and the version is refreshed again',
  );
  const onEndpointChanged = (id: string): void => runner.invalidate(id);
  // Another process's change of an endpoint (a shared catalog) drops what this one cached of it too, when it
  // changes what a run answers: its definition or the results served. A refresh's lease, renewed every 20 s
  // while it runs, does not.
  const answering = new Map<string, string>();
  deps.catalog.onEndpointChange?.((id, endpoint) => {
    const now = endpoint === undefined ? undefined : answeredBy(endpoint);
    if (now !== undefined && answering.get(id) === now) return;
    if (now === undefined) answering.delete(id);
    else answering.set(id, now);
    runner.invalidate(id);
  });
  registerManagementRoutes(app, { ...deps, defaultEventRetentionDays: config.eventRetentionDays });
  registerPropertyDefinitionRoutes(app, deps);
  registerPersonRoutes(app, { ...deps, database, onDeletion: deps.onDeletion });
  if (deps.quarantine) registerQuarantineRoutes(app, { ...deps, quarantine: deps.quarantine });
  registerQueryRoutes(app, { ...deps, limits, database, properties: deps.propertyDefinitions });
  registerEndpointRoutes(app, { ...deps, onEndpointChanged, materializations });
  registerEndpointRunRoutes(app, { ...deps, runner, maxLimit: limits.maxResultRows });
  registerConsoleRoutes(app, deps);
  return { runner, materializations };
}

/** What an endpoint's runs answer from: its definition, and each version's served result. */
function answeredBy(endpoint: Endpoint): string {
  let served = '';
  for (const v of endpoint.versions) served += `\0${v.materialization?.objectKey ?? ''}`;
  return endpointEtag(endpoint) + served;
}
