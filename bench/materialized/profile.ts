/**
 * Where a materialized run's time goes, gathered only when a target was missed. Three layers, each timed on
 * its own in the same Weir:
 * - HTTP and the run path: the callers' latency (load.ts), 1 and 50 callers, `refresh: "force"`;
 * - the pool: `weir_materialized_run_duration_seconds` (from a run reaching QueryPool.run to its answer: the
 *   message to the actor thread, its queue, executeServing, the message back), its mean over the same runs;
 * - executeServing alone: called in this thread on the same table, decoded as an actor decodes it, for the
 *   same values in turn.
 * What is left of the callers' latency past the pool's is HTTP, parsing, authentication, the run path and
 * writing the answer, on the main thread.
 *
 * And where a refresh's time goes, against the direct query: both SQL texts bare on the store (the direct
 * run's SQL as the printer makes it for WIDEST; the materialization query as the writer makes it), and the
 * materialization query written to a Parquet file by the engine as the writer has it written (zstd, 64k-row
 * groups). What a refresh takes past that export is Weir's: scheduling, DESCRIBE, the object put and
 * manifest (fsynced), the catalog updates, the sweep, and up to 10 ms of polling.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ParquetExporter, TableReader } from '../../src/core/ports.ts';
import type { Weir } from '../../src/main.ts';
import { DEFAULT_LIMITS, printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { compileVersion } from '../../src/query/compile/version.ts';
import { compileQuery } from '../../src/query/hogql-query.ts';
import {
  materializationSql,
  planMaterialization,
  servingVariables,
} from '../../src/query/materialize/rewrite.ts';
import { loadParquetTable } from '../../src/query/materialize/pool/parquet-table.ts';
import { executeServing } from '../../src/query/materialize/execute.ts';
import type { ServingPlan } from '../../src/query/materialize/serving.ts';
import { runCallers } from '../endpoints/callers.ts';
import { DECLARED, KEY, NAME, QUERY, WIDEST, runBody, variableValues, type BenchClient } from './endpoint.ts';
import { median } from './scenario-refresh.ts';

interface Layer {
  readonly callers: number;
  readonly requests: number;
  /** Mean latency the callers saw, and the pool's mean time per run over the same runs, ms. */
  readonly callerMeanMs: number;
  readonly poolMeanMs: number;
  /** Weir's process CPU per run (all threads), ms. */
  readonly weirCpuMsPerRun: number;
  readonly perSecond: number;
}

export async function profileMaterializedRun(
  weir: Weir,
  client: BenchClient,
  dataDir: string,
  /** The pool's actor threads, and the refresh's median over HTTP (scenario-refresh.ts). */
  threads: number,
  refreshMs: number,
): Promise<Record<string, unknown>> {
  const values = variableValues();
  const bodies = values.map((v) => runBody(v, 'force'));
  const layers: Layer[] = [];
  for (const [callers, requests] of [
    [1, 3000],
    [50, 20_000],
  ] as const) {
    const before = poolHistogram(await client.metrics());
    const { result, weirCpu } = await runCallers({
      url: client.runUrl,
      key: KEY,
      body: bodies[0]!,
      bodies,
      concurrency: callers,
      requests,
      warmup: 200,
    });
    const after = poolHistogram(await client.metrics());
    const runs = after.count - before.count;
    layers.push({
      callers,
      requests,
      callerMeanMs: result.latenciesMs.reduce((a, b) => a + b, 0) / result.latenciesMs.length,
      // The warm-up's runs are in the histogram too, and are runs like the timed ones.
      poolMeanMs: ((after.sum - before.sum) / runs) * 1000,
      weirCpuMsPerRun: (weirCpu * result.seconds * 1000) / result.latenciesMs.length,
      perSecond: result.latenciesMs.length / result.seconds,
    });
  }

  const version = weir.catalog.listEndpoints(1).find((e) => e.name === NAME)?.versions[0];
  const state = version?.materialization;
  if (!version || !state?.objectKey || !state.serving) throw new Error('the endpoint has no materialization');
  const refresh = await refreshParts(weir, dataDir);

  const { table } = await loadParquetTable(readFileSync(join(dataDir, 'objects', state.objectKey)));
  const plan = state.serving as ServingPlan;
  // The values as the run path binds them before posting them to the actor.
  const compiled = compileVersion(version);
  const bound = values.map((v) => servingVariables(compiled, { ...v }));
  const rounds = 2000;
  for (let i = 0; i < 200; i++) executeServing(table, plan, bound[i % bound.length]!, {});
  const t = performance.now();
  for (let i = 0; i < rounds; i++) executeServing(table, plan, bound[i % bound.length]!, {});
  const executeMeanMs = (performance.now() - t) / rounds;

  const us = (x: number): string => `${(x * 1000).toFixed(0)} µs`;
  const notes = layers.map((l) => {
    const line =
      `Profile, materialized runs at ${l.callers} caller${l.callers === 1 ? '' : 's'} (${l.requests} runs, ${l.perSecond.toFixed(0)}/s): ` +
      `mean latency ${us(l.callerMeanMs)}, of which ${us(l.poolMeanMs)} in the pool (the message to the actor thread, its queue, ` +
      `executeServing, the answer back) and ${us(l.callerMeanMs - l.poolMeanMs)} outside it (HTTP, authentication, the run path, ` +
      `writing the answer, on the main thread); Weir's CPU ${us(l.weirCpuMsPerRun)} a run over all its threads.`;
    if (l.callers === 1) return line;
    return (
      `${line} executeServing alone takes ${us(executeMeanMs)} a run (below), so the pool's ${threads} actor ` +
      `thread${threads === 1 ? '' : 's'} answer${threads === 1 ? 's' : ''} at most ~${((threads / executeMeanMs) * 1000).toFixed(0)} runs/s, ` +
      `and a run waits behind the others in the actor's queue: ~${l.callers} × ${us(executeMeanMs)} = ${us(l.callers * executeMeanMs)}, ` +
      `where a cached run is answered on the main thread and never queues there.`
    );
  });
  notes.push(
    `Profile: executeServing alone, in one thread on the same table (${table.numRows} rows), ${us(executeMeanMs)} a run ` +
      `(mean of ${rounds}, values in turn, as the run path binds them).`,
    `Profile, refresh against the direct query (bare on the store, alternated, median of ${refresh.rounds}): the direct run's SQL ` +
      `${refresh.directSqlMs.toFixed(0)} ms; the materialization query ${refresh.materializeSqlMs.toFixed(0)} ms ` +
      `(${(refresh.materializeSqlMs / refresh.directSqlMs).toFixed(2)}×: it reads every event of the project and extracts \`$browser\` ` +
      `from each, grouped by browser, event and day, where the direct run reads one event's rows), written to Parquet by the engine ` +
      `${refresh.exportMs.toFixed(0)} ms; the refresh over HTTP ${refreshMs.toFixed(0)} ms, so Weir's own part (scheduling, DESCRIBE, ` +
      `the object and manifest put, the catalog, 10 ms polling) is ~${(refreshMs - refresh.exportMs).toFixed(0)} ms. ` +
      `Materialization query: \`${refresh.sql.replace(/\s+/g, ' ')}\`.`,
  );
  return { layers, executeMeanMs, refresh, notes };
}

async function refreshParts(weir: Weir, dataDir: string) {
  const store = weir.store as unknown as TableReader & ParquetExporter;
  const { resolved } = compileQuery(QUERY);
  const types = Object.fromEntries(Object.entries(DECLARED).map(([k, v]) => [k, v.type]));
  const direct = printClickHouse(
    resolved,
    bindVariables(resolved.variables, { ...WIDEST }, types),
    1,
    DEFAULT_LIMITS,
  );
  const version = weir.catalog.listEndpoints(1).find((e) => e.name === NAME)!.versions[0]!;
  const plan = planMaterialization(version, compileVersion(version), { now: new Date() });
  if ('cannot' in plan) throw new Error(plan.cannot);
  const { sql, params } = materializationSql(plan, 1);
  const file = join(dataDir, 'tmp', 'bench-profile.parquet');
  const times = { direct: [] as number[], materialize: [] as number[], export: [] as number[] };
  const rounds = 5;
  const timed = async (into: number[], run: () => Promise<unknown>): Promise<void> => {
    const t = performance.now();
    await run();
    into.push(performance.now() - t);
  };
  for (let i = 0; i < rounds; i++) {
    await timed(times.direct, () => store.queryTable(direct.sql, direct.params));
    await timed(times.materialize, () => store.queryTable(sql, params));
    rmSync(file, { force: true });
    await timed(times.export, () =>
      store.exportParquet(
        `${sql} SETTINGS output_format_parquet_compression_method = 'zstd', output_format_parquet_row_group_size = 65536`,
        params,
        file,
      ),
    );
  }
  rmSync(file, { force: true });
  return {
    rounds,
    sql,
    directSqlMs: median(times.direct),
    materializeSqlMs: median(times.materialize),
    exportMs: median(times.export),
    times,
  };
}

/** The pool's run-duration histogram (successful runs): total seconds and runs so far. */
function poolHistogram(text: string): { sum: number; count: number } {
  const read = (suffix: string): number => {
    const m = new RegExp(
      `^weir_materialized_run_duration_seconds_${suffix}\\{result="ok"\\} (\\S+)$`,
      'm',
    ).exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { sum: read('sum'), count: read('count') };
}
