import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { startWeir } from '../main.ts';
import { announce, storePlace } from './announce.ts';
import { runUntilSignal } from './run-until-signal.ts';

/**
 * `weir start`: runs until SIGTERM or SIGINT, then drains and exits (run-until-signal.ts says with which
 * code). Returns -1: the process stays up.
 */
export async function runStart(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags);
  const logger = createLogger(config.logLevel);
  const weir = await startWeir(config, logger);
  announce('Weir', weir.url, storePlace(config), weir.catalog.bootstrap);
  return runUntilSignal(weir, logger, config);
}
