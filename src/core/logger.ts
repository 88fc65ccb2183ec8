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
