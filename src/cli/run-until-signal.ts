import type { Config } from '../config/config.ts';
import { endLog, type Logger } from '../core/logger.ts';
import type { TeardownState } from '../roles/teardown.ts';

/**
 * Exit codes of a role's shutdown (docs/operations.md), apart from the CLI's own (1: failed to start, 2: a
 * usage or configuration error): a supervisor can tell a clean stop from one that left work behind.
 */
export const EXIT_CLEAN = 0;
/** A step of the shutdown failed (its line says what it left: a batch not committed stays on the bus). */
export const EXIT_CLOSE_FAILED = 1;
/** The shutdown deadline passed, or a second signal came, before the shutdown finished. */
export const EXIT_CUT_SHORT = 3;

export interface SignalledRole {
  close(): Promise<void>;
  shutdownState(): TeardownState;
}

/**
 * Keeps a started role running until SIGTERM or SIGINT, then closes it (drain, commit, release) and exits
 * 0, or 1 if closing failed. Closing waits on other servers (ClickHouse, NATS), which may never answer: past
 * `shutdownDeadlineSeconds`, or at a second signal, the process exits 3 at once, with one line naming the
 * step it cut short and what that leaves. It exits with `process.exit`, so nothing still waiting keeps it up.
 * Returns -1: the process stays up.
 */
export function runUntilSignal(
  role: SignalledRole,
  logger: Logger,
  config: Pick<Config, 'shutdownDeadlineSeconds'>,
): number {
  let stopping = false;
  let exiting = false;
  const exit = (code: number): void => {
    // The first outcome wins: a deadline passing while the log is written out does not exit a second time.
    if (exiting) return;
    exiting = true;
    process.exitCode = code;
    endLog(logger, () => process.exit(code));
  };
  const cutShort = (why: string, fields: Record<string, unknown>): void => {
    if (exiting) return;
    const state = role.shutdownState();
    const during = state.step === undefined ? 'between steps' : `during "${state.step}"`;
    logger.error(
      {
        ...fields,
        step: state.step,
        leaves: state.leaves,
        notRun: state.notRun,
        exitCode: EXIT_CUT_SHORT,
      },
      `${why}: exiting ${during}${state.leaves === undefined ? '' : `; ${state.leaves}`}`,
    );
    exit(EXIT_CUT_SHORT);
  };
  const stop = (signal: string): void => {
    if (stopping) {
      cutShort(`${signal} again during the shutdown`, { signal });
      return;
    }
    stopping = true;
    const deadlineSeconds = config.shutdownDeadlineSeconds;
    logger.info({ signal, deadlineSeconds }, 'shutting down');
    setTimeout(
      () =>
        cutShort(`shutdown not finished within ${deadlineSeconds} s (WEIR_SHUTDOWN_DEADLINE_SECONDS)`, {
          deadlineSeconds,
        }),
      deadlineSeconds * 1000,
    );
    role.close().then(
      () => exit(EXIT_CLEAN),
      (err: unknown) => {
        if (exiting) return;
        // Each failed step has had its line; this one is the outcome a supervisor sees last.
        logger.error(
          { err, exitCode: EXIT_CLOSE_FAILED },
          `shutdown finished with a failed step: ${err instanceof Error ? err.message : String(err)}`,
        );
        exit(EXIT_CLOSE_FAILED);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return -1;
}
