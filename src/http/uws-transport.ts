import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type uWS from 'uWebSockets.js';
import {
  httpUrl,
  type HttpApp,
  type HttpRequest,
  type HttpResponse,
  type HttpServer,
  type Transport,
} from './transport.ts';

type Uws = typeof uWS;

/**
 * uWebSockets.js's native module for this Node.js, loaded by its file name. The package's own entry point is
 * not used: where it has no binary for the running Node.js it prints a warning and falls back to a Node
 * implementation of its own that fails on the first request; here the caller is told why instead, and
 * chooses Node's `http` itself.
 */
export function loadUws(): { readonly uws: Uws } | { readonly reason: string } {
  const require = createRequire(import.meta.url);
  let root: string;
  try {
    root = dirname(require.resolve('uWebSockets.js/package.json'));
  } catch {
    return { reason: 'uWebSockets.js is not installed' };
  }
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  // The npm build keeps its binaries in binaries/; uNetworking's own releases at the package's root.
  for (const path of [join(root, 'binaries', file), join(root, file)]) {
    try {
      return { uws: require(path) as Uws };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') continue;
      return { reason: `uWebSockets.js's ${file} does not load: ${(err as Error).message}` };
    }
  }
  return {
    reason:
      `uWebSockets.js has no build for Node.js ${process.versions.node} ` +
      `(${process.platform}-${process.arch}, ABI ${process.versions.modules})`,
  };
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

/** The transport on uWS: its App is the HttpApp itself, and its request and response the port's. */
export function uwsTransport(uws: Uws): Transport {
  return {
    name: 'uws',
    sharesPorts: true,
    createApp: () => uws.App(),
    listen: (app, host, port, options) => listen(uws, app as uWS.TemplatedApp, host, port, options),
    closeAll: (app) => (app as unknown as { close(): void }).close(), // in uWS.js, missing from its types
  };
}

function listen(
  uws: Uws,
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
      const local = uws.us_socket_local_port(socket);
      let open = true;
      resolve({
        port: local,
        url: httpUrl(host, local),
        stopListening: () => {
          // Closing a listen socket twice is a use after free in uWS.
          if (open) uws.us_listen_socket_close(socket);
          open = false;
        },
      });
    };
    // uWS's default sets SO_REUSEPORT on Linux: sharing is the default, owning takes the exclusive option.
    if (options.sharePort) app.listen(host, port, bound);
    // The typings know the options only without a host; the binding takes (host, port, options, cb).
    else (app as unknown as ListensWithOptions).listen(host, port, EXCLUSIVE_PORT, bound);
  });
}

/** uWS's own objects are the port's: a change to either that breaks this is a type error here. */
type Holds<T extends true> = T;
export type UwsIsThePort = Holds<
  uWS.TemplatedApp extends HttpApp
    ? uWS.HttpResponse extends HttpResponse
      ? uWS.HttpRequest extends HttpRequest
        ? true
        : false
      : false
    : false
>;
