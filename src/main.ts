import uWS from 'uWebSockets.js';
import { EmbeddedBus } from './bus/embedded-bus.ts';
import { JetStreamBus } from './bus/jetstream/jetstream-bus.ts';
import type { Config } from './config/config.ts';
import type { Logger } from './core/logger.ts';
import { Metrics } from './core/metrics.ts';
import type { Bus } from './core/ports.ts';
import type { IngestService } from './ingest/ingest-service.ts';
import { mountApi } from './roles/api.ts';
import { mountCapture } from './roles/capture-role.ts';
import { consumeBus, openDataDir, startIngest, type Weir } from './roles/owner.ts';
import { serveRole } from './roles/serve.ts';
import { Teardown } from './roles/teardown.ts';

export type { Weir } from './roles/owner.ts';

/**
 * The composition root of `weir start`: everything in one process. Config → data directory (lock, catalog,
 * chDB store) → ingest actors → bus → capture → HTTP. The bus is embedded (capture hands events straight to
 * ingest), or JetStream when WEIR_NATS_URL is set: capture publishes, and this process consumes every lane
 * too. `weir capture` and `weir ingest` are composed from the same parts in `roles/`.
 */
export async function startWeir(config: Config, logger: Logger): Promise<Weir> {
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    const { catalog, store } = await openDataDir(config, { logger, metrics }, teardown);
    const ingest = await startIngest(config, { store, metrics, logger }, teardown);
    const bus = await openBus(config, { ingest, metrics, logger }, teardown);

    const app = uWS.App();
    const inFlight = mountCapture(app, config, { catalog, bus: bus.bus, metrics, logger });
    mountApi(app, config, { catalog, store, inFlight, logger });
    const served = await serveRole(
      app,
      config,
      { metrics, logger, inFlight, isReady: () => bus.isReady() },
      teardown,
      { message: 'weir is ready', dataDir: config.dataDir },
    );
    return { port: served.port, url: served.url, catalog, metrics, store, close: served.close };
  } catch (err) {
    return teardown.abandon(err);
  }
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
  teardown.push('close the bus', () => bus.close());
  deps.logger.info({ natsUrl }, 'using the JetStream bus');
  return { bus, isReady: () => bus.isReady() && consumers.isReady() };
}
