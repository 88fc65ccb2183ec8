import uWS from 'uWebSockets.js';
import { registerManagementRoutes } from './api/management-routes.ts';
import { registerOpsRoutes } from './api/ops-routes.ts';
import { EmbeddedBus } from './bus/embedded-bus.ts';
import { LaneConsumer } from './bus/jetstream/consumer.ts';
import { JetStreamBus, connectNats } from './bus/jetstream/jetstream-bus.ts';
import { LANES } from './core/event.ts';
import type { Bus, Store } from './core/ports.ts';
import { CaptureService } from './capture/capture-service.ts';
import { registerCaptureRoutes } from './capture/http-routes.ts';
import { FileCatalog } from './catalog/file-catalog.ts';
import type { Config } from './config/config.ts';
import type { Logger } from './core/logger.ts';
import { Metrics } from './core/metrics.ts';
import { InFlight } from './http/in-flight.ts';
import { IngestService } from './ingest/ingest-service.ts';
import { type LoggedStore, openEmbeddedStore } from './store/logged-store.ts';
import { DataDirLock } from './store/data-dir-lock.ts';

export interface Weir {
  readonly port: number;
  readonly url: string;
  readonly catalog: FileCatalog;
  readonly metrics: Metrics;
  /** The analytical store (for tests and operator tools in the same process). */
  readonly store: Store;
  /** Stops taking requests, finishes those in progress, commits what was accepted, and releases the data directory. */
  close(): Promise<void>;
}

/**
 * The composition root of `weir start`, the embedded deployment: config → adapters (file catalog, chDB
 * store, embedded bus) → ingest actors → HTTP server. Everything is wired here and nowhere else.
 */
export async function startWeir(config: Config, logger: Logger): Promise<Weir> {
  const lock = DataDirLock.acquire(config.dataDir);
  let store: LoggedStore | undefined;
  try {
    const catalog = await FileCatalog.open(config);
    const metrics = new Metrics();
    store = await openEmbeddedStore(config, { logger, metrics });
    const ingest = new IngestService(config, { store, metrics, logger });
    await ingest.start(config.dedupWindow);
    const { bus, stopConsumers } = await openBus(config, ingest, metrics, logger);
    const capture = new CaptureService(config, { catalog, bus, metrics, logger });
    const inFlight = new InFlight();
    let ready = false;

    const app = uWS.App();
    registerCaptureRoutes(app, { service: capture, inFlight, metrics, logger });
    registerManagementRoutes(app, { catalog, inFlight, logger });
    registerOpsRoutes(app, { metrics, logger, isReady: () => ready && bus.isReady() });
    const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
      app.listen(config.host, config.port, (socket) => {
        if (socket) resolve(socket);
        else reject(new Error(`cannot listen on ${config.host}:${config.port} (is the port in use?)`));
      });
    });
    const port = uWS.us_socket_local_port(listenSocket);
    ready = true;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    logger.info({ url, dataDir: config.dataDir }, 'weir is ready');

    let closing: Promise<void> | undefined;
    const openStore = store;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        ready = false;
        logger.info({ inFlight: inFlight.count }, 'draining');
        uWS.us_listen_socket_close(listenSocket);
        const drained = inFlight.drain();
        const timedOut = await Promise.race([
          drained.then(() => false),
          new Promise<boolean>((r) => setTimeout(() => r(true), config.shutdownTimeoutMs).unref()),
        ]);
        if (timedOut)
          logger.warn({ inFlight: inFlight.count }, 'shutdown timeout reached with requests in progress');
        await stopConsumers();
        await ingest.drain();
        await bus.close();
        await openStore.close();
        await catalog.close();
        lock.release();
        logger.info('stopped');
      })());
    return { port, url, catalog, metrics, store: openStore, close };
  } catch (err) {
    await store?.close().catch(() => undefined);
    lock.release();
    throw err;
  }
}

/**
 * The bus of this process: embedded (capture hands events straight to ingest), or JetStream when
 * WEIR_NATS_URL is set — capture publishes, and this process also consumes every lane into its ingest.
 */
async function openBus(
  config: Config,
  ingest: IngestService,
  metrics: Metrics,
  logger: Logger,
): Promise<{ bus: Bus; stopConsumers: () => Promise<void> }> {
  if (config.natsUrl === undefined) {
    return {
      bus: new EmbeddedBus(config, { sink: ingest, metrics }),
      stopConsumers: () => Promise.resolve(),
    };
  }
  const bus = await JetStreamBus.connect({ ...config, natsUrl: config.natsUrl }, logger);
  const nc = await connectNats(config.natsUrl, 'weir-ingest');
  const consumers = LANES.map((lane) => new LaneConsumer(lane, { sink: ingest, logger }));
  for (const c of consumers) await c.start(nc);
  logger.info({ natsUrl: config.natsUrl }, 'using the JetStream bus');
  return {
    bus,
    stopConsumers: async () => {
      await Promise.all(consumers.map((c) => c.stop()));
      await nc.drain();
    },
  };
}
