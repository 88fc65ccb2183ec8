/**
 * The group-commit writer over a store that encodes rows: rows become bytes when written, several writes
 * commit as one insert, and no row object is kept while a commit waits (checked with a WeakRef and a forced
 * GC: rows kept that long outlive young-generation GCs, which then spend their time copying them).
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
  readonly rows: number;
  readonly text: string;
  readonly done: () => void;
}

/** A store that encodes as JSON and commits when the test says so. */
function encodingStore(): { store: Store; inserts: Insert[] } {
  const inserts: Insert[] = [];
  const store: Store = {
    insert: () => Promise.reject(new Error('an encoding store is given encodings')),
    encode: (rows) => Buffer.from(JSON.stringify(rows)),
    insertEncoded: (table, rows, chunks) =>
      new Promise<void>((resolve) => {
        inserts.push({ table, rows, text: chunks.map((c) => c.toString()).join('|'), done: resolve });
      }),
    query: () => Promise.resolve([]),
    command: () => Promise.resolve(),
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

t.test('writes made during a commit go together in the next one, as their encodings', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const first = w.write('events', [{ n: 1 }]);
  t.equal(inserts.length, 1, 'the first write commits at once');
  const second = w.write('events', [{ n: 2 }, { n: 3 }]);
  const third = w.write('events', [{ n: 4 }]);
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

t.test('no row object is kept while its commit waits', async (t) => {
  const { store, inserts } = encodingStore();
  const w = writer(store);
  const blocker = w.write('events', [{ n: 0 }]);
  // Made in a function of its own, so that no local of this test holds the rows.
  const write = (): { ref: WeakRef<object>; done: Promise<void> } => {
    const properties = { big: 'x'.repeat(1000) };
    const rows: Row[] = [{ n: 1, properties }];
    return { ref: new WeakRef(properties), done: w.write('events', rows) };
  };
  const { ref, done } = write();
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
  inserts[0]!.done();
  await ok;
  t.equal(inserts.length, 1);
});
