import uWS from 'uWebSockets.js';
import { registerOpsRoutes } from '../api/ops-routes.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import { listen } from '../http/server.ts';
import { consumeBus, openDataDir, startIngest, type Weir } from './owner.ts';
import { Teardown } from './teardown.ts';

/**
 * `weir ingest`: consumes the JetStream lanes into ingest and the store it owns, with `/_health`, `/_ready`
 * and `/metrics` on its own port. With the embedded chDB store one ingest process owns the data directory
 * (and the catalog that `weir capture` processes read).
 */
export async function startIngestRole(config: Config, logger: Logger): Promise<Weir> {
  const natsUrl = config.natsUrl;
  if (natsUrl === undefined)
    throw new ConfigError('weir ingest consumes from NATS JetStream: set WEIR_NATS_URL or --nats-url');
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    const { catalog, store } = await openDataDir(config, { logger, metrics }, teardown);
    const ingest = await startIngest(config, { store, metrics, logger }, teardown);
    const consumers = await consumeBus({ ...config, natsUrl }, { ingest, metrics, logger }, teardown);

    const app = uWS.App();
    let ready = false;
    registerOpsRoutes(app, { metrics, logger, isReady: () => ready && consumers.isReady() });
    const server = await listen(app, config.host, config.port);
    teardown.push('stop listening', () => server.stopListening());
    ready = true;
    logger.info(
      { url: server.url, role: 'ingest', natsUrl, dataDir: config.dataDir },
      'weir ingest is ready',
    );

    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        ready = false;
        await teardown.run();
        logger.info('stopped');
      })());
    return { port: server.port, url: server.url, catalog, metrics, store, close };
  } catch (err) {
    return teardown.abandon(err);
  }
}
