import type { Logger } from '../core/logger.ts';

/**
 * Keeps a started role running until SIGTERM or SIGINT, then closes it (drain, commit, release) and exits
 * 0, or 1 if closing failed. Returns -1: the process stays up.
 */
export function runUntilSignal(role: { close(): Promise<void> }, logger: Logger): number {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    role.close().then(
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
