/**
 * What a role says of JetStream's acknowledgements as it connects (docs/operations.md, "Durability of an
 * acknowledgement"), against the real nats-server here (Debian's 2.9.10, which has no sync_interval: always)
 * read through its monitoring port, and with WEIR_REQUIRE_DURABLE_BUS, a role that refuses to start.
 */
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { NonDurableBusError, checkBusDurability } from '../../src/bus/jetstream/durability.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { runWeir, tempDir } from '../helpers/weir.ts';

const nats = await startNatsServer({ monitor: true });
t.teardown(() => nats.close());
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const version = nc.info!.version;
t.comment(`nats-server ${version}`);

t.test("the server's own answer: its version, and its sync setting from /varz", async (t) => {
  const metrics = new Metrics({ defaultMetrics: false });
  const [found] = await checkBusDurability(
    nc,
    { natsMonitorUrl: nats.monitorUrl },
    { logger: createLogger('silent'), metrics },
  );
  t.equal(found!.version, version);
  if (version.startsWith('2.9.')) {
    t.equal(found!.sync, 'interval');
    t.match(found!.problems[0], /cannot sync before it acknowledges \(sync_interval: always came in 2\.10\)/);
  }
  const text = await metrics.registry.metrics();
  t.match(text, /weir_bus_acks_durable 0/);
  t.match(
    text,
    new RegExp(
      `weir_bus_server_info\\{server="${nats.monitorUrl}",version="${version}",sync="interval"\\} 1`,
    ),
  );
});

t.test('a monitoring port that does not answer is said so', async (t) => {
  const [found] = await checkBusDurability(
    nc,
    { natsMonitorUrl: 'http://127.0.0.1:9' },
    { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) },
  );
  t.equal(found!.sync, 'unknown');
  t.match(found!.problems[0], /did not answer \/varz/);
});

t.test('WEIR_REQUIRE_DURABLE_BUS: refused in the process, and a role that will not start', async (t) => {
  await t.rejects(
    checkBusDurability(
      nc,
      { natsMonitorUrl: nats.monitorUrl, requireDurableBus: true },
      { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) },
    ),
    NonDurableBusError,
  );
  const refused = await runWeir(['capture', '--port', '0', '--data-dir', tempDir()], {
    WEIR_NATS_URL: nats.url,
    WEIR_NATS_MONITOR_URL: nats.monitorUrl!,
    WEIR_REQUIRE_DURABLE_BUS: 'true',
    WEIR_LOG_LEVEL: 'warn',
  });
  t.not(refused.code, 0);
  t.match(
    refused.stderr + refused.stdout,
    /WEIR_REQUIRE_DURABLE_BUS is set and JetStream's acknowledgements are not known durable/,
  );
});
