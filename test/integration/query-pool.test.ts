/**
 * The query actor pool with real worker threads, over real Parquet written by the engine (chDB) into a real
 * ObjectStore (the directory adapter). The executor is the test's own (test/helpers/pool-executor.ts): these
 * tests are about the pool (routing, loading, memory, crashes), not about serving semantics.
 */
import { queryAsync } from 'chdb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import { loadConfig } from '../../src/config/config.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { ObjectStoreError, type ObjectStore } from '../../src/core/object-store.ts';
import { openObjectStore } from '../../src/objects/open-object-store.ts';
import {
  MaterializedTableError,
  type RunAnswer,
  type ServingPlan,
} from '../../src/query/materialize/pool/protocol.ts';
import { QueryPool, type QueryPoolConfig } from '../../src/query/materialize/pool/query-pool.ts';
import type { TestPlan } from '../helpers/pool-executor.ts';

const EXECUTOR = new URL('../helpers/pool-executor.ts', import.meta.url).href;
const dataDir = mkdtempSync(join(tmpdir(), 'weir-pool-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const store = openObjectStore(loadConfig({}), dataDir);
t.teardown(() => store.close());

/** The store, counting the reads of each key: a table held in memory is not read again. */
const reads = new Map<string, number>();
let unavailable = false;
const objects: ObjectStore = Object.assign(Object.create(store) as ObjectStore, {
  get(key: string) {
    reads.set(key, (reads.get(key) ?? 0) + 1);
    if (unavailable) return Promise.reject(new ObjectStoreError('unavailable', 'the store is down', { key }));
    return store.get(key);
  },
});

/** Writes `sql`'s result as Parquet (zstd, as the writer does) under `key`; returns its byte size. */
async function parquet(key: string, sql: string): Promise<number> {
  const settings =
    "SETTINGS output_format_parquet_compression_method='zstd', output_format_parquet_row_group_size=65536";
  const bytes = (await queryAsync(`${sql} ${settings}`, { format: 'Parquet' })).bytes();
  await store.put(key, bytes);
  return bytes.byteLength;
}

const SMALL = `SELECT toString(number % 10) AS k, number AS n FROM numbers(1000)`;
await parquet('m/a.parquet', SMALL);
await parquet('m/b.parquet', `SELECT toString(number % 10) AS k, number * 2 AS n FROM numbers(1000)`);
await parquet('m/c.parquet', `SELECT toString(number % 10) AS k, number * 3 AS n FROM numbers(1000)`);

const logger = pino({ level: 'silent' });

function pool(t: Test, config: Partial<QueryPoolConfig> = {}): { pool: QueryPool; metrics: Metrics } {
  const metrics = new Metrics({ defaultMetrics: false });
  const p = new QueryPool(
    { threads: 1, memoryBytes: 64 << 20, executorModule: EXECUTOR, ...config },
    { objects, metrics, logger },
  );
  t.teardown(() => p.close());
  return { pool: p, metrics };
}

function run(p: QueryPool, tableKey: string, plan: TestPlan, value?: string, page = {}): Promise<RunAnswer> {
  // The pool posts a plan as it is: the test executor's plans stand in for the rewrite's.
  return p.run({
    tableKey,
    plan: plan as unknown as ServingPlan,
    variables: value === undefined ? {} : { value },
    page,
  });
}

async function value(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  const got = await metric!.get();
  return got.values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((n, v) => n + v.value, 0);
}

/** Runs counted by the run-latency histogram with `result`. */
async function runCount(metrics: Metrics, result: string): Promise<number> {
  const got = await metrics.materializedRunDuration.get();
  const count = got.values.find(
    (v) =>
      'metricName' in v &&
      v.metricName === 'weir_materialized_run_duration_seconds_count' &&
      v.labels['result'] === result,
  );
  return count?.value ?? 0;
}

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

/** Polls `check` until it holds or `ms` pass (no sleeping as synchronisation). */
async function until(check: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

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

t.test('an actor that dies mid-run is started again and the run retried once', async (t) => {
  const { pool: p, metrics } = pool(t);
  const marker = join(dataDir, 'crashed-once');
  const answer = await run(p, 'm/a.parquet', { op: 'crash-once', marker }, undefined, { limit: 1 });
  t.same(answer.rows, [['0', 0n]], 'answered by the restarted actor');
  t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 1);
});

t.test('a run that kills its actor twice is answered 503, and the actor serves the next run', async (t) => {
  const { pool: p, metrics } = pool(t);
  const err = await run(p, 'm/a.parquet', { op: 'crash' }).catch((e: unknown) => e);
  t.type(err, AppError);
  t.equal((err as AppError).status, 503);
  t.equal((err as AppError).retriable, true);
  t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 2);
  const answer = await run(p, 'm/a.parquet', { op: 'rows', column: 'k' }, '2', { limit: 1 });
  t.same(answer.rows, [['2', 2n]]);
  t.equal(await runCount(metrics, 'error'), 1);
});

t.test("the executor's AppError reaches the caller as it was", async (t) => {
  const { pool: p } = pool(t);
  const err = await run(p, 'm/a.parquet', { op: 'throw' }).catch((e: unknown) => e);
  t.type(err, AppError);
  t.match(err, { code: 'invalid_variable', status: 400, attr: 'value', message: 'value is not a value' });
});

t.test(
  'a missing object, an unavailable store: a MaterializedTableError, and the pool goes on',
  async (t) => {
    const { pool: p, metrics } = pool(t);
    const missing = await run(p, 'm/none.parquet', { op: 'rows' }).catch((e: unknown) => e);
    t.type(missing, MaterializedTableError);
    t.match(missing, { problem: 'not_found', tableKey: 'm/none.parquet', status: 500 });
    unavailable = true;
    t.teardown(() => (unavailable = false));
    const down = await run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
    t.match(down, { problem: 'unavailable', status: 503, retriable: true });
    unavailable = false;
    const answer = await run(p, 'm/a.parquet', { op: 'rows' }, undefined, { limit: 1 });
    t.same(answer.rows, [['0', 0n]]);
    t.equal(await value(metrics, 'weir_query_actor_restarts_total'), 0, 'no actor died');
  },
);

t.test(
  'a damaged Parquet object is a clear error; its actor starts afresh and serves good tables',
  async (t) => {
    const good = await store.get('m/a.parquet');
    const damaged = Buffer.from(good);
    for (let i = 100; i < Math.min(damaged.length - 100, 2000); i++)
      damaged[i] = (damaged[i]! * 31 + 7) & 255;
    await store.put('m/damaged.parquet', damaged);
    await store.put('m/truncated.parquet', good.subarray(0, good.length >> 1));
    const { pool: p, metrics } = pool(t);
    await run(p, 'm/b.parquet', { op: 'rows' });
    for (const key of ['m/damaged.parquet', 'm/truncated.parquet']) {
      const err = await run(p, key, { op: 'rows' }).catch((e: unknown) => e);
      t.type(err, MaterializedTableError, key);
      t.match(err, { problem: 'damaged', tableKey: key, status: 500 });
      t.match((err as Error).message, `the materialization ${key} could not be read as Parquet: `);
    }
    const answer = await run(p, 'm/b.parquet', { op: 'rows', column: 'k' }, '5', { limit: 1 });
    t.same(answer.rows, [['5', 10n]], 'a good table read again after the restart');
    t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'retire' }), 2);
    t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 0);
    t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'failed' }), 2);
  },
);

t.test('close answers the runs in flight 503 and refuses new ones', async (t) => {
  const { pool: p } = pool(t);
  const pending = run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
  await p.close();
  const err = await pending;
  // The run may have been answered before the thread ended; if not, it is a 503.
  if (err instanceof Error) t.match(err, { status: 503 });
  const after = await run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
  t.match(after, { status: 503, message: 'The query pool is closed.' });
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
