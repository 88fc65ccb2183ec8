/**
 * Capture → NATS JetStream → ingest → chDB, with a real nats-server: events answered 200 are durable in
 * the stream and land in the store; a retried request is stored once; a historical migration keeps order.
 * (A store that cannot commit: jetstream-store-behind.test.ts.)
 */
import t from 'tap';
import { PostHog } from 'posthog-node';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { metricValue } from '../helpers/roles.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { PROJECT_API_KEY, post, startTestWeir, waitFor } from '../helpers/weir.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const w = await startTestWeir({ WEIR_NATS_URL: nats.url });
t.teardown(() => w.close());

async function count(where: string): Promise<number> {
  const [row] = await w.rows<{ n: string }>(`SELECT count() AS n FROM events WHERE ${where}`);
  return Number(row?.n ?? 0);
}

t.test('posthog-node events travel through JetStream and are stored', async (t) => {
  const client = new PostHog(PROJECT_API_KEY, { host: w.url, flushAt: 20, flushInterval: 0 });
  for (let i = 0; i < 100; i++)
    client.capture({ distinctId: `js-user-${i % 10}`, event: 'via jetstream', properties: { i } });
  await client.shutdown();
  await waitFor(
    async () => ((await count("event = 'via jetstream'")) === 100 ? true : undefined),
    15_000,
    '100 rows',
  );
  t.pass('all 100 stored');
});

t.test('a retried request (same uuids) is stored once', async (t) => {
  const body = JSON.stringify({
    api_key: PROJECT_API_KEY,
    batch: Array.from({ length: 30 }, (_, i) => ({
      event: 'js retry',
      uuid: `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
      properties: { distinct_id: `r-${i % 3}` },
    })),
  });
  for (let attempt = 0; attempt < 3; attempt++) t.equal((await post(`${w.url}/batch/`, body)).status, 200);
  await waitFor(
    async () => ((await count("event = 'js retry'")) >= 30 ? true : undefined),
    15_000,
    '30 rows',
  );
  // Give any duplicate a chance to arrive: wait until the stream is drained (all lanes acked), then count.
  await waitFor(
    async () => {
      const m = await (await fetch(`${w.url}/metrics`)).text();
      return /weir_ingest_pending_events 0/.test(m) || !/weir_ingest_pending_events/.test(m)
        ? true
        : undefined;
    },
    5_000,
    'ingest idle',
  );
  t.equal(await count("event = 'js retry'"), 30);
});

t.test('a historical migration through JetStream keeps its order', async (t) => {
  const n = 5_000;
  const start = Date.UTC(2020, 5, 1);
  for (let b = 0; b < n / 500; b++) {
    const res = await post(
      `${w.url}/batch/`,
      JSON.stringify({
        api_key: PROJECT_API_KEY,
        historical_migration: true,
        batch: Array.from({ length: 500 }, (_, i) => {
          const seq = b * 500 + i;
          return {
            event: 'js historical',
            timestamp: new Date(start + seq * 1000).toISOString(),
            properties: { distinct_id: `h-${seq % 50}`, seq },
          };
        }),
      }),
    );
    t.equal(res.status, 200);
  }
  await waitFor(
    async () => ((await count("event = 'js historical'")) === n ? true : undefined),
    30_000,
    `${n} rows`,
  );
  const rows = await w.rows<{ seq: string }>(
    `SELECT JSONExtractString(properties, 'seq') AS seq FROM events WHERE event = 'js historical' ORDER BY _inserted_at, timestamp`,
  );
  const seqs = rows.map((r) => Number(r.seq));
  t.ok(
    seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
    'stored in the order they were sent',
  );
});

t.test(
  'a message in a format this ingest does not read stays in the stream; a damaged one goes',
  async (t) => {
    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const stored = async (): Promise<{ messages: number; first: number }> => {
      const { state } = await jsm.streams.info('EVENTS');
      return { messages: state.messages, first: state.first_seq };
    };
    await waitFor(
      async () => ((await stored()).messages === 0 ? true : undefined),
      15_000,
      'the stream empty',
    );
    const js = jetstream(nc);
    // A later Weir's batch (version 9), then bytes no Weir wrote.
    const later = await js.publish('events.live.0', Buffer.from('{"v":9,"lane":"live","events":[]}'));
    await js.publish('events.live.0', Buffer.from('not a batch'));
    const naks = async (): Promise<number> =>
      metricValue(await (await fetch(`${w.url}/metrics`)).text(), 'weir_bus_nak_total', 'lane="live"');
    const left = await waitFor(
      async () => {
        const s = await stored();
        return s.messages === 1 && (await naks()) >= 1 ? s : undefined;
      },
      15_000,
      'the damaged message terminated, the later one handed back',
    );
    t.equal(left.first, later.seq, 'the message in a later format is still in the stream');
  },
);
