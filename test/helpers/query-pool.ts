/**
 * A query pool over real worker threads, real Parquet written by the engine (chDB) and a real ObjectStore
 * (the directory adapter), for test/integration/query-pool*.test.ts. The executor is the test's own
 * (pool-executor.ts): these tests are about the pool (routing, loading, memory, crashes), not serving.
 */
import { queryAsync } from 'chdb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Test } from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { ObjectStoreError, type ObjectStore } from '../../src/core/object-store.ts';
import { openObjectStore } from '../../src/objects/open-object-store.ts';
import type { RunAnswer, ServingPlan } from '../../src/query/materialize/pool/protocol.ts';
import { QueryPool, type QueryPoolConfig } from '../../src/query/materialize/pool/query-pool.ts';
import type { TestPlan } from './pool-executor.ts';

const EXECUTOR = new URL('./pool-executor.ts', import.meta.url).href;
const logger = pino({ level: 'silent' });

export interface PoolFixture {
  readonly dataDir: string;
  /** The store itself (writes in tests go here). */
  readonly store: ObjectStore;
  /** Reads of each key through the pool's store: a table held in memory is not read again. */
  readonly reads: Map<string, number>;
  /** While set, the pool's store answers every read `unavailable`. */
  readonly setUnavailable: (down: boolean) => void;
  /** Writes `sql`'s result as Parquet (zstd, as the writer does) under `key`; returns its byte size. */
  readonly parquet: (key: string, sql: string) => Promise<number>;
  /** A pool of the test executor (one thread, 64 MiB unless told), closed when `t` ends. */
  readonly pool: (t: Test, config?: Partial<QueryPoolConfig>) => { pool: QueryPool; metrics: Metrics };
}

/** The fixture, with m/a.parquet, m/b.parquet and m/c.parquet: k = n % 10 as text, n = 0…999 times 1, 2, 3. */
export async function poolFixture(t: Test): Promise<PoolFixture> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-pool-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = openObjectStore(loadConfig({}), dataDir);
  t.teardown(() => store.close());
  const reads = new Map<string, number>();
  let unavailable = false;
  const objects: ObjectStore = Object.assign(Object.create(store) as ObjectStore, {
    get(key: string) {
      reads.set(key, (reads.get(key) ?? 0) + 1);
      if (unavailable)
        return Promise.reject(new ObjectStoreError('unavailable', 'the store is down', { key }));
      return store.get(key);
    },
  });
  const fixture: PoolFixture = {
    dataDir,
    store,
    reads,
    setUnavailable: (down) => (unavailable = down),
    parquet: async (key, sql) => {
      const settings =
        "SETTINGS output_format_parquet_compression_method='zstd', output_format_parquet_row_group_size=65536";
      const bytes = (await queryAsync(`${sql} ${settings}`, { format: 'Parquet' })).bytes();
      await store.put(key, bytes);
      return bytes.byteLength;
    },
    pool: (t, config = {}) => {
      const metrics = new Metrics({ defaultMetrics: false });
      const p = new QueryPool(
        { threads: 1, memoryBytes: 64 << 20, executorModule: EXECUTOR, ...config },
        { objects, metrics, logger },
      );
      t.teardown(() => p.close());
      return { pool: p, metrics };
    },
  };
  for (const [name, times] of [
    ['a', 1],
    ['b', 2],
    ['c', 3],
  ] as const)
    await fixture.parquet(
      `m/${name}.parquet`,
      `SELECT toString(number % 10) AS k, number * ${times} AS n FROM numbers(1000)`,
    );
  return fixture;
}

export function run(
  p: QueryPool,
  tableKey: string,
  plan: TestPlan,
  value?: string,
  page = {},
): Promise<RunAnswer> {
  // The pool posts a plan as it is: the test executor's plans stand in for the rewrite's.
  return p.run({
    tableKey,
    plan: plan as unknown as ServingPlan,
    variables: value === undefined ? {} : { value },
    page,
  });
}

/** A metric's value, summed over the series with `labels`. */
export async function value(
  metrics: Metrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const got = await metrics.registry.getSingleMetric(name)!.get();
  return got.values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((n, v) => n + v.value, 0);
}

/** Runs counted by the run-latency histogram with `result`. */
export async function runCount(metrics: Metrics, result: string): Promise<number> {
  const got = await metrics.materializedRunDuration.get();
  const count = got.values.find(
    (v) =>
      'metricName' in v &&
      v.metricName === 'weir_materialized_run_duration_seconds_count' &&
      v.labels['result'] === result,
  );
  return count?.value ?? 0;
}

/** Polls `check` until it holds or `ms` pass (no sleeping as synchronisation). */
export async function until(check: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
