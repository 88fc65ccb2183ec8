/**
 * Ingest processes sharing the live partitions by lease (issue 28, part 3), on a real nats-server: several
 * consumer sets in this process, each with its own NATS connection, as separate `weir ingest` processes would
 * be. Their shares split; one whose connection is closed without a goodbye (as kill -9 leaves it) has its
 * partitions consumed again by the others within the deadline; the order of each distinct id's events holds
 * through the takeover and through members joining and leaving; and a batch a dead member stored but never
 * acknowledged is not stored twice (real ingest on the embedded chDB store).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import t, { type Test } from 'tap';
import { NatsLink } from '../../src/bus/jetstream/connection.ts';
import type { BatchSink } from '../../src/bus/jetstream/consumer.ts';
import { IngestConsumers } from '../../src/bus/jetstream/ingest-consumers.ts';
import { leaseUnits } from '../../src/bus/jetstream/partition-consumers.ts';
import { ensureStream } from '../../src/bus/jetstream/streams.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { partitionOf } from '../../src/core/partition.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import {
  LeaseHarness,
  Recorder,
  balanced,
  checkOrder,
  count,
  crash,
  distinct,
  event,
  metric,
  publishing,
  type Member,
} from '../helpers/lease-members.ts';
import { startNatsCluster } from '../helpers/nats-server.ts';
import { waitFor } from '../helpers/weir.ts';

/** Short, so a takeover happens within a test: heartbeats every 400 ms, a silent member's units free after 2 s. */
const LEASE_MS = 2000;
const logLines: string[] = [];
const logger = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      if (logLines.length > 5000) logLines.splice(0, 1000);
      done();
    },
  }),
);
const h = new LeaseHarness(LEASE_MS, logger);
t.teardown(async () => {
  // What the members logged, when something failed: the takeovers and hand-overs say what happened.
  if (!t.passing()) process.stderr.write(logLines.slice(-200).join(''));
  await h.close();
});

const PARTITIONS = 8;
const UNITS = leaseUnits(PARTITIONS).length;
const IDS = Array.from({ length: 24 }, (_, i) => `user-${i}`);

t.test('members joining and leaving cleanly rebalance: nothing lost, reordered or given twice', async (t) => {
  const server = await h.nats();
  const bus = await h.publisher(server.url, PARTITIONS);
  const rec = new Recorder(h);
  const a = await h.join(server.url, 'a', rec.sink('a'), PARTITIONS);
  await balanced([a], UNITS);
  const load = publishing(bus, IDS);
  const b = await h.join(server.url, 'b', rec.sink('b'), PARTITIONS);
  await balanced([a, b], UNITS);
  const c = await h.join(server.url, 'c', rec.sink('c'), PARTITIONS);
  const shares = await balanced([a, b, c], UNITS);
  t.same(
    shares.map((s) => s.length),
    [3, 3, 3],
    `three members hold three units each (${JSON.stringify(shares)})`,
  );
  t.equal(
    (await metric(a.metrics, 'weir_bus_partitions_held')) +
      (await metric(b.metrics, 'weir_bus_partitions_held')),
    6,
    'held, as measured',
  );
  await b.consumers.stop();
  await balanced([a, c], UNITS);
  const rounds = await load.stop();
  await waitFor(
    () => Promise.resolve(count(rec.log) >= rounds * IDS.length ? true : undefined),
    15_000,
    'all',
  );
  t.equal(checkOrder(t, rec.log, IDS, rounds), 0, 'nothing handed on twice');
  for (const m of [a, b, c])
    t.equal(await metric(m.metrics, 'weir_bus_partition_takeovers_total'), 0, `no takeover by ${m.name}`);
});

t.test(
  'a member gone without a goodbye: its partitions consumed again by the others, in order',
  async (t) => {
    const server = await h.nats();
    await takeover(t, server.url, [server.url, server.url, server.url]);
  },
);

t.test('the same on a three-node cluster, each member on a node of its own', async (t) => {
  const cluster = await startNatsCluster(3);
  h.later(() => cluster.close());
  await takeover(
    t,
    cluster.url,
    cluster.nodes.map((n) => n.url),
  );
  const link = await NatsLink.open(cluster.url, 'check', {
    metrics: new Metrics({ defaultMetrics: false }),
    logger,
  });
  h.later(() => link.close());
  const info = await (await jetstreamManager(link.nc)).streams.info('KV_weir_ingest');
  t.equal(info.config.num_replicas, 3, 'the lease bucket has three replicas');
});

/**
 * Three members on `memberUrls` share the units under load; c stops finishing batches and its connection is
 * closed without a goodbye. Its units must be consumed again by a and b within the deadline, each id's events
 * still in order, and what c never finished given again, flagged as perhaps stored.
 */
async function takeover(t: Test, busUrl: string, memberUrls: readonly string[]): Promise<void> {
  const bus = await h.publisher(busUrl, PARTITIONS);
  const rec = new Recorder(h);
  const members: Member[] = [];
  for (const [i, name] of ['a', 'b', 'c'].entries())
    members.push(await h.join(memberUrls[i]!, name, rec.sink(name), PARTITIONS));
  const [a, b, c] = members as [Member, Member, Member];
  await balanced(members, UNITS);
  const load = publishing(bus, IDS);
  await waitFor(() => Promise.resolve(count(rec.log) >= 20 * IDS.length ? true : undefined), 15_000, 'load');
  // c stops finishing batches, and dies with some in flight: handed on, never acknowledged.
  const cUnits = c.consumers.held();
  rec.frozen.add('c');
  const frozenAt = rec.log.length;
  await waitFor(
    () => Promise.resolve(rec.log.slice(frozenAt).some((h) => h.member === 'c') ? true : undefined),
    10_000,
    'c to be handed a batch it will never finish',
  );
  await crash(c);
  const crashedAt = Date.now();
  await balanced([a, b], UNITS, 10_000);
  const tookMs = Date.now() - crashedAt;
  // Each of c's live partitions is consumed again: a batch of it handed to a or b after the crash.
  const cPartitions = cUnits.filter((u) => u !== 'historical').map((u) => Number(u.slice('live-'.length)));
  const resumed = await waitFor(
    () => {
      const after = rec.log.filter((h) => h.at >= crashedAt && h.member !== 'c');
      const seen = new Set(
        after.flatMap((h) => h.events.map((e) => partitionOf(1, e.distinctId, PARTITIONS))),
      );
      return Promise.resolve(cPartitions.every((p) => seen.has(p)) ? Date.now() - crashedAt : undefined);
    },
    10_000,
    `c's partitions (${cPartitions.join(', ')}) consumed again`,
  );
  t.ok(
    resumed < 10_000,
    `c's units held by the others ${tookMs} ms after the crash, consumed ${resumed} ms after`,
  );
  t.equal(
    (await metric(a.metrics, 'weir_bus_partition_takeovers_total')) +
      (await metric(b.metrics, 'weir_bus_partition_takeovers_total')),
    cUnits.length,
    'each of c’s units counted as a takeover',
  );
  const rounds = await load.stop();
  await waitFor(
    () =>
      Promise.resolve(
        distinct(rec.log.filter((h) => !h.unfinished)) >= rounds * IDS.length ? true : undefined,
      ),
    15_000,
    'every event handed on',
  );
  checkOrder(t, rec.log, IDS, rounds);
  // What c never finished came again to a or b, flagged as perhaps stored.
  const unfinished = rec.log.filter((h) => h.unfinished).flatMap((h) => h.events.map((e) => e.uuid));
  const flagged = new Set(
    rec.log.filter((h) => h.member !== 'c' && h.maybeStored).flatMap((h) => h.events.map((e) => e.uuid)),
  );
  t.ok(unfinished.length > 0, `c died with ${unfinished.length} events unfinished`);
  t.same(
    unfinished.filter((u) => !flagged.has(u)),
    [],
    'each was given again to the others, flagged as perhaps stored',
  );
}

t.test(
  'the layout before shared partitions is taken over: what its consumer left is read, flagged',
  async (t) => {
    const server = await h.nats();
    const link = await NatsLink.open(server.url, 'old', {
      metrics: new Metrics({ defaultMetrics: false }),
      logger,
    });
    h.later(() => link.close());
    const jsm = await jetstreamManager(link.nc);
    await ensureStream(jsm, { replicas: 1, replicasConfigured: false, duplicateWindowMs: 120_000 });
    // The lane-wide consumer an older ingest made, and batches it took and never acknowledged.
    await jsm.consumers.add('EVENTS', {
      durable_name: 'ingest-live',
      filter_subject: 'events.live.>',
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
    });
    const bus = await h.publisher(server.url, 4);
    const ids = IDS.slice(0, 8);
    for (let n = 0; n < 5; n++)
      await bus.publish([{ lane: 'live', events: ids.map((id) => event(id, n)), warnings: [] }]);
    const old = await jetstream(link.nc).consumers.get('EVENTS', 'ingest-live');
    const taken = await old.fetch({ max_messages: 3, expires: 2000 });
    let unacked = 0;
    for await (const _ of taken) if (++unacked === 3) break;
    t.equal(unacked, 3, 'the old consumer holds three batches unacknowledged');

    const rec = new Recorder(h);
    const a = await h.join(server.url, 'a', rec.sink('a'), 4);
    await balanced([a], 5);
    await bus.publish([{ lane: 'live', events: ids.map((id) => event(id, 5)), warnings: [] }]);
    await waitFor(
      () => Promise.resolve(count(rec.log) >= 6 * ids.length ? true : undefined),
      10_000,
      'all read',
    );
    checkOrder(t, rec.log, ids, 6);
    const flagged = rec.log.filter((h) => h.maybeStored).flatMap((h) => h.events.map((e) => Number(e.event)));
    t.ok(
      flagged.length >= 5 * ids.length - 1 && flagged.every((n) => n < 5),
      'what was in the stream before the takeover is flagged as perhaps stored; what came after is not',
    );
    const names: string[] = [];
    for await (const c of jsm.consumers.list('EVENTS')) names.push(c.name);
    t.same(
      names.sort(),
      [
        'ingest-historical',
        'ingest-live-0',
        'ingest-live-1',
        'ingest-live-2',
        'ingest-live-3',
        'ingest-overflow',
      ],
      'the lane-wide consumer is gone; each partition has its own',
    );
    t.same(a.consumers.held().length, 5);
  },
);

t.test('a partition count other than the one recorded is refused, by capture and by ingest', async (t) => {
  const server = await h.nats();
  await h.publisher(server.url, 8);
  const refused =
    /WEIR_BUS_PARTITIONS is 4 here, but the bus was set up with 8 partitions.*WEIR_BUS_PARTITIONS=8/;
  await t.rejects(h.publisher(server.url, 4), refused, 'capture');
  const metrics = new Metrics({ defaultMetrics: false });
  await t.rejects(
    IngestConsumers.start(
      { natsUrl: server.url, busPartitions: 4, busAckWaitMs: 30_000, busLeaseMs: LEASE_MS },
      { sink: new Recorder(h).sink('z'), metrics, logger },
    ),
    refused,
    'ingest',
  );
});

t.test('a batch the dead member stored but never acknowledged is not stored twice', async (t) => {
  const server = await h.nats();
  const dataDir = await mkdtemp(join(tmpdir(), 'weir-partition-leases-'));
  h.later(() => rm(dataDir, { recursive: true, force: true }));
  const deps = { logger, metrics: new Metrics({ defaultMetrics: false }) };
  const store = await openEmbeddedStore(
    { dataDir, storeFsync: false, storeMaxPendingMb: 64, storeApplyIntervalMs: 60_000 },
    deps,
  );
  h.later(() => store.close());
  // Two ingests on one store, each with its own duplicate window, as two processes would have.
  const ingest = (metrics: Metrics): IngestService =>
    new IngestService(
      { ingestPartitions: 4, commitMaxRows: 50_000, dedupWindow: 100_000 },
      { store, metrics, logger },
    );
  const yMetrics = new Metrics({ defaultMetrics: false });
  const ix = ingest(new Metrics({ defaultMetrics: false }));
  const iy = ingest(yMetrics);
  await ix.start(0);
  await iy.start(0);

  // x stores its first batch and dies before acknowledging it; its second it never gets to store.
  let handed = 0;
  const hung: (() => void)[] = [];
  h.later(() => Promise.resolve(hung.forEach((r) => r())));
  const xSink: BatchSink = {
    async handle(batch, origin) {
      if (handed++ === 0) await ix.handle(batch, origin);
      await new Promise<void>((_, reject) => hung.push(() => reject(new Error('test over'))));
    },
  };
  const x = await h.join(server.url, 'x', xSink, 1);
  await balanced([x], 2);
  const bus = await h.publisher(server.url, 1);
  const first = IDS.map((id) => event(id, 0));
  const second = IDS.map((id) => event(id, 1));
  await bus.publish([{ lane: 'live', events: first, warnings: [] }]);
  await waitFor(
    async () => ((await storedCount(store)) === first.length ? true : undefined),
    10_000,
    'x stores',
  );
  await bus.publish([{ lane: 'live', events: second, warnings: [] }]);
  await waitFor(() => Promise.resolve(handed === 2 ? true : undefined), 10_000, 'x handed the second batch');
  await crash(x);

  const y = await h.join(server.url, 'y', iy, 1);
  const third = IDS.map((id) => event(id, 2));
  await bus.publish([{ lane: 'live', events: third, warnings: [] }]);
  const total = first.length + second.length + third.length;
  await waitFor(
    async () => ((await storedCount(store)) >= total ? true : undefined),
    15_000,
    'y stores the rest',
  );
  await waitFor(
    async () => ((await h.streamMessages(server.url)) === 0 ? true : undefined),
    10_000,
    'all acknowledged',
  );
  const [row] = await store.query<{ rows: string; uuids: string }>(
    'SELECT count() AS rows, uniqExact(uuid) AS uuids FROM events',
  );
  t.same(
    { rows: Number(row!.rows), uuids: Number(row!.uuids) },
    { rows: total, uuids: total },
    'each event once',
  );
  t.equal(await metric(y.metrics, 'weir_bus_partition_takeovers_total'), 2, 'y took both of x’s units over');
  t.equal(
    await metric(yMetrics, 'weir_ingest_duplicate_events_total'),
    first.length,
    'the first batch’s events were found stored and dropped; the second’s stored',
  );
  t.equal(y.consumers.held().length, 2, 'y holds both units');
});

async function storedCount(store: { query<T>(sql: string): Promise<T[]> }): Promise<number> {
  const [row] = await store.query<{ n: string }>('SELECT count() AS n FROM events');
  return Number(row!.n);
}
