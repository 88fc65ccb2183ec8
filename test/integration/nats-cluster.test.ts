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
import { KvCatalog } from '../../src/catalog/kv-catalog.ts';
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
  const teardown = new Teardown(logger);
  try {
    const bus = await JetStreamBus.connect({ ...config, natsUrl: config.natsUrl! }, { metrics, logger });
    teardown.push('close the bus', () => bus.close());
    await openCatalog(config, { metrics, logger }, teardown);
  } finally {
    // Also after a failed open: a connection left open reconnects forever and keeps the test alive.
    await teardown.run();
  }
};

t.test('three replicas in a cluster of three, untold', async (t) => {
  await openRole({ WEIR_NATS_URL: cluster.url });
  t.equal(await replicas('EVENTS'), 3, 'the EVENTS stream');
  t.equal(await replicas('KV_weir_catalog'), 3, 'the catalog bucket');
});

/**
 * A node away, or just back, may have led JetStream or a stream: until a leader is chosen and current, the API
 * times out or has no responders, and a role starting then exits for its supervisor to start again. So does
 * this, within a deadline.
 */
const openRoleOnceLed = async (env: Record<string, string>): Promise<void> => {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await openRole(env);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
};

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
    await openRoleOnceLed({ WEIR_NATS_URL: live });
    t.equal(await replicas('EVENTS', live), 3);
    t.equal(await replicas('KV_weir_catalog', live), 3);
  } finally {
    await down.restart();
  }
});

t.test('WEIR_NATS_REPLICAS sets them', async (t) => {
  // The node stopped above is catching up: until it is, its streams may not answer (no responders).
  await openRoleOnceLed({ WEIR_NATS_URL: cluster.url, WEIR_NATS_REPLICAS: '1' });
  t.equal(await replicas('EVENTS'), 1);
  t.equal(await replicas('KV_weir_catalog'), 1);
  await openRole({ WEIR_NATS_URL: cluster.url, WEIR_NATS_REPLICAS: '3' });
  t.equal(await replicas('EVENTS'), 3);
  t.equal(await replicas('KV_weir_catalog'), 3);
});

t.test('concurrent changes of one endpoint through two nodes of the cluster: none lost', async (t) => {
  const urls = cluster.url.split(',');
  const open = async (url: string): Promise<KvCatalog> => {
    const nc = await connect({ servers: url });
    const catalog = await KvCatalog.open(nc, {
      bucket: 'cas_check',
      replicas: 3,
      bootstrapProjectApiKey: undefined,
      bootstrapPersonalApiKey: undefined,
    });
    t.teardown(async () => {
      await catalog.close();
      await nc.close();
    });
    return catalog;
  };
  // Two nodes on different servers, as two weir query nodes would be: the race nats-server < 2.9.21 loses.
  const [a, b] = [await open(urls[0]!), await open(urls[1]!)];
  const query = (text: string): { kind: 'HogQLQuery'; query: string } => ({
    kind: 'HogQLQuery',
    query: text,
  });
  for (let round = 0; round < 5; round++) {
    const name = `e${round}`;
    await a.createEndpoint(1, {
      name,
      description: '',
      cacheAgeSeconds: 300,
      isActive: true,
      syncFrequency: '24hour',
      materializationBucket: 'day',
      query: query('SELECT 0'),
      variables: {},
      isMaterialized: false,
      createdBy: null,
    });
    await waitUntil(() => b.endpoint(1, name) !== undefined);
    const changes = Array.from({ length: 10 }, (_, i) =>
      (i % 2 ? b : a).updateEndpoint(1, name, () => ({
        newVersion: {
          query: query(`SELECT ${i + 1}`),
          variables: {},
          isMaterialized: false,
          createdBy: null,
        },
      })),
    );
    await Promise.all(changes);
    // Each change is in its writer's reads when it resolves; the other node's arrive by the watch.
    await waitUntil(
      () => a.endpoint(1, name)!.versions.length >= 11 && b.endpoint(1, name)!.versions.length >= 11,
    ).catch(() => undefined);
    const versions = a.endpoint(1, name)!.versions;
    t.equal(versions.length, 11, `round ${round}: a version per change`);
    const texts = versions.map((v) => (v.query as { query: string }).query).sort();
    t.same(
      texts,
      ['SELECT 0', ...Array.from({ length: 10 }, (_, i) => `SELECT ${i + 1}`)].sort(),
      'none lost',
    );
  }
});

async function waitUntil(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
