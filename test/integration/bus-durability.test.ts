/**
 * What a role says of JetStream's acknowledgements as it connects (docs/operations.md, "Durability of an
 * acknowledgement"), against real servers read through their monitoring ports, and the proof behind it: with
 * `sync_interval: always` the server fsyncs the stream's block file between receiving each publish and
 * acknowledging it (strace attached to the server), and with the default it does not.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { NonDurableBusError, checkBusDurability } from '../../src/bus/jetstream/durability.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { startNatsServer, type NatsServer } from '../helpers/nats-server.ts';
import { runWeir, tempDir, waitFor } from '../helpers/weir.ts';

async function serve(
  t: Test,
  options: Parameters<typeof startNatsServer>[0],
): Promise<[NatsServer, NatsConnection]> {
  const nats = await startNatsServer({ monitor: true, ...options });
  t.teardown(() => nats.close());
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  t.comment(`nats-server ${nats.version}${options?.syncAlways ? ', sync_interval: always' : ''}`);
  return [nats, nc];
}

const check = (nc: NatsConnection, nats: NatsServer, metrics = new Metrics({ defaultMetrics: false })) =>
  checkBusDurability(nc, { natsMonitorUrl: nats.monitorUrl }, { logger: createLogger('silent'), metrics });

interface Fsync {
  readonly path: string;
  /** Start and end, in epoch milliseconds (strace's clock, the machine's real-time clock as Date's). */
  readonly start: number;
  readonly end: number;
}

/** The fsync and fdatasync calls of an `strace -f -y -ttt -T` log, their split (unfinished) halves joined. */
function parseFsyncs(log: string): Fsync[] {
  const open = new Map<string, { path: string; start: number }>();
  const out: Fsync[] = [];
  for (const line of log.split('\n')) {
    const whole = /^(\d+)\s+([\d.]+) f(?:data)?sync\(\d+<([^>]*)>\)\s+= -?\d+.*<([\d.]+)>$/.exec(line);
    if (whole) {
      const start = Number(whole[2]) * 1000;
      out.push({ path: whole[3]!, start, end: start + Number(whole[4]) * 1000 });
      continue;
    }
    const begun = /^(\d+)\s+([\d.]+) f(?:data)?sync\(\d+<([^>]*)> <unfinished \.\.\.>$/.exec(line);
    if (begun) {
      open.set(begun[1]!, { path: begun[3]!, start: Number(begun[2]) * 1000 });
      continue;
    }
    const resumed = /^(\d+)\s+[\d.]+ <\.\.\. f(?:data)?sync resumed>.*<([\d.]+)>$/.exec(line);
    const first = resumed ? open.get(resumed[1]!) : undefined;
    if (resumed && first) {
      open.delete(resumed[1]!);
      out.push({ path: first.path, start: first.start, end: first.start + Number(resumed[2]) * 1000 });
    }
  }
  return out;
}

/**
 * Publishes `count` messages one at a time to a file stream with strace attached to the server, and says for
 * how many of them an fsync of the stream's message blocks began after the publish was sent and ended before
 * its acknowledgement arrived.
 */
async function syncedBeforeAck(t: Test, nats: NatsServer, nc: NatsConnection, count: number) {
  const stream = 'DURABLE';
  await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: ['durable.>'] });
  const js = jetstream(nc);
  await js.publish('durable.warm', 'warm');
  const traceFile = join(tempDir('weir-strace-'), 'fsync.log');
  const tracer = spawn(
    'strace',
    ['-f', '-y', '-ttt', '-T', '-e', 'trace=fsync,fdatasync', '-o', traceFile, '-p', String(nats.pid)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let attached = '';
  tracer.stderr.on('data', (d: Buffer) => (attached += d.toString()));
  const traced = new Promise((r) => tracer.once('exit', r));
  t.teardown(() => tracer.kill());
  // With -f, strace attaches every thread of the process at once and says so in one line.
  await waitFor(
    () => Promise.resolve(/attached with \d+ threads/.test(attached) ? true : undefined),
    10_000,
    'strace',
  );

  const acks: { sent: number; acked: number }[] = [];
  const now = () => performance.timeOrigin + performance.now();
  for (let i = 0; i < count; i++) {
    const sent = now();
    await js.publish(`durable.${i}`, `event ${i}`);
    acks.push({ sent, acked: now() });
  }
  tracer.kill('SIGINT');
  await traced;
  const blocks = parseFsyncs(readFileSync(traceFile, 'utf8')).filter((f) =>
    f.path.includes(`/streams/${stream}/msgs/`),
  );
  const covered = acks.filter((a) => blocks.some((f) => f.start >= a.sent && f.end <= a.acked)).length;
  return { covered, blockFsyncs: blocks.length };
}

t.test(
  'sync_interval: always: an fsync of the stream between each publish and its ack; Weir says durable',
  async (t) => {
    const [nats, nc] = await serve(t, { syncAlways: true });
    const { covered, blockFsyncs } = await syncedBeforeAck(t, nats, nc, 40);
    t.comment(`${blockFsyncs} fsyncs of the stream's blocks for 40 acknowledged publishes`);
    t.equal(
      covered,
      40,
      'every acknowledgement came after an fsync of the stream that began after its publish',
    );

    const metrics = new Metrics({ defaultMetrics: false });
    const [found] = await check(nc, nats, metrics);
    t.equal(found!.sync, 'always');
    t.same(found!.problems, []);
    t.match(await metrics.registry.metrics(), /weir_bus_acks_durable 1/);
  },
);

t.test(
  'the default sync_interval: acknowledged before any fsync; Weir warns, and /metrics says so',
  async (t) => {
    const [nats, nc] = await serve(t, {});
    const { covered, blockFsyncs } = await syncedBeforeAck(t, nats, nc, 40);
    t.equal(blockFsyncs, 0, 'no fsync of the stream while it acknowledged 40 publishes');
    t.equal(covered, 0);

    const metrics = new Metrics({ defaultMetrics: false });
    const [found] = await check(nc, nats, metrics);
    t.equal(found!.version, nats.version);
    t.equal(found!.sync, 'interval');
    t.equal(found!.syncIntervalMs, 120_000);
    t.match(found!.problems[0], /JetStream syncs every 120 s, after acknowledging/);
    const text = await metrics.registry.metrics();
    t.match(text, /weir_bus_acks_durable 0/);
    t.match(
      text,
      new RegExp(
        `weir_bus_server_info\\{server="${nats.monitorUrl}",version="${nats.version}",sync="interval"\\} 1`,
      ),
    );
  },
);

t.test('a server before 2.10 (Debian 12 ships 2.9.10) cannot sync before it acknowledges', async (t) => {
  const [nats, nc] = await serve(t, { binary: 'legacy' });
  const [found] = await check(nc, nats);
  if (!nats.version.startsWith('2.9.')) {
    t.comment(`the legacy nats-server on PATH is ${nats.version}: its verdict follows from its /varz`);
    t.equal(found!.version, nats.version);
    return;
  }
  t.equal(found!.sync, 'interval');
  t.match(found!.problems[0], /cannot sync before it acknowledges \(sync_interval: always came in 2\.10\)/);
});

t.test('a monitoring port that does not answer is said so', async (t) => {
  const [, nc] = await serve(t, {});
  const [found] = await checkBusDurability(
    nc,
    { natsMonitorUrl: 'http://127.0.0.1:9' },
    { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) },
  );
  t.equal(found!.sync, 'unknown');
  t.match(found!.problems[0], /did not answer \/varz/);
});

t.test(
  'WEIR_REQUIRE_DURABLE_BUS: refused in the process, and a role that will not start; with sync always, it starts',
  async (t) => {
    const [nats, nc] = await serve(t, {});
    await t.rejects(
      checkBusDurability(
        nc,
        { natsMonitorUrl: nats.monitorUrl, requireDurableBus: true },
        { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) },
      ),
      NonDurableBusError,
    );
    const env = {
      WEIR_NATS_MONITOR_URL: nats.monitorUrl!,
      WEIR_REQUIRE_DURABLE_BUS: 'true',
      WEIR_LOG_LEVEL: 'warn',
    };
    const refused = await runWeir(['capture', '--port', '0', '--data-dir', tempDir()], {
      WEIR_NATS_URL: nats.url,
      ...env,
    });
    t.not(refused.code, 0);
    t.match(
      refused.stderr + refused.stdout,
      /WEIR_REQUIRE_DURABLE_BUS is set and JetStream's acknowledgements are not known durable/,
    );

    const [durable, dnc] = await serve(t, { syncAlways: true });
    const found = await checkBusDurability(
      dnc,
      { natsMonitorUrl: durable.monitorUrl, requireDurableBus: true },
      { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) },
    );
    t.same(found[0]!.problems, []);
  },
);
