import { createServer } from 'node:net';
import type { Logger } from '../core/logger.ts';
import type { InFlight } from './in-flight.ts';
import { httpUrl } from './transport.ts';

/**
 * Checks that nothing listens on `host:port` yet, shared or not, and returns the port (on port 0, one the
 * system has free). The capture threads do this before they share a port among themselves, so that they
 * share it with nobody else; and as a listener on port 0 cannot be joined, they all bind the port it returns.
 * A plain listener without SO_REUSEPORT cannot bind a port anyone holds, whichever transport holds it.
 */
export function freePort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`cannot listen on ${httpUrl(host, port)}: is the port in use?`)
          : err,
      );
    });
    server.listen({ host, port }, () => {
      const address = server.address();
      const local = typeof address === 'object' && address !== null ? address.port : port;
      server.close(() => resolve(local));
    });
  });
}

/** Waits for the requests in progress to finish, at most `timeoutMs`; new requests are refused from now. */
export async function drainRequests(inFlight: InFlight, timeoutMs: number, logger: Logger): Promise<void> {
  logger.info({ inFlight: inFlight.count }, 'draining');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    inFlight.drain().then(() => false),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(true), timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  if (timedOut)
    logger.warn({ inFlight: inFlight.count }, 'shutdown timeout reached with requests in progress');
}
