/**
 * A query actor's handling of its messages, off any thread: the loader and executor are plain functions
 * here (the thread, Parquet and the real executor are in test/integration/query-pool.test.ts).
 */
import { tableFromArrays, type Table } from 'apache-arrow';
import t from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import type { LoadedTable } from '../../src/query/materialize/pool/parquet-table.ts';
import type {
  FromActor,
  RunAnswer,
  ServingPlan,
  ToActor,
} from '../../src/query/materialize/pool/protocol.ts';
import { QueryActor } from '../../src/query/materialize/pool/query-actor.ts';

const plan = {} as ServingPlan;

function actor(options: { memoryBytes?: number; failLoad?: boolean; failRun?: boolean } = {}) {
  const posted: FromActor[] = [];
  const loads: Uint8Array[] = [];
  let finishLoad: () => void = () => {};
  const a = new QueryActor(
    { memoryBytes: options.memoryBytes ?? 1000 },
    {
      post: (m) => posted.push(m),
      execute: (table: Table, _plan, variables): RunAnswer => {
        if (options.failRun) throw new AppError('invalid_variable', { attr: 'x' });
        return {
          columns: ['n'],
          types: ['UInt8'],
          rows: [[table.numRows, variables['x'] ?? null]],
          hasMore: false,
        };
      },
      load: (bytes) => {
        loads.push(bytes);
        return new Promise<LoadedTable>((resolve, reject) => {
          finishLoad = () =>
            options.failLoad
              ? reject(new Error('Corrupt footer'))
              : resolve({ table: tableFromArrays({ n: new Uint8Array(bytes.length) }), bytes: 100 });
        });
      },
    },
  );
  const send = (m: ToActor) => a.receive(m);
  const finish = async () => {
    finishLoad();
    await new Promise((r) => setImmediate(r));
  };
  return { send, posted, loads, finish };
}

const run = (id: number, tableKey = 'k', x = 1): ToActor => ({
  type: 'run',
  id,
  tableKey,
  plan,
  variables: { x },
  page: {},
});
const table = (tableKey = 'k', size = 3): ToActor => ({
  type: 'table',
  tableKey,
  bytes: new Uint8Array(size),
});

t.test(
  'runs over a table not held ask for it once, and are answered after the stats once it is read',
  async (t) => {
    const { send, posted, finish } = actor();
    send(run(1));
    send(run(2, 'k', 2));
    t.same(posted, [{ type: 'need', tableKey: 'k' }]);
    send(table());
    await finish();
    t.same(
      posted.slice(1).map((m) => m.type),
      ['stats', 'answer', 'answer'],
    );
    t.match(posted[1], { type: 'stats', tables: 1, bytes: 100, loads: 1, evictions: 0 });
    t.match(posted[2], { type: 'answer', id: 1, answer: { rows: [[3, 1]] } });
    t.match(posted[3], { type: 'answer', id: 2, answer: { rows: [[3, 2]] } });
    send(run(3));
    t.match(posted[4], { type: 'answer', id: 3 }, 'a held table answers in the same turn');
  },
);

t.test(
  'a table that does not fit evicts the least recently used; one over the whole share is not held',
  async (t) => {
    const { send, posted, finish } = actor({ memoryBytes: 150 });
    for (const key of ['a', 'b']) {
      send(run(1, key));
      send(table(key));
      await finish();
    }
    t.match(posted.filter((m) => m.type === 'stats').at(-1), { tables: 1, bytes: 100, evictions: 1 });
    const small = actor({ memoryBytes: 50 });
    small.send(run(1));
    small.send(table());
    await small.finish();
    t.match(small.posted[1], { type: 'stats', tables: 0, bytes: 0, loads: 1, evictions: 1 });
    t.match(small.posted[2], { type: 'answer', id: 1 }, 'served once all the same');
  },
);

t.test('a forgotten table is dropped; forgotten while being read, it is served and not held', async (t) => {
  const { send, posted, finish } = actor();
  send(run(1));
  send({ type: 'forget', tableKey: 'k' });
  send(table());
  await finish();
  t.match(posted[1], { type: 'stats', tables: 0 });
  t.match(posted[2], { type: 'answer', id: 1 });
  send(run(2));
  t.same(posted[3], { type: 'need', tableKey: 'k' }, 'asked again');
});

t.test("a table the pool could not read fails its runs with the pool's error", (t) => {
  const { send, posted } = actor();
  send(run(1));
  send(run(2));
  const error = { kind: 'table', problem: 'not_found', tableKey: 'k', detail: 'gone' } as const;
  send({ type: 'table-failed', tableKey: 'k', error });
  t.same(posted.slice(2), [
    { type: 'failed', id: 1, error },
    { type: 'failed', id: 2, error },
  ]);
  t.end();
});

t.test('bytes that do not decode fail the waiting runs as damaged, then the actor retires', async (t) => {
  const { send, posted, finish } = actor({ failLoad: true });
  send(run(1));
  send(table());
  await finish();
  t.match(posted[1], { type: 'stats', loads: 0, loadFailures: 1 });
  t.match(posted[2], {
    type: 'failed',
    id: 1,
    error: {
      kind: 'table',
      problem: 'damaged',
      detail: 'the materialization k could not be read as Parquet: Corrupt footer',
    },
  });
  t.match(posted.at(-1), { type: 'retire' });
  const count = posted.length;
  send(run(2));
  t.equal(posted.length, count, 'a retired actor takes no more runs (the pool sends them to its successor)');
});

t.test("the executor's error is the run's answer", async (t) => {
  const { send, posted, finish } = actor({ failRun: true });
  send(run(1));
  send(table());
  await finish();
  t.match(posted[2], { type: 'failed', id: 1, error: { kind: 'app', code: 'invalid_variable', attr: 'x' } });
});
