import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { startCaptureRole } from '../roles/capture-role.ts';
import { catalogPlace } from '../roles/catalog.ts';
import { runUntilSignal } from './run-until-signal.ts';

/** `weir capture`: HTTP capture publishing to JetStream until SIGTERM or SIGINT. Loads no store. */
export async function runCapture(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags);
  const logger = createLogger(config.logLevel);
  const capture = await startCaptureRole(config, logger);
  process.stderr.write(
    `Weir capture is listening on ${capture.url} (publishing to ${config.natsUrl}; keys from ${catalogPlace(config)})\n`,
  );
  return runUntilSignal(capture, logger, config);
}
