import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import { InFlight } from '../http/in-flight.ts';
import type { ParquetExporter, QuarantineStore, Store, TableReader } from '../core/ports.ts';
import { openStore } from '../store/open-store.ts';
import { RemoteStore } from '../store/remote-store.ts';
import { mountApi } from './api.ts';
import { openCatalog, type RoleCatalog } from './catalog.ts';
import { RemotePropertyDefinitions } from './remote-properties.ts';
import { httpTransport, serveRole } from './serve.ts';
import { NatsLink, replicasFor } from '../bus/jetstream/connection.ts';
import { followStoreOwner } from '../bus/jetstream/store-owner.ts';
import { Teardown, type TeardownState } from './teardown.ts';

/**
 * `weir query`: the query API, the management API and endpoint runs, on any machine and in any number. It
 * keeps no state of its own: the catalog is the NATS KV bucket every node shares, direct runs go to the
 * ClickHouse server (`WEIR_CLICKHOUSE_URL`) or, with the embedded store, to the store owner's store API
 * (`WEIR_STORE_URL`, or as the owner advertised it in NATS: the one `weir ingest`), materialized runs come from S3 into this node's query actor pool,
 * and a materialization refresh is claimed in the catalog, so one node of all refreshes a version. This
 * module loads no engine (no chDB).
 */
export interface QueryRole {
  readonly port: number;
  readonly url: string;
  readonly catalog: RoleCatalog;
  readonly metrics: Metrics;
  /** Stops taking requests, finishes those in progress, stops refreshing, closes. */
  close(): Promise<void>;
  /** Where `close` is, for the shutdown deadline's last line. */
  shutdownState(): TeardownState;
}

export async function startQueryRole(config: Config, logger: Logger): Promise<QueryRole> {
  if (config.catalog !== 'nats')
    throw new ConfigError('weir query serves the catalog every node shares: set WEIR_CATALOG=nats');
  const { natsUrl, storeUrl, storeToken } = config;
  if (natsUrl === undefined)
    throw new ConfigError('weir query reads the catalog from NATS KV: set WEIR_NATS_URL or --nats-url');
  if (config.clickhouseUrl === undefined && storeToken === undefined)
    throw new ConfigError(
      "weir query runs queries on the ClickHouse server (set WEIR_CLICKHOUSE_URL) or on the embedded store's owner's store API: set WEIR_STORE_TOKEN (the token weir ingest has; its URL comes from NATS, or WEIR_STORE_URL)",
    );
  const teardown = new Teardown(logger);
  try {
    const metrics = new Metrics();
    const catalog = await openCatalog(config, { metrics, logger }, teardown);
    let store: TableReader & ParquetExporter & Pick<Store, 'query' | 'insert'>;
    let owner: RemoteStore | undefined;
    let quarantine: QuarantineStore | undefined;
    if (config.clickhouseUrl !== undefined) {
      // Its own connections to the server; the schema is left to the processes that write.
      const server = await openStore(config, { logger, metrics }, { migrate: false });
      teardown.push('close the connections to ClickHouse', () => server.close());
      store = server;
      quarantine = server;
    } else {
      const queryMs = config.queryTimeoutSeconds * 1000;
      const ownerUrl =
        storeUrl ??
        (await followOwner(config, natsUrl, (url) => owner?.retarget(url), { logger, metrics }, teardown));
      owner = new RemoteStore({
        url: ownerUrl,
        token: storeToken!,
        // The run's own limit is enforced by the engine and the runner; these only bound a silent owner.
        timeoutMs: queryMs + 10_000,
        exportTimeoutMs: queryMs * 10 + 30_000,
      });
      const remote = owner;
      teardown.push('close the connections to the store owner', () => remote.close());
      store = remote;
    }
    const propertyDefinitions = new RemotePropertyDefinitions({ store, owner, logger });
    propertyDefinitions.start();
    teardown.push('stop reading the property definitions', () => propertyDefinitions.close());

    const transport = httpTransport(config, logger);
    const app = transport.createApp();
    const inFlight = new InFlight();
    mountApi(
      app,
      config,
      { catalog, store, quarantine, inFlight, logger, metrics, propertyDefinitions },
      teardown,
    );
    const served = await serveRole(
      app,
      config,
      {
        transport,
        metrics,
        logger,
        inFlight,
        // Query nodes are alike: several on one machine may share the port, as capture processes do.
        sharePort: true,
        isReady: () => (catalog.following ?? true) && propertyDefinitions.loaded,
      },
      teardown,
      {
        message: 'weir query is ready',
        role: 'query',
        natsUrl,
        ...(config.clickhouseUrl === undefined
          ? { storeUrl: owner?.url }
          : { clickhouseUrl: config.clickhouseUrl, database: config.clickhouseDatabase }),
        bucket: config.catalogBucket,
      },
    );
    return {
      port: served.port,
      url: served.url,
      catalog,
      metrics,
      close: served.close,
      shutdownState: served.shutdownState,
    };
  } catch (err) {
    return teardown.abandon(err);
  }
}

/** How long a query node started without WEIR_STORE_URL waits for a store owner to advertise itself. */
const OWNER_WAIT_MS = 60_000;

/** The store owner's URL as advertised in NATS, followed as it changes (an owner restarted elsewhere). */
async function followOwner(
  config: Config,
  natsUrl: string,
  changed: (url: string) => void,
  deps: { logger: Logger; metrics: Metrics },
  teardown: Teardown,
): Promise<string> {
  const link = await NatsLink.open(natsUrl, 'store-owner', deps);
  teardown.push('close the store owner connection', () => link.close());
  const followed = await followStoreOwner(
    link.nc,
    replicasFor(link.nc, config.natsReplicas),
    OWNER_WAIT_MS,
    (url) => {
      deps.logger.info({ url }, 'store owner found in NATS');
      changed(url);
    },
  );
  teardown.push('stop following the store owner', () => followed.stop());
  return followed.url;
}
