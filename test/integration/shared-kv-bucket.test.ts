/**
 * The compare-and-set of the shared person bucket on a three-node nats-server cluster with a replicated
 * bucket. Debian's nats-server here (2.9.10) does not hold the per-record condition against concurrent writes
 * there (nats-io/nats-server#4320), so the bucket falls back to the bucket-wide condition: of concurrent
 * writes from one revision exactly one must land. The cost of that fallback against a per-record condition
 * (a single-replica bucket) is reported, not asserted.
 */
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { KvBucket } from '../../src/ingest/shared/kv-bucket.ts';
import { KvConflict } from '../../src/kv/cas-bucket.ts';
import { startNatsCluster } from '../helpers/nats-server.ts';

const cluster = await startNatsCluster(3);
t.teardown(() => cluster.close());
const nc = await connect({ servers: cluster.url.split(',') });
t.teardown(() => nc.close());

/**
 * Opens a bucket, trying again while the cluster cannot place its replicas yet (a node that has not joined the
 * JetStream group right after start, on a loaded machine).
 */
async function open(options: Parameters<typeof KvBucket.open>[1]): Promise<KvBucket> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await KvBucket.open(nc, options);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** How many of `writes` landed; the rest must have lost with KvConflict. */
async function landed(writes: Promise<number>[]): Promise<number> {
  const settled = await Promise.allSettled(writes);
  for (const s of settled)
    if (s.status === 'rejected' && !(s.reason instanceof KvConflict)) throw s.reason as Error;
  return settled.filter((s) => s.status === 'fulfilled').length;
}

t.test('a replicated bucket: of concurrent writes from one revision exactly one lands', async (t) => {
  const bucket = await open({ bucket: 'weir_persons_r3', replicas: 3 });
  t.teardown(() => bucket.close());
  t.comment(`nats-server ${nc.info?.version}: bucket-wide condition ${bucket.bucketWide}`);
  for (let round = 0; round < 5; round++) {
    const key = `p.1.round-${round}`;
    t.equal(await landed(Array.from({ length: 10 }, (_, i) => bucket.create(key, { i }))), 1, 'one create');
    const read = (await bucket.get<{ i: number }>(key))!;
    const writes = Array.from({ length: 10 }, (_, i) => bucket.update(key, { i: 100 + i }, read.revision));
    t.equal(await landed(writes), 1, 'one update');
  }
});

t.test('what the bucket-wide condition costs (reported)', async (t) => {
  const buckets = {
    r1: await open({ bucket: 'weir_persons_cost_r1', replicas: 1, condition: 'record' }),
    r3: await open({ bucket: 'weir_persons_cost_r3', replicas: 3, condition: 'record' }),
    wide: await open({ bucket: 'weir_persons_cost_wide', replicas: 3, condition: 'bucket' }),
  };
  t.teardown(() => Object.values(buckets).forEach((b) => b.close()));
  const rate = async (bucket: KvBucket): Promise<number> => {
    const writers = 4;
    const each = 40;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const key = `p.1.writer-${w}`;
        let revision = await bucket.create(key, { n: 0 });
        for (let n = 1; n < each; n++) {
          try {
            revision = await bucket.update(key, { n }, revision);
          } catch (err) {
            // Bucket-wide, a writer that loses many rounds in a row gives up as the event would: read, retry.
            if (!(err instanceof KvConflict)) throw err;
            revision = (await bucket.get(key))!.revision;
            n--;
          }
        }
      }),
    );
    return Math.round((writers * each) / ((performance.now() - started) / 1000));
  };
  const r1 = await rate(buckets.r1);
  const r3 = await rate(buckets.r3);
  const wide = await rate(buckets.wide);
  t.comment(
    `4 writers of their own records, writes/s: ${r1} per record (R1), ${r3} per record (R3), ` +
      `${wide} bucket-wide (R3)`,
  );
  t.ok(r1 > 0 && r3 > 0 && wide > 0);
});
