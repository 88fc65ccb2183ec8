/**
 * Ingest's hand-off order while batches are looked up in the store first: batches are taken in the order they
 * were given, whichever lookup answers first; a failed lookup fails its batch only; and once nothing waits,
 * a batch is taken at once.
 */
import t from 'tap';
import { HandOffOrder } from '../../src/ingest/stored-events.ts';

function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

t.test('batches are taken in the order given, though a later lookup answers first', async (t) => {
  const order = new HandOffOrder();
  const taken: string[] = [];
  const take = (b: string): Promise<void> => {
    taken.push(b);
    return Promise.resolve();
  };
  const first = deferred<string>();
  const second = deferred<string>();
  const done = [
    order.after(first.promise, take),
    order.after(second.promise, take),
    order.after('plain', take),
  ];
  t.ok(order.busy, 'a batch given now would wait');
  second.resolve('second');
  await new Promise((r) => setImmediate(r));
  t.same(taken, [], 'nothing taken before the first lookup answers');
  first.resolve('first');
  await Promise.all(done);
  t.same(taken, ['first', 'second', 'plain']);
  t.notOk(order.busy, 'nothing waits any more');
});

t.test('a failed lookup fails its own batch; the next is still taken in turn', async (t) => {
  const order = new HandOffOrder();
  const taken: string[] = [];
  const take = (b: string): Promise<void> => {
    taken.push(b);
    return Promise.resolve();
  };
  const failing = deferred<string>();
  const a = order.after(failing.promise, take);
  const b = order.after('next', take);
  failing.reject(new Error('store down'));
  await t.rejects(a, /store down/);
  await b;
  t.same(taken, ['next']);
  t.notOk(order.busy);
});

t.test(
  'take is called as soon as its turn comes; the commit it returns is what the caller awaits',
  async (t) => {
    const order = new HandOffOrder();
    const commit = deferred<void>();
    let called = false;
    const handed = order.after('x', () => {
      called = true;
      return commit.promise;
    });
    const next = order.after('y', () => Promise.resolve());
    await next;
    t.ok(called, 'the first was taken before the second, without waiting for its commit');
    let settled = false;
    void handed.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    t.notOk(settled, 'its caller waits for the commit');
    commit.resolve();
    await handed;
  },
);
