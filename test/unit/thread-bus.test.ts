import t from 'tap';
import { ThreadBus, toWire, type ToMain } from '../../src/bus/thread-bus.ts';
import { AppError } from '../../src/errors/app-error.ts';

const batch = { lane: 'live' as const, events: [], warnings: [] };

t.test("a turn's publishes travel as one message; each settles with its own answer", async (t) => {
  const sent: ToMain[] = [];
  const bus = new ThreadBus({ postMessage: (m: ToMain) => sent.push(m) });
  const first = bus.publish([batch]);
  const second = bus.publish([batch, batch]);
  await new Promise((r) => setImmediate(r));
  t.equal(sent.length, 1, 'one message for the turn');
  const message = sent[0]!;
  if (message.type !== 'publish') throw new Error('expected a publish');
  t.same(
    message.items.map((i) => i.batches.length),
    [1, 2],
  );
  const [a, b] = message.items;
  const refused = new AppError('unavailable', {
    detail: 'The store is behind.',
    retryAfterSeconds: 1,
    retriable: true,
    cause: new Error('internal detail that stays on the main thread'),
  });
  bus.settle([{ id: b!.id, error: toWire(refused) }, { id: a!.id }]);
  await t.resolves(first);
  const err = await second.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof AppError, 'the refusal is an AppError again');
  const app = err as AppError;
  t.equal(app.status, 503);
  t.equal(app.code, 'unavailable');
  t.equal(app.message, 'The store is behind.');
  t.equal(app.retryAfterSeconds, 1);
  t.equal(app.retriable, true);
  t.equal(app.cause, undefined, 'the cause does not cross');
});

t.test('an unexpected error crosses as a 500 without its text', (t) => {
  const wire = toWire(new Error('secret path /var/lib/x'));
  t.equal(wire.code, 'server_error');
  t.notMatch(wire.detail, /secret/);
  t.end();
});
