import t from 'tap';
import { ChdbGate } from '../../src/store/embedded/chdb-gate.ts';

/** A call the test finishes by hand, recording when it started. */
function controlled(log: string[], name: string): { work: () => Promise<string>; finish: () => void } {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    work: async () => {
      log.push(`start ${name}`);
      await done;
      return name;
    },
    finish: () => finish(),
  };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

t.test('one call at a time; the store’s work goes before readers, each in arrival order', async (t) => {
  const log: string[] = [];
  const waiting: number[] = [];
  const gate = new ChdbGate({ onWaiting: (n) => waiting.push(n) });
  const first = controlled(log, 'reader 1');
  const reader2 = controlled(log, 'reader 2');
  const reader3 = controlled(log, 'reader 3');
  const store1 = controlled(log, 'store 1');
  const store2 = controlled(log, 'store 2');
  const results = [
    gate.run('reader', first.work),
    gate.run('reader', reader2.work),
    gate.run('reader', reader3.work),
    gate.run('store', store1.work),
    gate.run('store', store2.work),
  ];
  await turn();
  t.same(log, ['start reader 1'], 'only the first call runs');
  t.equal(gate.waiting, 4);
  for (const c of [first, store1, store2, reader2, reader3]) {
    c.finish();
    await turn();
  }
  t.same(await Promise.all(results), ['reader 1', 'reader 2', 'reader 3', 'store 1', 'store 2']);
  t.same(log, ['start reader 1', 'start store 1', 'start store 2', 'start reader 2', 'start reader 3']);
  t.equal(gate.waiting, 0);
  t.same(waiting, [1, 2, 3, 4, 3, 2, 1, 0], 'the waiting count is told on every change');
});

t.test('a call that fails, or throws before it starts, gives its turn to the next', async (t) => {
  const gate = new ChdbGate();
  const failing = gate.run('store', () => Promise.reject(new Error('engine said no')));
  const throwing = gate.run('store', () => {
    throw new Error('bad statement');
  });
  const next = gate.run('reader', () => Promise.resolve('ran'));
  await t.rejects(failing, /engine said no/);
  await t.rejects(throwing, /bad statement/);
  t.equal(await next, 'ran');
  t.equal(gate.waiting, 0);
  t.equal(await gate.run('reader', () => Promise.resolve('again')), 'again', 'the gate is free afterwards');
});

t.test('a larger limit lets that many calls run at once', async (t) => {
  const log: string[] = [];
  const gate = new ChdbGate({ limit: 2 });
  const a = controlled(log, 'a');
  const b = controlled(log, 'b');
  const c = controlled(log, 'c');
  const all = [gate.run('reader', a.work), gate.run('reader', b.work), gate.run('reader', c.work)];
  await turn();
  t.same(log, ['start a', 'start b']);
  b.finish();
  await turn();
  t.same(log, ['start a', 'start b', 'start c']);
  a.finish();
  c.finish();
  t.same(await Promise.all(all), ['a', 'b', 'c']);
});

t.test('a call that waited past its limit is given up unrun when its turn comes', async (t) => {
  let now = 0;
  const waiting: number[] = [];
  const gate = new ChdbGate({ now: () => now, onWaiting: (n) => waiting.push(n) });
  const log: string[] = [];
  const running = controlled(log, 'running');
  const first = gate.run('reader', running.work);
  const late = gate.run('reader', () => Promise.resolve('late ran'), 1_000);
  const alsoLate = gate.run('reader', () => Promise.resolve('also late ran'), 1_500);
  const patient = gate.run('reader', () => Promise.resolve('patient ran'));
  now = 1_200;
  running.finish();
  t.equal(await first, 'running');
  await t.rejects(late, { name: 'EngineWaitTimeout', waitedMs: 1_200 }, 'waited 1.2 s of the 1 s allowed');
  t.equal(await alsoLate, 'also late ran', 'within its own limit, it runs');
  t.equal(await patient, 'patient ran');
  const lastOnly = controlled(log, 'last');
  const last = gate.run('reader', lastOnly.work);
  const expiring = gate.run('store', () => Promise.resolve('never'), 10);
  now = 2_000;
  lastOnly.finish();
  await last;
  await t.rejects(expiring, /waited 0\.8 s for the engine/);
  t.equal(gate.waiting, 0);
  t.equal(waiting.at(-1), 0, 'the count is told when the only waiting call is given up');
  t.equal(await gate.run('reader', () => Promise.resolve('free')), 'free');
});

t.test('a failed call is cleared after, in its own turn, before the next call starts', async (t) => {
  const log: string[] = [];
  /** A call that logs its name and settles as told. */
  const call =
    (name: string, fails = false) =>
    () => {
      log.push(name);
      return fails ? Promise.reject(new Error(`${name} failed mid-answer`)) : Promise.resolve(name);
    };
  const gate = new ChdbGate({ clear: call('clear') });
  const failing = gate.run('reader', call('failing', true));
  const next = gate.run('store', call('next'));
  await t.rejects(failing, /^failing failed mid-answer$/, 'the caller hears its own error');
  t.equal(await next, 'next');
  t.equal(await gate.run('reader', call('fine')), 'fine');
  t.same(log, ['failing', 'clear', 'next', 'fine'], 'nothing is cleared after a call that succeeds');
});

t.test('a clear that fails is owed: the next call clears first, and fails if it cannot', async (t) => {
  const log: string[] = [];
  const clearing = ['refused', 'refused again', 'ok'];
  const gate = new ChdbGate({
    clear: () => {
      const outcome = clearing.shift();
      log.push(`clear ${outcome}`);
      return outcome === 'ok' ? Promise.resolve() : Promise.reject(new Error(`clear ${outcome}`));
    },
  });
  const call = (name: string) => () => {
    log.push(name);
    return Promise.resolve(name);
  };
  await t.rejects(
    gate.run('reader', () => Promise.reject(new Error('failed'))),
    /^failed$/,
    'the failed call still answers with its own error',
  );
  // Its answer would begin with what the failed call left: it is not run.
  await t.rejects(gate.run('reader', call('refused')), /clear refused again/);
  t.equal(await gate.run('reader', call('after')), 'after');
  t.equal(await gate.run('reader', call('clean')), 'clean');
  t.same(log, ['clear refused', 'clear refused again', 'clear ok', 'after', 'clean']);
  t.equal(gate.waiting, 0);
});
