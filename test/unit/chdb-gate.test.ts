import t from 'tap';
import {
  ChdbGate,
  EngineThrottled,
  EngineWaitTimeout,
  ReaderGate,
} from '../../src/store/embedded/chdb-gate.ts';

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

/** A read the test finishes by hand, recording the connection it started on. */
function read(log: string[], name: string): { work: (slot: number) => Promise<string>; finish: () => void } {
  const c = controlled(log, name);
  return {
    work: async (slot) => {
      log.push(`${name} on ${slot}`);
      return c.work();
    },
    finish: c.finish,
  };
}

t.test('reader gate: reads run side by side, one connection each, up to the connections', async (t) => {
  const log: string[] = [];
  const gate = new ReaderGate({ connections: 2 });
  const [a, b, c] = [read(log, 'a'), read(log, 'b'), read(log, 'c')];
  const results = [
    gate.run({ project: 1, kind: 'endpoint' }, a.work),
    gate.run({ project: 2, kind: 'endpoint' }, b.work),
    gate.run({ project: 3, kind: 'endpoint' }, c.work),
  ];
  await turn();
  t.same(log, ['a on 0', 'start a', 'b on 1', 'start b'], 'two run at once, on different connections');
  t.equal(gate.waiting, 1);
  b.finish();
  await turn();
  t.same(log.slice(4), ['c on 1', 'start c'], 'the freed connection takes the next read');
  a.finish();
  c.finish();
  t.same(await Promise.all(results), ['a', 'b', 'c']);
  t.equal(gate.waiting, 0);
});

t.test("reader gate: projects take turns, so one project's queue does not hold up another's", async (t) => {
  const log: string[] = [];
  const gate = new ReaderGate({ connections: 1 });
  const first = read(log, 'A1');
  const reads = [first, read(log, 'A2'), read(log, 'A3'), read(log, 'A4')];
  const done = reads.map((r) => gate.run({ project: 1, kind: 'adhoc' }, r.work));
  const b1 = read(log, 'B1');
  const b2 = read(log, 'B2');
  const c1 = read(log, 'C1');
  done.push(gate.run({ project: 2, kind: 'adhoc' }, b1.work));
  done.push(gate.run({ project: 2, kind: 'endpoint' }, b2.work));
  done.push(gate.run({ project: 3, kind: 'endpoint' }, c1.work));
  await turn();
  for (const r of [first, b1, c1, reads[1]!, b2, reads[2]!, reads[3]!]) {
    r.finish();
    await turn();
  }
  await Promise.all(done);
  t.same(
    log.filter((l) => l.startsWith('start')).map((l) => l.slice(6)),
    ['A1', 'B1', 'C1', 'A2', 'B2', 'A3', 'A4'],
    'A, B and C in turn, each in its own arrival order (without turns: A1 A2 A3 A4 B1 B2 C1)',
  );
});

t.test('reader gate: a project runs at most its share at once; other projects take the rest', async (t) => {
  const log: string[] = [];
  const gate = new ReaderGate({ connections: 2, perProject: 1 });
  const heavy = read(log, 'A heavy');
  const a2 = read(log, 'A second');
  const b = [read(log, 'B1'), read(log, 'B2'), read(log, 'B3')];
  const heavyDone = gate.run({ project: 1, kind: 'adhoc' }, heavy.work);
  const a2Done = gate.run({ project: 1, kind: 'adhoc' }, a2.work);
  await turn();
  t.same(log, ['A heavy on 0', 'start A heavy'], "A's second read waits though a connection is free");
  for (const r of b) {
    const done = gate.run({ project: 2, kind: 'adhoc' }, r.work);
    await turn();
    t.ok(log.includes(`start ${r === b[0] ? 'B1' : r === b[1] ? 'B2' : 'B3'}`), 'B runs at once, beside A');
    r.finish();
    await done;
  }
  t.notOk(log.includes('start A second'), "and A's second read still waits for its first");
  heavy.finish();
  await heavyDone;
  await turn();
  t.ok(log.includes('start A second'));
  a2.finish();
  await a2Done;
});

t.test("reader gate: a project's ad-hoc reads past its limit are refused at once", async (t) => {
  const refused: string[] = [];
  const gate = new ReaderGate({
    connections: 3,
    adhocPerProject: 2,
    observer: { refused: (kind, reason) => refused.push(`${kind} ${reason}`) },
  });
  const log: string[] = [];
  const [a, b] = [read(log, 'a'), read(log, 'b')];
  const running = [
    gate.run({ project: 1, kind: 'adhoc' }, a.work),
    gate.run({ project: 1, kind: 'adhoc' }, b.work),
  ];
  const third = gate.run({ project: 1, kind: 'adhoc' }, () => Promise.resolve('ran'));
  await t.rejects(third, EngineThrottled);
  await t.rejects(
    third,
    /project 1 already has 2 ad-hoc queries running or waiting .*WEIR_QUERY_ADHOC_CONCURRENCY/,
  );
  t.equal(
    await gate.run({ project: 2, kind: 'adhoc' }, () => Promise.resolve('other')),
    'other',
    'not another project',
  );
  a.finish();
  b.finish();
  await Promise.all(running);
  const endpoint = gate.run({ project: 1, kind: 'endpoint' }, () => Promise.resolve('endpoint'));
  t.equal(await endpoint, 'endpoint', 'nor an endpoint run');
  t.equal(
    await gate.run({ project: 1, kind: 'adhoc' }, () => Promise.resolve('again')),
    'again',
    'a place comes back when a query ends',
  );
  t.same(refused, ['adhoc adhoc_limit']);
});

t.test('reader gate: a read that waited past its limit is given up unrun; metrics hear of it', async (t) => {
  let now = 0;
  const changes: string[] = [];
  const waits: string[] = [];
  const gate = new ReaderGate({
    connections: 1,
    now: () => now,
    observer: {
      changed: (w, r) =>
        changes.push(`w${w.adhoc + w.endpoint + w.materialize} r${r.adhoc + r.endpoint + r.materialize}`),
      waited: (kind, ms) => waits.push(`${kind} ${ms}`),
    },
  });
  const log: string[] = [];
  const first = read(log, 'first');
  const firstDone = gate.run({ project: 1, kind: 'endpoint' }, first.work);
  const late = gate.run({ project: 2, kind: 'materialize', maxWaitMs: 1000 }, () => Promise.resolve('late'));
  const patient = gate.run({ project: 3, kind: 'adhoc', maxWaitMs: 5000 }, () => Promise.resolve('patient'));
  now = 1200;
  first.finish();
  await firstDone;
  await t.rejects(late, EngineWaitTimeout);
  t.equal(await patient, 'patient');
  t.same(waits, ['endpoint 0', 'materialize 1200', 'adhoc 1200']);
  t.equal(changes.at(-1), 'w0 r0');
});

t.test(
  'reader gate: a failed read clears its own connection before that connection runs again',
  async (t) => {
    const cleared: number[] = [];
    const gate = new ReaderGate({ connections: 2, clear: (slot) => Promise.resolve(cleared.push(slot)) });
    const log: string[] = [];
    const holding = read(log, 'holding');
    const held = gate.run({ project: 1, kind: 'endpoint' }, holding.work);
    await t.rejects(
      gate.run({ project: 2, kind: 'endpoint' }, () => Promise.reject(new Error('engine said no'))),
      /engine said no/,
    );
    t.same(cleared, [1], 'the failed read’s connection, not the other');
    t.equal(await gate.run({ project: 2, kind: 'endpoint' }, (slot) => Promise.resolve(slot)), 1);
    t.same(cleared, [1], 'nothing is cleared after a read that succeeds');
    holding.finish();
    await held;
  },
);
