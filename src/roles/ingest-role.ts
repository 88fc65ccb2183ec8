import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import { InFlight } from '../http/in-flight.ts';
import {
  consumeBus,
  openDataDir,
  openPropertyDefinitions,
  startDeletions,
  startIngest,
  type Weir,
} from './owner.ts';
import { join } from 'node:path';
import { registerStoreRoutes } from '../api/store-routes.ts';
import { httpTransport, serveRole } from './serve.ts';
import { mountApi } from './api.ts';
import { Teardown } from './teardown.ts';
import { hostname } from 'node:os';
import { NatsLink, replicasFor } from '../bus/jetstream/connection.ts';
import { advertiseStoreOwner } from '../bus/jetstream/store-owner.ts';
import { httpUrl } from '../http/transport.ts';
import { embeddedStore } from '../store/open-store.ts';

/**
 * `weir ingest`: consumes the JetStream lanes into ingest and the store it owns, with `/_health`, `/_ready`,
 * `/metrics` and the query and management APIs (`/api/…`) on its own port, and with `WEIR_STORE_TOKEN` the
 * store API `weir query` nodes run their queries through. With the embedded chDB store one ingest process owns
 * the data directory (and the catalog, unless it is in NATS KV).
 */
export async function startIngestRole(config: Config, logger: Logger): Promise<Weir> {
  const natsUrl = config.natsUrl;
  if (natsUrl === undefined)
    throw new ConfigError('weir ingest consumes from NATS JetStream: set WEIR_NATS_URL or --nats-url');
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    const { catalog, store } = await openDataDir(config, { logger, metrics }, teardown);
    const propertyDefinitions = await openPropertyDefinitions({ store, logger }, teardown);
    const ingest = await startIngest(
      config,
      { store, metrics, logger, properties: propertyDefinitions, catalog },
      teardown,
    );
    const consumers = await consumeBus({ ...config, natsUrl }, { ingest, metrics, logger }, teardown);
    const deletions = startDeletions(
      config,
      { catalog, store, ingest, logger, properties: propertyDefinitions },
      teardown,
    );

    const transport = httpTransport(config, logger);
    const app = transport.createApp();
    // The process that owns the store and the catalog also answers the query, management and endpoint APIs.
    const inFlight = new InFlight();
    mountApi(
      app,
      config,
      {
        catalog,
        store,
        quarantine: store,
        inFlight,
        logger,
        metrics,
        propertyDefinitions,
        onDeletion: () => deletions.wake(),
      },
      teardown,
    );
    // `weir query` nodes run their queries here: the embedded engine is in this process only.
    if (config.storeToken !== undefined)
      registerStoreRoutes(app, {
        store,
        propertyDefinitions,
        token: config.storeToken,
        tmpDir: join(config.dataDir, 'tmp'),
        inFlight,
        logger,
      });
    const served = await serveRole(
      app,
      config,
      {
        transport,
        metrics,
        logger,
        inFlight,
        isReady: () => consumers.isReady() && (catalog.following ?? true),
      },
      teardown,
      {
        message: 'weir ingest is ready',
        role: 'ingest',
        natsUrl,
        dataDir: config.dataDir,
      },
    );
    if (config.storeToken !== undefined && embeddedStore(config))
      await advertiseOwner(config, natsUrl, served.port, { logger, metrics }, teardown);
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
 * Records this process's store API in NATS for query nodes started without WEIR_STORE_URL; removed on a clean
 * stop (first of all: a query node then stops sending here). Listening on every interface, it names the
 * machine by its hostname; WEIR_STORE_ADVERTISE_URL says otherwise where that does not resolve for them.
 */
async function advertiseOwner(
  config: Config,
  natsUrl: string,
  port: number,
  deps: { logger: Logger; metrics: Metrics },
  teardown: Teardown,
): Promise<void> {
  const everywhere = config.host === '0.0.0.0' || config.host === '::';
  const url = config.storeAdvertiseUrl ?? httpUrl(everywhere ? hostname() : config.host, port);
  const link = await NatsLink.open(natsUrl, 'store-owner', deps);
  teardown.push('close the store owner connection', () => link.close());
  const retract = await advertiseStoreOwner(link.nc, replicasFor(link.nc, config.natsReplicas), url);
  teardown.push('withdraw the store API from NATS', retract);
  deps.logger.info({ url }, 'store API advertised in NATS for query nodes');
}
