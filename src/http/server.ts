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
 * Binds the app. A role that owns its port (`weir start`, `weir ingest`) binds it alone, so a second Weir
 * started on a taken port fails here instead of silently taking half its connections. uWS's default sets
 * SO_REUSEPORT on Linux: with `sharePort`, several listeners (`weir capture` processes, one per core, or
 * the capture threads of one `weir start`) share the port and the kernel spreads connections across them.
 * An owner's port cannot be shared, and a shared port cannot be owned.
 */
export function listen(
  app: uWS.TemplatedApp,
  host: string,
  port: number,
  options: { readonly sharePort: boolean },
): Promise<HttpServer> {
  return new Promise((resolve, reject) => {
    const bound = (socket: uWS.us_listen_socket | false): void => {
      if (!socket) {
        reject(new Error(`cannot listen on ${httpUrl(host, port)}: is the port in use?`));
        return;
      }
      const local = uWS.us_socket_local_port(socket);
      let open = true;
      resolve({
        port: local,
        url: httpUrl(host, local),
        stopListening: () => {
          // Closing a listen socket twice is a use after free in uWS.
          if (open) uWS.us_listen_socket_close(socket);
          open = false;
        },
      });
    };
    if (options.sharePort) app.listen(host, port, bound);
    // The typings know the options only without a host; the binding takes (host, port, options, cb).
    else (app as unknown as ListensWithOptions).listen(host, port, EXCLUSIVE_PORT, bound);
  });
}

/** `LIBUS_LISTEN_EXCLUSIVE_PORT`: the typings' enum has no value at run time. */
const EXCLUSIVE_PORT = 1 as uWS.ListenOptions;

interface ListensWithOptions {
  listen(
    host: string,
    port: number,
    options: uWS.ListenOptions,
    cb: (socket: uWS.us_listen_socket | false) => void,
  ): uWS.TemplatedApp;
}

/**
 * Checks that nothing listens on `host:port` yet, shared or not, and returns the port (on port 0, one the
 * system has free). The capture threads do this before they share a port among themselves, so that they
 * share it with nobody else; and as a listener on port 0 cannot be joined, they all bind the port it returns.
 */
export async function freePort(host: string, port: number): Promise<number> {
  const server = await listen(uWS.App(), host, port, { sharePort: false });
  server.stopListening();
  return server.port;
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
