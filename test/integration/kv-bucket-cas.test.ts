/**
 * The compare-and-set of src/kv/ on a three-node nats-server cluster, each writer on a connection (a node) of
 * its own as processes are: of concurrent writers of one record from one revision exactly one wins and the
 * other gets KvConflict, on one replica and on three, whichever condition the server's version chose; and
 * writers of different records never conflict under the per-record condition (each write is one publish).
 * Every publish to a writer's record is counted by a subscription on its own connection. Run on a current
 * server (the per-record condition) and on Debian 12's 2.9.10 (the bucket-wide fallback).
 */
import { randomBytes } from 'node:crypto';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { CasBucket, KvConflict, perRecordConditionHolds } from '../../src/kv/cas-bucket.ts';
import { startNatsCluster } from '../helpers/nats-server.ts';

/** A cluster's connections, one per node: three processes, each on a server of its own. */
interface Nodes {
  readonly connections: readonly NatsConnection[];
  readonly version: string | undefined;
  readonly jsm: JetStreamManager;
}

async function startNodes(t: Test, binary: 'current' | 'legacy'): Promise<Nodes> {
  const cluster = await startNatsCluster(3, { binary });
  t.teardown(() => cluster.close());
  const connections: NatsConnection[] = [];
  for (const node of cluster.nodes) connections.push(await connect({ servers: node.url }));
  t.teardown(() => Promise.all(connections.map((nc) => nc.close())));
  return {
    connections,
    version: connections[0]!.info?.version,
    jsm: await jetstreamManager(connections[0]!),
  };
}

/**
 * A record's last write as the stream's leader has it (a replica's direct get may lag): its value (undefined:
 * a delete marker) and revision.
 */
async function leaderGet(
  { jsm }: Nodes,
  bucket: CasBucket,
  key: string,
): Promise<{ value: unknown; revision: number } | undefined> {
  const m = await jsm.streams.getMessage(`KV_${bucket.name}`, { last_by_subj: `$KV.${bucket.name}.${key}` });
  if (m === null) return undefined;
  return { value: m.header?.get('KV-Operation') ? undefined : m.json(), revision: m.seq };
}

/** The bucket as each connection opens it, trying again while the cluster cannot place its replicas yet. */
async function openOnEach({ connections }: Nodes, replicas: number): Promise<CasBucket[]> {
  const bucket = `cas_r${replicas}_${randomBytes(3).toString('hex')}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const buckets: CasBucket[] = [];
      for (const nc of connections) buckets.push(await CasBucket.open(nc, { bucket, replicas }));
      return buckets;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Of two writes at once, the one that won (its index, its revision); the other must have lost with KvConflict. */
async function oneWins(
  t: Test,
  writes: [Promise<number>, Promise<number>],
  what: string,
): Promise<{ winner: number; revision: number }> {
  const settled = await Promise.allSettled(writes);
  for (const s of settled)
    if (s.status === 'rejected' && !(s.reason instanceof KvConflict)) throw s.reason as Error;
  const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [{ winner: i, revision: s.value }] : []));
  t.equal(won.length, 1, `${what}: exactly one wins, the other gets KvConflict`);
  return won[0] ?? { winner: -1, revision: -1 };
}

/** The publishes to `key` made on `nc` (a subscription on the same connection sees every one). */
async function countPublishes(nc: NatsConnection, bucket: string, key: string): Promise<Msg[]> {
  const seen: Msg[] = [];
  nc.subscribe(`$KV.${bucket}.${key}`, {
    callback: (_err, m) => {
      seen.push(m);
    },
  });
  await nc.flush();
  return seen;
}

/** Every case on one cluster of `binary`'s servers. */
function suite(t: Test, nodes: Nodes): void {
  for (const replicas of [1, 3]) {
    t.test(`R${replicas}: two writers of one record from one revision`, async (t) => {
      const [a, b] = await openOnEach(nodes, replicas);
      const perRecord = perRecordConditionHolds(nodes.version, replicas);
      t.equal(a!.bucketWide, !perRecord, 'the condition the version and replicas call for');
      t.comment(`nats-server ${nodes.version}, R${replicas}: bucket-wide condition ${a!.bucketWide}`);
      for (let round = 0; round < 10; round++) {
        const key = `race.r${round}`;
        const made = await oneWins(t, [a!.create(key, { by: 'a' }), b!.create(key, { by: 'b' })], 'create');
        const set = await oneWins(
          t,
          [a!.set(key, { n: 'a' }, made.revision), b!.set(key, { n: 'b' }, made.revision)],
          'set',
        );
        t.same(
          await leaderGet(nodes, a!, key),
          { value: { n: set.winner === 0 ? 'a' : 'b' }, revision: set.revision },
          "the winner's value is there",
        );
        const now = set.revision;
        await oneWins(
          t,
          [a!.set(key, undefined, now), b!.set(key, { n: 'late' }, now)],
          'delete against set',
        );
      }
    });
  }

  t.test('a record deleted can be created again, once', async (t) => {
    const [a, b] = await openOnEach(nodes, 3);
    const first = await a!.create('again', 1);
    await t.rejects(b!.create('again', 2), KvConflict, 'a live record is no create');
    const deleted = await b!.set('again', undefined, first);
    t.ok(deleted > first);
    t.same(await leaderGet(nodes, a!, 'again'), { value: undefined, revision: deleted }, 'a delete marker');
    await oneWins(t, [a!.create('again', 3), b!.create('again', 4)], 'a create over a delete marker');
    await t.rejects(a!.set('again', 5, deleted), KvConflict, 'the marker is no longer the last write');
  });

  t.test('a write conditional on the bucket fails once anything else was written', async (t) => {
    const [a, b] = await openOnEach(nodes, 3);
    const last = await a!.lastSequence();
    await b!.write('other', { any: 'thing' });
    await t.rejects(a!.setIfBucketAt('lease', { owner: 'a' }, last), KvConflict);
    const seq = await a!.setIfBucketAt('lease', { owner: 'a' }, await a!.lastSequence());
    t.same(await leaderGet(nodes, b!, 'lease'), { value: { owner: 'a' }, revision: seq });
  });

  for (const replicas of [1, 3]) {
    t.test(`R${replicas}: writers of different records do not conflict`, async (t) => {
      const buckets = await openOnEach(nodes, replicas);
      const wide = buckets[0]!.bucketWide;
      const bucket = buckets[0]!.name;

      // A revision read before another record's write still holds for a per-record condition.
      const [a, b] = buckets;
      const mine = await a!.create('own.a', 0);
      await b!.create('own.b', 0);
      t.ok(await a!.set('own.a', 1, mine), 'a write from a revision older than the bucket lands');

      const each = 20;
      const seen = await Promise.all(
        buckets.map((w, i) => countPublishes(nodes.connections[i]!, bucket, `w.${i}`)),
      );
      await Promise.all(
        buckets.map(async (w, i) => {
          let revision = await w.create(`w.${i}`, { n: 0 });
          for (let n = 1; n < each; n++) revision = await w.set(`w.${i}`, { n }, revision);
        }),
      );
      for (const [i, w] of buckets.entries())
        t.same(
          (await leaderGet(nodes, w, `w.${i}`))?.value,
          { n: each - 1 },
          `writer ${i}: every write landed`,
        );
      await Promise.all(nodes.connections.map((nc) => nc.flush()));
      const attempts = seen.map((s) => s.length);
      const onBucket = seen.flat().filter((m) => m.headers?.get('Nats-Expected-Last-Sequence'));
      if (!wide) {
        t.same(
          attempts,
          buckets.map(() => each),
          'one publish per write: no write was retried',
        );
        t.equal(onBucket.length, 0, 'no publish was conditional on the bucket');
        t.ok(
          seen.flat().every((m) => m.headers?.get('Nats-Expected-Last-Subject-Sequence') !== ''),
          'each was conditional on its record',
        );
      } else {
        t.equal(
          onBucket.length,
          seen.flat().length,
          'bucket-wide: every publish is conditional on the bucket',
        );
        t.comment(`bucket-wide: ${attempts.join(', ')} publishes for ${each} writes each`);
      }
    });
  }
}

for (const binary of ['current', 'legacy'] as const)
  t.test(`nats-server ${binary}`, async (t) => {
    const nodes = await startNodes(t, binary);
    t.comment(`nats-server ${nodes.version}`);
    suite(t, nodes);
  });
