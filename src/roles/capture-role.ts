import { JetStreamBus } from '../bus/jetstream/jetstream-bus.ts';
import { CaptureService } from '../capture/capture-service.ts';
import { Geoip, type GeoipSource } from '../capture/geoip.ts';
import { registerCaptureRoutes } from '../capture/http-routes.ts';
import { registerSdkRoutes } from '../capture/sdk-routes.ts';
import { registerCaptureV1Routes } from '../capture/v1-routes.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import type { Bus, ProjectKeys } from '../core/ports.ts';
import { openProjectKeys } from './catalog.ts';
import { openGeoip } from './geoip.ts';
import { InFlight } from '../http/in-flight.ts';
import type { HttpApp } from '../http/transport.ts';
import { httpTransport, serveRole } from './serve.ts';
import { PUBLISHED, Teardown, type TeardownState } from './teardown.ts';

/**
 * `weir capture`: HTTP capture publishing to JetStream, and nothing else — no store, no data-directory lock,
 * no chDB (this module must not import one that loads it). Stateless: run any number, one per core; on one
 * machine they may share a port. Project keys come from the owner's catalog file in `--data-dir`, read-only,
 * or with `WEIR_CATALOG=nats` from the KV bucket (any machine).
 */

export interface CaptureRole {
  readonly port: number;
  readonly url: string;
  readonly metrics: Metrics;
  readonly catalog: ProjectKeys;
  /** Stops taking requests, finishes those in progress (their publishes are acknowledged or refused), closes. */
  close(): Promise<void>;
  /** Where `close` is, for the shutdown deadline's last line. */
  shutdownState(): TeardownState;
}

/**
 * Mounts the capture routes (v0's and Capture V1's) on `app`, with the SDKs' start-up calls (flags, remote
 * config) that go to the same host; shared by `weir capture`, `weir start` and its capture threads.
 */
export function mountCapture(
  app: HttpApp,
  config: Config,
  deps: { catalog: ProjectKeys; bus: Bus; metrics: Metrics; logger: Logger; geoip: GeoipSource | undefined },
): InFlight {
  const inFlight = new InFlight();
  const service = new CaptureService(config, {
    ...deps,
    geoip: deps.geoip === undefined ? undefined : new Geoip(deps.geoip),
  });
  registerCaptureRoutes(app, { service, inFlight, metrics: deps.metrics, logger: deps.logger });
  registerCaptureV1Routes(app, {
    service,
    catalog: deps.catalog,
    inFlight,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  registerSdkRoutes(app, { catalog: deps.catalog, inFlight, logger: deps.logger });
  return inFlight;
}

export async function startCaptureRole(config: Config, logger: Logger): Promise<CaptureRole> {
  const natsUrl = config.natsUrl;
  if (natsUrl === undefined)
    throw new ConfigError('weir capture publishes to NATS JetStream: set WEIR_NATS_URL or --nats-url');
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    const geoip = openGeoip(config, logger);
    const projects = await openProjectKeys(config, { metrics, logger }, teardown);
    const catalog = projects.keys;
    const bus = await JetStreamBus.connect({ ...config, natsUrl }, { metrics, logger });
    teardown.push('close the bus', () => bus.close(), PUBLISHED);

    const transport = httpTransport(config, logger);
    const app = transport.createApp();
    const inFlight = mountCapture(app, config, { catalog, bus, metrics, logger, geoip });
    const served = await serveRole(
      app,
      config,
      {
        transport,
        metrics,
        logger,
        inFlight,
        sharePort: true,
        isReady: () => bus.isReady() && projects.isReady(),
      },
      teardown,
      {
        message: 'weir capture is ready',
        role: 'capture',
        natsUrl,
        catalog: config.catalog === 'nats' ? `nats:${config.catalogBucket}` : config.dataDir,
      },
    );
    return {
      port: served.port,
      url: served.url,
      metrics,
      catalog,
      close: served.close,
      shutdownState: served.shutdownState,
    };
  } catch (err) {
    return teardown.abandon(err);
  }
}
