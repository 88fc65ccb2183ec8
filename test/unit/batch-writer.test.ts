/**
 * The group-commit writer over a store that encodes rows: rows become bytes when written, the writes of one
 * synchronous stretch commit as one insert and so do those made while the store has all the rounds it takes
 * under way, and no row object is kept while a commit waits (checked with a WeakRef and a forced GC: rows
 * kept that long outlive young-generation GCs, which then spend their time copying them).
 */
import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { Row, Store } from '../../src/core/ports.ts';
import { BatchWriter } from '../../src/ingest/batch-writer.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

interface Insert {
  readonly table: string;
  readonly columns: readonly string[] | undefined;
  readonly rows: number;
  readonly text: string;
  readonly done: () => void;
  /** When the insert was asked for (performance.now()). */
  readonly at: number;
}

/** A store that encodes as JSON and commits when the test says so. */
function encodingStore(commitsInFlight = 1): { store: Store; inserts: Insert[] } {
  const inserts: Insert[] = [];
  const store: Store = {
    commitsInFlight,
    soleWriter: true,
    insert: () => Promise.reject(new Error('an encoding store is given encodings')),
    insertValues: () => Promise.reject(new Error('an encoding store is given encodings')),
    encode: (rows) => Buffer.from(JSON.stringify(rows)),
    insertEncoded: (table, rows, chunks, columns) =>
      new Promise<void>((resolve) => {
        inserts.push({
          table,
          columns,
          rows,
          text: chunks.map((c) => c.toString()).join('|'),
          done: resolve,
          at: performance.now(),
        });
      }),
    query: () => Promise.resolve([]),
    command: () => Promise.resolve(),
    deleteRows: () => Promise.resolve(),
    purgeDeleted: () => Promise.resolve(),
    accepting: () => true,
    visible: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return { store, inserts };
}

/** Resolves once `done()` holds, checking after each turn of the event loop. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setImmediate(r));
}

function writer(store: Store): BatchWriter {
  return new BatchWriter(
    { maxRows: 1000 },
    { store, metrics: new Metrics(), logger: createLogger('silent') },
  );
}

/** Lets the microtasks queued so far run (a round starts after the synchronous stretch that wrote). */
const microtasks = (): Promise<void> => new Promise((r) => setImmediate(r));

t.test('writes made during a commit go together in the next one, as their encodings', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const first = w.write('events', [{ n: 1 }]);
  t.equal(inserts.length, 0, 'a round starts once the synchronous stretch ends');
  await microtasks();
  t.equal(inserts.length, 1, 'then the first write commits');
  const second = w.write('events', [{ n: 2 }, { n: 3 }]);
  const third = w.write('events', [{ n: 4 }]);
  await microtasks();
  t.equal(inserts.length, 1, 'the others wait for it');
  inserts[0]!.done();
  await first;
  await until(() => inserts.length === 2);
  t.equal(inserts.length, 2);
  t.same(
    { rows: inserts[1]!.rows, text: inserts[1]!.text },
    { rows: 3, text: '[{"n":2},{"n":3}]|[{"n":4}]' },
  );
  inserts[1]!.done();
  await Promise.all([second, third]);
  await w.flushed();
});

t.test('rows given as values commit with their columns, never in one commit with objects', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const columns = ['a', 'b'];
  const writes = [
    w.writeValues('events', columns, [[1, 'x']]),
    w.writeValues('events', columns, [[2, 'y']]),
    w.write('events', [{ a: 3 }]),
    w.writeValues('events', columns, [[4, 'z']]),
  ];
  for (const expected of [
    { columns, rows: 2, text: '[[1,"x"]]|[[2,"y"]]' },
    { columns: undefined, rows: 1, text: '[{"a":3}]' },
    { columns, rows: 1, text: '[[4,"z"]]' },
  ]) {
    await until(() => inserts.length > 0);
    const insert = inserts.shift()!;
    t.same({ columns: insert.columns, rows: insert.rows, text: insert.text }, expected);
    insert.done();
  }
  await Promise.all(writes);
  await w.flushed();
});

t.test('no row object is kept while its commit waits', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const blocker = w.write('events', [{ n: 0 }]);
  await microtasks();
  // Made in a function of its own, so that no local of this test holds the rows.
  const write = (): { ref: WeakRef<object>; done: Promise<void> } => {
    const properties = { big: 'x'.repeat(1000) };
    const rows: Row[] = [{ n: 1, properties }];
    return { ref: new WeakRef(properties), done: w.write('events', rows) };
  };
  const { ref, done } = write();
  await microtasks();
  t.equal(inserts.length, 1, 'the write waits behind the first commit');
  // A WeakRef keeps its target until the current job ends: collect on a later turn.
  await new Promise((r) => setImmediate(r));
  gc();
  t.equal(ref.deref(), undefined, 'its rows are gone: the queue holds their bytes');
  inserts[0]!.done();
  await blocker;
  await until(() => inserts.length === 2);
  t.match(inserts[1]!.text, /"big":"x{1000}"/, 'and the bytes are what is committed');
  inserts[1]!.done();
  await done;
});

t.test('a row that cannot be encoded fails its write alone', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  await t.rejects(w.write('events', [{ n: 1n }]), /BigInt/);
  const ok = w.write('events', [{ n: 2 }]);
  await microtasks();
  inserts[0]!.done();
  await ok;
  t.equal(inserts.length, 1);
});

t.test('the writes of one synchronous stretch commit together', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const done = [w.write('events', [{ n: 1 }]), w.write('events', [{ n: 2 }]), w.write('persons', [{ p: 1 }])];
  await microtasks();
  t.same(
    inserts.map((i) => [i.table, i.rows]),
    [
      ['events', 2],
      ['persons', 1],
    ],
    'one round: an insert per table',
  );
  for (const i of inserts) i.done();
  await Promise.all(done);
  await w.flushed();
});

t.test('a store that takes commits in flight gets that many rounds at once, the rest after', async (t) => {
  const { store, inserts } = encodingStore(2);
  const w = writer(store);
  const settled: number[] = [];
  const write = (n: number): Promise<void> => w.write('events', [{ n }]).then(() => void settled.push(n));
  const first = write(1);
  await microtasks();
  const second = write(2);
  await microtasks();
  t.equal(inserts.length, 2, 'a second round starts while the first is under way');
  const later = [write(3), write(4)];
  await microtasks();
  t.equal(inserts.length, 2, 'a third waits: the store takes two');
  let flushed = false;
  void w.flushed().then(() => (flushed = true));
  inserts[0]!.done();
  await first;
  await until(() => inserts.length === 3);
  t.same({ rows: inserts[2]!.rows, text: inserts[2]!.text }, { rows: 2, text: '[{"n":3}]|[{"n":4}]' });
  inserts[2]!.done();
  await Promise.all(later);
  t.notOk(flushed, 'flushed waits for every round, the second too');
  inserts[1]!.done();
  await second;
  await until(() => flushed);
  t.ok(flushed);
  t.same(settled, [1, 3, 4, 2], 'each write settles with its own round');
});

t.test(
  'under load a round starts no sooner than the spacing after the one before; light load waits for none',
  async (t) => {
    const { store, inserts } = encodingStore();
    const w = new BatchWriter(
      { maxRows: 1000, roundSpacingMs: 50, spacedFromRows: 3 },
      { store, metrics: new Metrics(), logger: createLogger('silent') },
    );
    const rows = (n: number): Row[] => Array.from({ length: n }, (_, i) => ({ i }));

    // Light: a round of two rows; the next starts as soon as it returns.
    const light = w.write('events', rows(2));
    await microtasks();
    const lightNext = w.write('events', rows(1));
    inserts[0]!.done();
    await light;
    await microtasks();
    t.equal(inserts.length, 2, 'after a round of fewer rows than the threshold, the next starts at once');
    inserts[1]!.done();
    await lightNext;

    // Loaded: a round of three rows; the rows written while it is under way wait out the spacing.
    const loaded = w.write('events', rows(3));
    await microtasks();
    const started = performance.now();
    const waiting = w.write('events', rows(1));
    inserts[2]!.done();
    await loaded;
    await microtasks();
    t.equal(inserts.length, 3, 'the next round waits although the last one returned');
    const deadline = performance.now() + 5000;
    while (inserts.length < 4 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    t.equal(inserts.length, 4, 'then it starts');
    // Measured from after the round of three rows started, by a timer that may fire a millisecond early.
    t.ok(inserts[3]!.at - started >= 40, `no sooner than the spacing (${inserts[3]!.at - started} ms)`);
    inserts[3]!.done();
    await waiting;
    await w.flushed();
  },
);
