import type { TemplatedApp } from 'uWebSockets.js';
import { registerEndpointRoutes } from '../api/endpoint-routes.ts';
import { registerEndpointRunRoutes } from '../api/endpoint-run-routes.ts';
import { registerManagementRoutes } from '../api/management-routes.ts';
import { registerQueryRoutes } from '../api/query-routes.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, TableReader } from '../core/ports.ts';
import type { InFlight } from '../http/in-flight.ts';
import { DEFAULT_LIMITS, type QueryLimits } from '../query/clickhouse/printer.ts';
import { EndpointRunner } from '../query/endpoints/endpoint-runner.ts';

/**
 * The API of the process that owns the store and the catalog (`weir start`, `weir ingest`): management, the
 * query API, and endpoints (CRUD, runs, OpenAPI), with the run limits of the config.
 */
export function mountApi(
  app: TemplatedApp,
  config: Config,
  deps: {
    readonly catalog: Catalog;
    readonly store: TableReader;
    readonly inFlight: InFlight;
    readonly logger: Logger;
  },
): { runner: EndpointRunner } {
  const limits: QueryLimits = { ...DEFAULT_LIMITS, maxExecutionSeconds: config.queryTimeoutSeconds };
  const runner = new EndpointRunner(
    {
      limits,
      maxRunsPerProject: config.endpointRunConcurrency,
      cacheMaxBytes: config.endpointCacheMb * 1024 * 1024,
    },
    { store: deps.store },
  );
  registerManagementRoutes(app, deps);
  registerQueryRoutes(app, { ...deps, limits });
  registerEndpointRoutes(app, { ...deps, onEndpointChanged: (id) => runner.invalidate(id) });
  registerEndpointRunRoutes(app, { ...deps, runner, maxLimit: limits.maxResultRows });
  return { runner };
}
