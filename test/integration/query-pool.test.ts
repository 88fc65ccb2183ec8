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
import { loadConfig } from '../../src/config/config.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { ObjectStoreError, type ObjectStore } from '../../src/core/object-store.ts';
import { openObjectStore } from '../../src/objects/open-object-store.ts';
import { type RunAnswer } from '../../src/query/materialize/pool/protocol.ts';
import { QueryPool, type QueryPoolConfig } from '../../src/query/materialize/pool/query-pool.ts';
import type { TestPlan } from '../helpers/pool-executor.ts';

const EXECUTOR = new URL('../helpers/pool-executor.ts', import.meta.url).href;
const dataDir = mkdtempSync(join(tmpdir(), 'weir-pool-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const store = openObjectStore(loadConfig({}), dataDir);
t.teardown(() => store.close());

/** The store, counting the reads of each key: a table held in memory is not read again. */
const reads = new Map<string, number>();
const unavailable = false;
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
  return p.run({ tableKey, plan, variables: value === undefined ? {} : { value }, page });
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
