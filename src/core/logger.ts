import { pino, type Logger } from 'pino';

export type { Logger };

/** One pino logger per process; JSON lines on stdout. Secrets and event bodies are never logged. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'weir', pid: process.pid },
      redact: {
        paths: ['api_key', 'token', '*.api_key', '*.token', 'authorization', '*.authorization'],
        remove: true,
      },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

/** How long exiting waits for the log to be written out before it exits anyway. */
const END_LOG_WAIT_MS = 2_000;

/**
 * Writes out what the logger holds, closes its stream and then calls `then` (to exit the process). An asynchronous
 * destination may have a line in flight: `flush()` would write the newer lines synchronously ahead of it, and a
 * process's last line would come out second to last.
 */
export function endLog(logger: Logger, then: () => void): void {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    (NodeJS.WritableStream & { destroyed?: boolean }) | undefined;
  if (stream === undefined || stream === process.stdout || stream.destroyed === true) {
    then();
    return;
  }
  let called = false;
  const once = (): void => {
    if (called) return;
    called = true;
    then();
  };
  setTimeout(once, END_LOG_WAIT_MS).unref();
  stream.once('close', once);
  stream.once('error', once);
  stream.end();
  // A line logged after the end (a step still running) is dropped rather than thrown at its caller: the process
  // exits once the stream closes, as pino itself silences a stream whose pipe broke.
  stream.write = () => true;
}
