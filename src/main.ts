import { EmbeddedBus } from './bus/embedded-bus.ts';
import { JetStreamBus } from './bus/jetstream/jetstream-bus.ts';
import type { Config } from './config/config.ts';
import type { Logger } from './core/logger.ts';
import { Metrics } from './core/metrics.ts';
import type { Bus } from './core/ports.ts';
import type { IngestService } from './ingest/ingest-service.ts';
import { InFlight } from './http/in-flight.ts';
import { httpUrl, type HttpApp, type Transport } from './http/transport.ts';
import { mountApi } from './roles/api.ts';
import type { RoleCatalog } from './roles/catalog.ts';
import { CaptureThreads } from './roles/capture-threads.ts';
import type { OpenedStore } from './store/open-store.ts';
import { mountCapture } from './roles/capture-role.ts';
import { openGeoip } from './roles/geoip.ts';
import type { GeoipSource } from './capture/geoip.ts';
import {
  consumeBus,
  openDataDir,
  openPropertyDefinitions,
  startDeletions,
  startIngest,
  type Weir,
} from './roles/owner.ts';
import type { PropertyDefinitionRegistry } from './ingest/property-definitions.ts';
import { httpTransport, serveRole } from './roles/serve.ts';
import { CUT_OFF_REQUESTS, PUBLISHED, Teardown } from './roles/teardown.ts';

export type { Weir } from './roles/owner.ts';

/**
 * The composition root of `weir start`: everything in one process. Config → data directory (lock, catalog,
 * store: chDB, or a ClickHouse server with WEIR_CLICKHOUSE_URL) → ingest actors → bus → capture → HTTP. The bus is embedded (capture hands events straight to
 * ingest), or JetStream when WEIR_NATS_URL is set: capture publishes, and this process consumes every lane
 * too. `weir capture` and `weir ingest` are composed from the same parts in `roles/`.
 */
export async function startWeir(config: Config, logger: Logger): Promise<Weir> {
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    // Before the data directory: a GeoIP database that cannot be used stops the start before anything opens.
    const geoip = openGeoip(config, logger);
    const { catalog, store } = await openDataDir(config, { logger, metrics }, teardown);
    const propertyDefinitions = await openPropertyDefinitions({ store, logger }, teardown);
    const ingest = await startIngest(
      config,
      { store, metrics, logger, properties: propertyDefinitions, catalog },
      teardown,
    );
    const bus = await openBus(config, { ingest, metrics, logger }, teardown);
    const deletions = startDeletions(
      config,
      { catalog, store, ingest, logger, properties: propertyDefinitions },
      teardown,
    );
    const onDeletion = (): void => deletions.wake();

    const transport = httpTransport(config, logger);
    const app = transport.createApp();
    if (config.captureThreads > 0) {
      const served = await serveWithCaptureThreads(
        app,
        capturedBy(config, transport, logger),
        { transport, catalog, store, bus, metrics, logger, propertyDefinitions, geoip, onDeletion },
        teardown,
      );
      return { ...served, catalog, metrics, store };
    }
    const inFlight = mountCapture(app, config, { catalog, bus: bus.bus, metrics, logger, geoip });
    mountApi(
      app,
      config,
      { catalog, store, quarantine: store, inFlight, logger, metrics, propertyDefinitions, onDeletion },
      teardown,
    );
    const served = await serveRole(
      app,
      config,
      { transport, metrics, logger, inFlight, isReady: () => bus.isReady() && (catalog.following ?? true) },
      teardown,
      { message: 'weir is ready', dataDir: config.dataDir },
    );
    return {
      port: served.port,
      url: served.url,
      catalog,
      metrics,
      store,
      close: served.close,
      shutdownState: served.shutdownState,
    };
  } catch (err) {
    return teardown.abandon(err);
  }
}

/**
 * `weir start` with capture on threads of its own (see capture-threads.ts): this thread serves the API and the
 * operations routes on a loopback port, and the threads listen on the public one.
 */
async function serveWithCaptureThreads(
  app: HttpApp,
  config: Config,
  deps: {
    transport: Transport;
    catalog: RoleCatalog;
    store: OpenedStore;
    bus: { bus: Bus; isReady: () => boolean };
    metrics: Metrics;
    logger: Logger;
    propertyDefinitions: PropertyDefinitionRegistry;
    geoip: GeoipSource | undefined;
    onDeletion: () => void;
  },
  teardown: Teardown,
): Promise<Pick<Weir, 'port' | 'url' | 'close' | 'shutdownState'>> {
  const { transport, catalog, store, bus, metrics, logger, propertyDefinitions, onDeletion } = deps;
  const inFlight = new InFlight();
  mountApi(
    app,
    config,
    { catalog, store, quarantine: store, inFlight, logger, metrics, propertyDefinitions, onDeletion },
    teardown,
  );
  // Set once the threads run; the ops routes are registered (and may be asked) before that.
  const started: { threads?: CaptureThreads } = {};
  const internal = await serveRole(
    app,
    { ...config, host: '127.0.0.1', port: 0 },
    {
      transport,
      metrics,
      logger,
      inFlight,
      isReady: () =>
        bus.isReady() &&
        (catalog.following ?? true) &&
        started.threads !== undefined &&
        started.threads.healthy,
      isHealthy: () => started.threads?.healthy ?? true,
      moreMetrics: () => started.threads?.metrics() ?? Promise.resolve([]),
    },
    teardown,
    { message: 'API listening on loopback for the capture threads' },
  );
  const threads = await CaptureThreads.start(config, {
    bus: bus.bus,
    catalog,
    logger,
    target: internal.url,
    geoip: deps.geoip,
  });
  started.threads = threads;
  teardown.push(
    'finish capture requests and stop the capture threads',
    async () => {
      await threads.drain(config.shutdownTimeoutMs);
      await threads.stop();
    },
    CUT_OFF_REQUESTS,
  );
  const url = httpUrl(config.host, threads.port);
  logger.info({ url, captureThreads: config.captureThreads, dataDir: config.dataDir }, 'weir is ready');
  return { port: threads.port, url, close: internal.close, shutdownState: internal.shutdownState };
}

/**
 * The config of capture threads on `transport`: more than one must share the port, which Node's `http` can
 * only from Node 22.12; before that they are one thread, and the log says so.
 */
function capturedBy(config: Config, transport: Transport, logger: Logger): Config {
  if (config.captureThreads <= 1 || transport.sharesPorts) return config;
  logger.warn(
    { captureThreads: config.captureThreads, node: process.versions.node },
    "Node's http on this Node.js cannot share a port between threads: capture runs on one thread",
  );
  return { ...config, captureThreads: 1 };
}

/**
 * The bus of `weir start`: embedded, or with WEIR_NATS_URL a JetStream publisher plus this process's own
 * consumers of every lane (ready only while both connections are up).
 */
async function openBus(
  config: Config,
  deps: { ingest: IngestService; metrics: Metrics; logger: Logger },
  teardown: Teardown,
): Promise<{ bus: Bus; isReady: () => boolean }> {
  const natsUrl = config.natsUrl;
  if (natsUrl === undefined) {
    const bus = new EmbeddedBus(config, { sink: deps.ingest, metrics: deps.metrics });
    teardown.push('close the bus', () => bus.close());
    return { bus, isReady: () => bus.isReady() };
  }
  const consumers = await consumeBus({ ...config, natsUrl }, deps, teardown);
  const bus = await JetStreamBus.connect({ ...config, natsUrl }, deps);
  teardown.push('close the bus', () => bus.close(), PUBLISHED);
  deps.logger.info({ natsUrl }, 'using the JetStream bus');
  return { bus, isReady: () => bus.isReady() && consumers.isReady() };
}
