import uWS from 'uWebSockets.js';
import type { Logger } from '../core/logger.ts';
import type { InFlight } from './in-flight.ts';

export interface HttpServer {
  readonly port: number;
  /** `http://host:port`, with an IPv6 host in brackets. */
  readonly url: string;
  /** Stops accepting connections; requests in progress go on. */
  stopListening(): void;
}

/**
 * Binds the app. uWS sets SO_REUSEPORT on Linux: several processes may listen on one port and the kernel
 * spreads connections across them (how N `weir capture` processes share a port, one per core) — and also
 * why a second Weir on a taken port does not fail here, so give each role its own port.
 */
export function listen(app: uWS.TemplatedApp, host: string, port: number): Promise<HttpServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port} (is the port in use?)`));
        return;
      }
      const bound = uWS.us_socket_local_port(socket);
      let open = true;
      resolve({
        port: bound,
        url: httpUrl(host, bound),
        stopListening: () => {
          // Closing a listen socket twice is a use after free in uWS.
          if (open) uWS.us_listen_socket_close(socket);
          open = false;
        },
      });
    });
  });
}

/** `http://host:port`, with an IPv6 host in brackets. */
export function httpUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
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
