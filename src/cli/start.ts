import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { startWeir } from '../main.ts';

/** `weir start`: runs until SIGTERM or SIGINT, then drains and exits 0. Returns -1: the process stays up. */
export async function runStart(flags: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(process.env, flags);
  const logger = createLogger(config.logLevel);
  const weir = await startWeir(config, logger);

  const boot = weir.catalog.bootstrap;
  if (boot) {
    const lines = [
      'Weir created project 1 on this first start. Keep these; they are shown only now.',
      `  capture URL:          ${weir.url}   (point a PostHog SDK's host here)`,
      `  project API key:      ${boot.projectKeyFromEnv ? '(from WEIR_BOOTSTRAP_PROJECT_API_KEY)' : boot.project.apiToken}`,
      `  personal API key:     ${boot.personalApiKey ?? '(from WEIR_BOOTSTRAP_PERSONAL_API_KEY)'}`,
    ];
    process.stderr.write(`\n${lines.join('\n')}\n\n`);
  } else {
    process.stderr.write(`Weir is listening on ${weir.url} (data in ${config.dataDir})\n`);
  }

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    weir.close().then(
      () => {
        logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return -1;
}
