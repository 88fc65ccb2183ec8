/**
 * The JetStream bus's publishing against a real nats-server: requests that arrive together share messages
 * (a flight), in arrival order per lane, and each request is answered only once its lanes are acknowledged.
 */
import t from 'tap';
import { connect, type MsgHdrs } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { decodeBatch } from '../../src/bus/jetstream/codec.ts';
import { JetStreamBus } from '../../src/bus/jetstream/jetstream-bus.ts';
import { STREAM } from '../../src/bus/jetstream/streams.ts';
import type { CapturedEvent, EventBatch, Lane } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { AppError } from '../../src/errors/app-error.ts';
import { startNatsServer } from '../helpers/nats-server.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const metrics = new Metrics();
const bus = await JetStreamBus.connect(
  { natsUrl: nats.url, busPartitions: 1, busCompression: 'deflate', publishTimeoutMs: 5000 },
  { metrics, logger: createLogger('silent') },
);
t.teardown(() => bus.close());
const nc = await connect({ servers: nats.url });
t.teardown(() => nc.close());
const jsm = await jetstreamManager(nc);

let next = 0;
const event = (distinctId: string): CapturedEvent => {
  const i = next++;
  return {
    projectId: 1,
    uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
    event: 'flight',
    distinctId,
    timestamp: 1_767_225_600_000 + i,
    properties: { n: i, $browser: 'Firefox' },
    receivedAt: 1_767_225_600_000,
  };
};
const request = (lane: Lane, events: number): EventBatch => ({
  lane,
  events: Array.from({ length: events }, (_, i) => event(`u-${i % 3}`)),
  warnings: [],
});

/** The stream's messages from sequence `from` on, decoded, with their subjects. */
async function messagesFrom(from: number): Promise<{ subject: string; batch: EventBatch }[]> {
  const { state } = await jsm.streams.info(STREAM);
  const out: { subject: string; batch: EventBatch }[] = [];
  for (let seq = from; seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(STREAM, { seq });
    if (!m) continue;
    const headers = m.header as MsgHdrs | undefined;
    out.push({ subject: m.subject, batch: decodeBatch(m.data, headers?.get('Content-Encoding')) });
  }
  return out;
}

async function lastSeq(): Promise<number> {
  return (await jsm.streams.info(STREAM)).state.last_seq;
}

t.test('requests published in one turn fly together: one message per lane, in arrival order', async (t) => {
  const from = (await lastSeq()) + 1;
  const requests = [
    [request('live', 5)],
    [request('live', 3), request('historical', 4)],
    [request('historical', 2)],
    [request('live', 1)],
  ];
  await Promise.all(requests.map((batches) => bus.publish(batches)));
  const messages = await messagesFrom(from);
  t.same(
    messages.map((m) => m.subject).sort(),
    ['events.historical.0', 'events.live.0'],
    'one message per lane',
  );
  for (const lane of ['live', 'historical'] as const) {
    const sent = requests.flat().filter((b) => b.lane === lane);
    const stored = messages.find((m) => m.batch.lane === lane)!.batch;
    t.same(
      stored.events.map((e) => e.uuid),
      sent.flatMap((b) => b.events.map((e) => e.uuid)),
      `${lane}: every event, in the order the requests came`,
    );
  }
});

t.test('a request published while a flight is out goes with the next one', async (t) => {
  const from = (await lastSeq()) + 1;
  const first = bus.publish([request('live', 2)]);
  // After the first flight has left (the end of this turn), before its ack.
  await new Promise((resolve) => setImmediate(resolve));
  const later = [bus.publish([request('live', 2)]), bus.publish([request('live', 2)])];
  await Promise.all([first, ...later]);
  const sizes = (await messagesFrom(from)).map((m) => m.batch.events.length);
  t.same(sizes, [2, 4], 'the two later requests share the second message');
});

t.test('with two flights out and unacknowledged, later requests gather for the third', async (t) => {
  const from = (await lastSeq()) + 1;
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  await nats.pause(); // nothing is acknowledged until it resumes
  t.teardown(() => nats.resume());
  const sent = [bus.publish([request('live', 2)])];
  await turn();
  sent.push(bus.publish([request('live', 2)]));
  await turn();
  // Two flights are out: these wait, each in a turn of its own, and then go together.
  sent.push(bus.publish([request('live', 1)]));
  await turn();
  sent.push(bus.publish([request('live', 3)]));
  await turn();
  nats.resume();
  await Promise.all(sent);
  t.same(
    (await messagesFrom(from)).map((m) => m.batch.events.length),
    [2, 2, 4],
  );
});

t.test('a lone request is stored alone, so its retry has the same message id', async (t) => {
  const from = (await lastSeq()) + 1;
  const batches = [request('live', 4)];
  await bus.publish(batches);
  await bus.publish(batches);
  t.equal((await lastSeq()) - from + 1, 1, "JetStream's duplicate window dropped the second copy");
});

t.test("requests past a flight's 2,000 events wait for the next flight", async (t) => {
  const from = (await lastSeq()) + 1;
  // 2,000 events fly at most (the first request always does): 1,500 + 400, then 300.
  await Promise.all([
    bus.publish([request('live', 1500)]),
    bus.publish([request('live', 400)]),
    bus.publish([request('live', 300)]),
  ]);
  t.same(
    (await messagesFrom(from)).map((m) => m.batch.events.length),
    [1900, 300],
  );
});

t.test('when NATS is gone, every waiting request is answered 503', async (t) => {
  const down = await startNatsServer();
  const lonely = await JetStreamBus.connect(
    { natsUrl: down.url, busPartitions: 1, busCompression: 'deflate', publishTimeoutMs: 1000 },
    { metrics: new Metrics(), logger: createLogger('silent') },
  );
  await down.close();
  const results = await Promise.allSettled([
    lonely.publish([request('live', 1)]),
    lonely.publish([request('live', 1)]),
  ]);
  for (const r of results) {
    t.equal(r.status, 'rejected');
    if (r.status === 'rejected') t.equal((r.reason as AppError).code, 'unavailable');
  }
  await lonely.close();
  t.pass('and the bus closes without the server');
});
