import t from 'tap';
import { mergeByLane, settleByLane, type WaitingRequest } from '../../src/bus/merge-requests.ts';
import type { CapturedEvent, EventBatch, Lane } from '../../src/core/event.ts';

function event(uuid: string): CapturedEvent {
  return { uuid } as CapturedEvent;
}

/** A waiting request on `lanes`, with what became of it: 'ok', or the error it was rejected with. */
function waiting(...lanes: Lane[]): WaitingRequest & { outcome: () => unknown } {
  let outcome: unknown;
  const batches: EventBatch[] = lanes.map((lane) => ({ lane, events: [event(lane)], warnings: [] }));
  return {
    batches,
    resolve: () => (outcome = 'ok'),
    reject: (err) => (outcome = err),
    outcome: () => outcome,
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

t.test('the requests of a turn become one batch per lane, in arrival order', (t) => {
  const merged = mergeByLane([waiting('live'), waiting('overflow', 'live'), waiting('live')]);
  t.same(
    merged.map((b) => [b.lane, b.events.map((e) => e.uuid)]),
    [
      ['live', ['live', 'live', 'live']],
      ['overflow', ['overflow']],
    ],
  );
  t.end();
});

/** Four requests (live; live and overflow; overflow; live) waiting on two lanes that the test settles. */
function fourRequests(failure?: (err: unknown) => unknown) {
  const live = deferred();
  const overflow = deferred();
  const requests = [waiting('live'), waiting('live', 'overflow'), waiting('overflow'), waiting('live')];
  const lanes = new Map<Lane, Promise<void>>([
    ['live', live.promise],
    ['overflow', overflow.promise],
  ]);
  const all = settleByLane(requests, lanes, failure);
  return { live, overflow, requests, all, outcomes: () => requests.map((w) => w.outcome()) };
}

t.test('each request is answered once every lane it has events on is settled', async (t) => {
  const { live, overflow, all, outcomes } = fourRequests();
  live.resolve();
  await live.promise;
  await new Promise((r) => setImmediate(r));
  t.same(outcomes(), ['ok', undefined, undefined, 'ok'], 'live only: answered');
  overflow.resolve();
  await all;
  t.same(outcomes(), ['ok', 'ok', 'ok', 'ok']);
});

t.test("a lane's failure reaches every request with events on it, each as `failure` makes it", async (t) => {
  const cause = new Error('the disk is full');
  const made: unknown[] = [];
  const { live, overflow, all, outcomes } = fourRequests((err) => {
    const refusal = new Error('refused', { cause: err });
    made.push(refusal);
    return refusal;
  });
  overflow.reject(cause);
  live.resolve();
  await all;
  const [a, b, c, d] = outcomes();
  t.same([a, d], ['ok', 'ok'], 'requests only on the live lane are answered');
  for (const refused of [b, c]) {
    t.type(refused, Error);
    t.equal((refused as Error).cause, cause);
  }
  t.equal(made.length, 2, 'one refusal made for each request refused');
  t.not(b, c);
});
