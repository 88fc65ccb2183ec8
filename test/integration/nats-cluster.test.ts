/**
 * On a real three-node nats-server cluster: the EVENTS stream and the catalog bucket are made with three
 * replicas without being told, a process that connects while a node is down does not shrink them, and
 * WEIR_NATS_REPLICAS sets them when given.
 */
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { replicasFor } from '../../src/bus/jetstream/connection.ts';
import { JetStreamBus } from '../../src/bus/jetstream/jetstream-bus.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { openCatalog } from '../../src/roles/catalog.ts';
import { Teardown } from '../../src/roles/teardown.ts';
import { startNatsCluster } from '../helpers/nats-server.ts';

const cluster = await startNatsCluster(3);
t.teardown(() => cluster.close());
const logger = createLogger('silent');

const replicas = async (stream: string, url = cluster.url): Promise<number> => {
  const nc = await connect({ servers: url.split(',') });
  try {
    return (await (await jetstreamManager(nc)).streams.info(stream)).config.num_replicas;
  } finally {
    await nc.close();
  }
};

/** The replicas a process connecting now works out, once the cluster has noticed the node away. */
const waitForFewer = async (url: string): Promise<number> => {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const nc = await connect({ servers: url.split(',') });
    const n = replicasFor(nc, undefined);
    await nc.close();
    if (n < 3 || Date.now() > deadline) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** Opens the bus and the catalog as a role does, and closes them again. */
const openRole = async (env: Record<string, string>): Promise<void> => {
  const config = loadConfig({ WEIR_CATALOG: 'nats', WEIR_LOG_LEVEL: 'silent', ...env });
  const metrics = new Metrics();
  const bus = await JetStreamBus.connect({ ...config, natsUrl: config.natsUrl! }, { metrics, logger });
  const teardown = new Teardown(logger);
  await openCatalog(config, { metrics, logger }, teardown);
  await teardown.run();
  await bus.close();
};

t.test('three replicas in a cluster of three, untold', async (t) => {
  await openRole({ WEIR_NATS_URL: cluster.url });
  t.equal(await replicas('EVENTS'), 3, 'the EVENTS stream');
  t.equal(await replicas('KV_weir_catalog'), 3, 'the catalog bucket');
});

t.test('a process that sees a node down keeps the replicas the stream has', async (t) => {
  const down = cluster.nodes[2]!;
  await down.stop();
  try {
    // Told only of the live nodes, and one of three away: it works out fewer servers than there are.
    const live = cluster.nodes
      .slice(0, 2)
      .map((n) => n.url)
      .join(',');
    t.equal(await waitForFewer(live), 1, 'what a process works out now');
    await openRole({ WEIR_NATS_URL: live });
    t.equal(await replicas('EVENTS', live), 3);
    t.equal(await replicas('KV_weir_catalog', live), 3);
  } finally {
    await down.restart();
  }
});

t.test('WEIR_NATS_REPLICAS sets them', async (t) => {
  await openRole({ WEIR_NATS_URL: cluster.url, WEIR_NATS_REPLICAS: '1' });
  t.equal(await replicas('EVENTS'), 1);
  t.equal(await replicas('KV_weir_catalog'), 1);
  await openRole({ WEIR_NATS_URL: cluster.url, WEIR_NATS_REPLICAS: '3' });
  t.equal(await replicas('EVENTS'), 3);
  t.equal(await replicas('KV_weir_catalog'), 3);
});
