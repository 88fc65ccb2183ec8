import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { startIngestRole } from '../roles/ingest-role.ts';
import { announce } from './announce.ts';
import { runUntilSignal } from './run-until-signal.ts';

/**
 * `weir ingest`: consumes JetStream into the store until SIGTERM or SIGINT. It listens on 8001 unless told
 * otherwise, so it does not share `weir capture`'s default port (uWS lets processes share a port).
 */
export async function runIngest(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags, { port: 8001 });
  const logger = createLogger(config.logLevel);
  const ingest = await startIngestRole(config, logger);
  announce(
    'Weir ingest (health, readiness, metrics)',
    ingest.url,
    config.dataDir,
    ingest.catalog.bootstrap,
    `that of your \`weir capture --data-dir ${config.dataDir}\` processes`,
  );
  return runUntilSignal(ingest, logger);
}
