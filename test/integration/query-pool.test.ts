/**
 * The query actor pool answering runs: tables read once and served from memory, evicted under a small bound
 * and read again, forgotten, answered by Weir's own executor, and a held table's memory measured.
 */
import t from 'tap';
import type { ServingPlan } from '../../src/query/materialize/pool/protocol.ts';
import { poolFixture, run, runCount, until, value } from '../helpers/query-pool.ts';

const fixture = await poolFixture(t);
const { pool, reads, parquet } = fixture;

t.test(
  'runs are answered from the Parquet object, each table read once and then served from memory',
  async (t) => {
    const { pool: p, metrics } = pool(t, { threads: 2 });
    reads.clear();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => run(p, 'm/a.parquet', { op: 'rows', column: 'k' }, '3', { limit: 5 })),
    );
    for (const a of answers) {
      t.same(a.columns, ['k', 'n']);
      t.same(a.types, ['Utf8', 'Uint64']);
      t.same(a.rows, [
        ['3', 3n],
        ['3', 13n],
        ['3', 23n],
        ['3', 33n],
        ['3', 43n],
      ]);
      t.equal(a.hasMore, true);
    }
    const last = await run(p, 'm/a.parquet', { op: 'rows', column: 'k' }, '3', { limit: 5, offset: 98 });
    t.same(last.rows, [
      ['3', 983n],
      ['3', 993n],
    ]);
    t.equal(last.hasMore, false);
    const b = await run(p, 'm/b.parquet', { op: 'rows', column: 'k' }, '1', { limit: 1 });
    t.same(b.rows, [['1', 2n]]);
    t.equal(reads.get('m/a.parquet'), 1, 'read from object storage once');
    t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'ok' }), 2);
    t.equal(await value(metrics, 'weir_materialized_tables'), 2);
    t.ok((await value(metrics, 'weir_materialized_bytes')) > 0);
    t.equal(await value(metrics, 'weir_materialized_evictions_total'), 0);
    t.equal(await runCount(metrics, 'ok'), 22, 'every run observed in the latency histogram');
  },
);

t.test('under a small bound the least recently used table is evicted and read again on demand', async (t) => {
  // Measure one table's bytes, then give the actor room for two of them, not three.
  const probe = pool(t);
  await run(probe.pool, 'm/a.parquet', { op: 'rows' });
  const one = await value(probe.metrics, 'weir_materialized_bytes');
  const { pool: p, metrics } = pool(t, { memoryBytes: Math.floor(one * 2.5) });
  reads.clear();
  for (const key of [
    'm/a.parquet',
    'm/b.parquet',
    'm/a.parquet',
    'm/c.parquet',
    'm/b.parquet',
    'm/a.parquet',
  ]) {
    const answer = await run(p, key, { op: 'rows', column: 'n' }, undefined, { limit: 2 });
    t.equal(answer.rows.length, 0, `${key}: no row has n = undefined`);
  }
  const first = await run(p, 'm/c.parquet', { op: 'rows' }, undefined, { limit: 2 });
  t.same(
    first.rows,
    [
      ['0', 0n],
      ['1', 3n],
    ],
    'a table read again answers as before',
  );
  // a, b, (a held), c evicts b, b evicts a, a evicts c, c evicts b.
  t.same(Object.fromEntries(reads), { 'm/a.parquet': 2, 'm/b.parquet': 2, 'm/c.parquet': 2 });
  t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'ok' }), 6);
  t.equal(await value(metrics, 'weir_materialized_evictions_total'), 4);
  t.equal(await value(metrics, 'weir_materialized_tables'), 2);
  t.ok((await value(metrics, 'weir_materialized_bytes')) <= one * 2.5, 'bytes held stay within the bound');
});

t.test('a table larger than the bound is served, not held', async (t) => {
  const { pool: p, metrics } = pool(t, { memoryBytes: 1000 });
  const answer = await run(p, 'm/a.parquet', { op: 'rows', column: 'k' }, '9', { limit: 1 });
  t.same(answer.rows, [['9', 9n]]);
  await run(p, 'm/a.parquet', { op: 'rows' }, undefined, { limit: 1 });
  t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'ok' }), 2);
  t.equal(await value(metrics, 'weir_materialized_tables'), 0);
  t.equal(await value(metrics, 'weir_materialized_bytes'), 0);
});

t.test('a forgotten table is dropped and read again by its next run', async (t) => {
  const { pool: p, metrics } = pool(t);
  await run(p, 'm/a.parquet', { op: 'rows' });
  p.forget('m/a.parquet');
  t.ok(await until(async () => (await value(metrics, 'weir_materialized_tables')) === 0), 'dropped');
  await run(p, 'm/a.parquet', { op: 'rows' });
  t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'ok' }), 2);
});

t.test("Weir's own executor (execute.ts) answers in the actor from the table it holds", async (t) => {
  const { pool: p } = pool(t, { executorModule: undefined });
  // k = {variables.k}, ORDER BY n DESC, over m/a.parquet (k = n % 10 as a string).
  const plan: ServingPlan = {
    kind: 'sql',
    stored: [
      { name: 'k', type: 'String' },
      { name: 'n', type: 'UInt64' },
    ],
    filters: [{ column: 0, variable: 'k', op: '=', bucket: null }],
    mode: 'rows',
    outputs: [
      { kind: 'value', name: 'k', stored: 0 },
      { kind: 'value', name: 'n', stored: 1 },
    ],
    visible: 2,
    keys: [],
    distinct: false,
    order: [{ output: 1, descending: true, nulls: null }],
    limit: null,
    offset: 0,
    emptyMarker: null,
  };
  const answer = await p.run({ tableKey: 'm/a.parquet', plan, variables: { k: '3' }, page: { limit: 2 } });
  t.same(answer.columns, ['k', 'n']);
  t.same(answer.types, ['String', 'UInt64']);
  t.same(answer.rows, [
    ['3', 993],
    ['3', 983],
  ]);
  t.equal(answer.hasMore, true);
  const none = await p.run({ tableKey: 'm/a.parquet', plan, variables: { k: 'x' }, page: {} });
  t.same(none.rows, []);
  t.equal(none.hasMore, false);
});

t.test('a held table takes at most twice its Arrow size in its actor (measured)', async (t) => {
  const { pool: p } = pool(t, { memoryBytes: 1 << 30 });
  const big = `SELECT toString(number % 1000) AS k, number AS n, toDateTime('2024-01-01 00:00:00', 'UTC') + number AS ts, number / 3 AS f, if(number % 7 = 0, NULL, number) AS nn FROM numbers(500000)`;
  const parquetBytes = await parquet('m/big.parquet', big);
  await parquet('m/warm.parquet', big.replace('number / 3', 'number / 7'));
  // Decoding grows parquet-wasm's memory once per actor, to its largest decode; it is not a table's. A
  // table of the same shape read and dropped first leaves that growth out of the measure.
  await run(p, 'm/warm.parquet', { op: 'rows' }, undefined, { limit: 1 });
  p.forget('m/warm.parquet');
  const before = (await run(p, 'm/a.parquet', { op: 'memory' })).rows[0] as number[];
  const after = (await run(p, 'm/big.parquet', { op: 'memory' })).rows[0] as number[];
  const [heap0, external0, , wasm0] = before;
  const [heap1, external1, arrayBuffers1, wasm1, arrowBytes, rows] = after;
  const held = heap1! - heap0! + (external1! - external0!);
  t.equal(rows, 500000);
  t.comment(
    `Parquet ${mb(parquetBytes)}, Arrow ${mb(arrowBytes!)}; held ${mb(held)} (${(held / arrowBytes!).toFixed(2)}× Arrow; ` +
      `array buffers ${mb(arrayBuffers1!)}); parquet-wasm memory ${mb(wasm1!)} (grew ${mb(wasm1! - wasm0!)})`,
  );
  t.ok(held <= 2 * arrowBytes!, `held ${mb(held)} ≤ 2 × Arrow ${mb(arrowBytes!)}`);
  t.ok(held >= arrowBytes! * 0.9, 'the measure sees the table');
});

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
