import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { catalogPlace } from '../roles/catalog.ts';
import { startIngestRole } from '../roles/ingest-role.ts';
import { announce, storePlace } from './announce.ts';
import { runUntilSignal } from './run-until-signal.ts';

/**
 * `weir ingest`: consumes JetStream into the store until SIGTERM or SIGINT. It listens on 8001 unless told
 * otherwise, so it does not share `weir capture`'s default port (uWS lets processes share a port). Its store
 * applies the commit log every 500 ms rather than every second: no capture shares its cores, and the time from
 * a capture's 200 to the row in the table is what this role is judged by.
 */
export async function runIngest(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags, { port: 8001, storeApplyIntervalMs: 500 });
  const logger = createLogger(config.logLevel);
  const ingest = await startIngestRole(config, logger);
  announce(
    'Weir ingest (health, readiness, metrics)',
    ingest.url,
    `${storePlace(config)}${config.catalog === 'nats' ? `, catalog in ${catalogPlace(config)}` : ''}`,
    ingest.catalog.bootstrap,
    config.catalog === 'nats'
      ? 'that of your `weir capture` processes'
      : `that of your \`weir capture --data-dir ${config.dataDir}\` processes`,
  );
  return runUntilSignal(ingest, logger, config);
}
