/**
 * What one materialized run costs in its actor: `executeServing` alone, in this thread, on a table like the
 * one `bench:materialized` serves (browser × event × day with counts, 2,160 rows), made as Weir makes it —
 * the endpoint's materialization query run by chDB over generated events, written as Parquet, loaded with
 * `loadParquetTable` as an actor loads it — for the bench's 84 variable values in turn, bound as the run
 * path binds them. Prints the median µs a run over rounds of all values, the table's bytes as the pool
 * counts them against its Arrow size, and a digest of every answer (an optimisation must not change it).
 *
 *   node bin/run-ts.js bench/materialized/serve-cost.ts [rounds]
 *
 * Small and single-threaded on purpose: it measures the executor, not the machine's other load, and runs
 * in seconds (the full `bench:materialized` takes many minutes and both cores).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { createLogger } from '../../src/core/logger.ts';
import type { EndpointVersion } from '../../src/core/ports.ts';
import { compileVersion } from '../../src/query/compile/version.ts';
import { executeServing } from '../../src/query/materialize/execute.ts';
import { arrowSize, loadParquetTable } from '../../src/query/materialize/pool/parquet-table.ts';
import {
  describeMaterialization,
  materializationSql,
  planMaterialization,
  servingVariables,
} from '../../src/query/materialize/rewrite.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { DECLARED, QUERY, variableValues } from './endpoint.ts';

const rounds = Number(process.argv[2] ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'weir-serve-cost-'));
const store = ChdbClient.open(join(dir, 'chdb'));
try {
  await migrate(store, createLogger('silent'));
  const engine = new Session(join(dir, 'chdb'));
  // 4 browsers × 6 events × 90 days = 2,160 groups, as the bench's stored result; counts vary by group.
  await engine.queryAsync(
    `INSERT INTO default.events (project_id, uuid, event, distinct_id, person_id, timestamp, properties)
     SELECT 1, generateUUIDv4(), ['$pageview', '$autocapture', 'signed up', '$pageleave', 'order completed',
       '$identify'][1 + intDiv(number, 4) % 6], toString(number % 97), generateUUIDv4(),
       toDateTime64('2026-01-01 00:00:00', 6, 'UTC') + toIntervalSecond((number * 7919) % (90 * 86400)),
       concat('{"$browser":"', ['Chrome', 'Firefox', 'Safari', 'Édge'][1 + number % 4], '"}')
     FROM numbers(200000)`,
    { format: 'CSV' },
  );
  const version: EndpointVersion = {
    version: 1,
    query: { kind: 'HogQLQuery', query: QUERY },
    variables: DECLARED,
    isActive: true,
    isMaterialized: true,
    createdAt: '2026-01-01T00:00:00Z',
    createdBy: null,
  };
  const compiled = compileVersion(version);
  const plan = planMaterialization(version, compiled, { now: new Date('2026-04-01T00:00:00Z') });
  if ('cannot' in plan) throw new Error(plan.cannot);
  const serving = await describeMaterialization(plan, store, 1);
  const { sql, params } = materializationSql(plan, 1);
  const parquet = (await engine.queryBindAsync(sql, params, { format: 'Parquet' })).bytes();
  engine.close();

  const loadStarted = performance.now();
  const loaded = await loadParquetTable(parquet);
  const loadMs = performance.now() - loadStarted;
  const bound = variableValues().map((v) => servingVariables(compiled, { ...v }));
  const digest = createHash('sha256');
  for (const variables of bound)
    digest.update(JSON.stringify(executeServing(loaded.table, serving, variables, {})));
  for (let i = 0; i < 20; i++) for (const v of bound) executeServing(loaded.table, serving, v, {});
  const perRun: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (const v of bound) executeServing(loaded.table, serving, v, {});
    perRun.push(((performance.now() - t) * 1000) / bound.length);
  }
  perRun.sort((a, b) => a - b);
  const arrow = arrowSize(loaded.table);
  console.log(
    `${loaded.table.numRows} rows, ${bound.length} values × ${rounds} rounds: ` +
      `median ${perRun[Math.floor(rounds / 2)]!.toFixed(1)} µs a run (p10 ${perRun[Math.floor(rounds / 10)]!.toFixed(1)}, ` +
      `p90 ${perRun[Math.floor((rounds * 9) / 10)]!.toFixed(1)}); load ${loadMs.toFixed(1)} ms; ` +
      `held ${loaded.bytes} B against Arrow ${arrow} B (${(loaded.bytes / arrow).toFixed(2)}×); ` +
      `answers ${digest.digest('hex').slice(0, 16)}`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
