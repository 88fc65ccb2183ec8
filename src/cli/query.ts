import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { catalogPlace } from '../roles/catalog.ts';
import { startQueryRole } from '../roles/query-role.ts';
import { announce } from './announce.ts';
import { runUntilSignal } from './run-until-signal.ts';

/**
 * `weir query`: the query, management and endpoint APIs until SIGTERM or SIGINT. It listens on 8002 unless
 * told otherwise (beside capture's 8000 and ingest's 8001), and keeps its catalog in NATS KV.
 */
export async function runQuery(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags, { port: 8002, catalog: 'nats' });
  const logger = createLogger(config.logLevel);
  const query = await startQueryRole(config, logger);
  announce(
    'Weir query (query, management and endpoint APIs)',
    query.url,
    `catalog in ${catalogPlace(config)}`,
    query.catalog.bootstrap,
    'that of your `weir capture` processes',
  );
  return runUntilSignal(query, logger, config);
}
