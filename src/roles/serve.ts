import { registerOpsRoutes, type OpsDeps } from '../api/ops-routes.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { InFlight } from '../http/in-flight.ts';
import { chooseTransport } from '../http/choose-transport.ts';
import { drainRequests } from '../http/server.ts';
import type { HttpApp, Transport } from '../http/transport.ts';
import { CUT_OFF_REQUESTS, type Teardown, type TeardownState } from './teardown.ts';

export interface Served {
  readonly port: number;
  readonly url: string;
  /** Not ready any more, then the teardown in reverse order; the same promise on every call. */
  readonly close: () => Promise<void>;
  /** Where `close` is: what a shutdown cut short would leave (cli/run-until-signal.ts). */
  readonly shutdownState: () => TeardownState;
}

/**
 * The HTTP transport of a role (choose-transport.ts), with the reason for it in the log: a Weir on Node's
 * `http` says so at start, as it serves a fraction of uWS's requests a second.
 */
export function httpTransport(config: Config, logger: Logger): Transport {
  const { transport, reason } = chooseTransport(config.httpTransport);
  logger.info(
    { http: transport.name, reason },
    `HTTP on ${transport.name === 'uws' ? 'uWebSockets.js' : "Node's http"}`,
  );
  return transport;
}

/**
 * The last step of every role: ops routes (`/_ready` true only between listening and closing, and while
 * `isReady` says so), listening, and a `close` that runs the role's teardown once. With `inFlight`, closing
 * first stops listening and lets the requests in progress finish.
 */
export async function serveRole(
  app: HttpApp,
  config: Config,
  deps: {
    readonly transport: Transport;
    readonly metrics: Metrics;
    readonly logger: Logger;
    readonly isReady: () => boolean;
    readonly inFlight?: InFlight;
    /** Several processes may listen on the port (`weir capture`); otherwise the role must be its only one. */
    readonly sharePort?: boolean;
    readonly isHealthy?: OpsDeps['isHealthy'];
    readonly moreMetrics?: OpsDeps['moreMetrics'];
  },
  teardown: Teardown,
  announce: { readonly message: string } & Record<string, unknown>,
): Promise<Served> {
  const { metrics, logger, inFlight } = deps;
  let ready = false;
  registerOpsRoutes(app, {
    metrics,
    logger,
    isReady: () => ready && deps.isReady(),
    isHealthy: deps.isHealthy,
    moreMetrics: deps.moreMetrics,
  });
  const server = await deps.transport.listen(app, config.host, config.port, {
    sharePort: deps.sharePort ?? false,
  });
  teardown.push(
    inFlight ? 'finish requests in progress' : 'stop listening',
    async () => {
      server.stopListening();
      if (inFlight) await drainRequests(inFlight, config.shutdownTimeoutMs, logger);
    },
    inFlight ? CUT_OFF_REQUESTS : undefined,
  );
  ready = true;
  const { message, ...fields } = announce;
  logger.info({ url: server.url, http: deps.transport.name, ...fields }, message);

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      ready = false;
      await teardown.run();
      logger.info('stopped');
    })());
  return { port: server.port, url: server.url, close, shutdownState: () => teardown.state() };
}
