/**
 * Materialized runs against direct runs on the real engine: a version's materialization query runs on chDB
 * and comes back as Parquet bytes (as the writer stores them), read into an Arrow table with parquet-wasm
 * (as a query actor loads it) and served by `executeServing`; the direct run is the endpoint run's own
 * (`runCompiledQuery` with the variables bound, the page written into the query).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import { Session } from 'chdb';
import { readParquet } from 'parquet-wasm';
import { createLogger } from '../../src/core/logger.ts';
import type {
  EndpointVersion,
  MaterializationBucket,
  TableReader,
  VariableType,
} from '../../src/core/ports.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { compileVersion, type CompiledVersion } from '../../src/query/compile/version.ts';
import { pageRows, paginate, type Page } from '../../src/query/endpoints/pagination.ts';
import { runCompiledQuery } from '../../src/query/hogql-query.ts';
import { finishInsightRows, prepareInsightRun } from '../../src/query/insights/insight.ts';
import { executeServing } from '../../src/query/materialize/execute.ts';
import {
  describeMaterialization,
  materializationSql,
  planMaterialization,
  servingVariables,
  type MaterializationPlan,
} from '../../src/query/materialize/rewrite.ts';
export { servingVariables } from '../../src/query/materialize/rewrite.ts';
import type { ServedResult, ServingPlan } from '../../src/query/materialize/serving.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * A migrated chDB store in a temporary directory, and a chDB session on the same data for what the store's
 * client cannot answer (Parquet bytes); closed and removed when `t` ends.
 */
export async function materializeStore(t: Teardown): Promise<{ store: ChdbClient; engine: Session }> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-materialize-'));
  const store = ChdbClient.open(join(dir, 'chdb'));
  await migrate(store, createLogger('silent'));
  const engine = new Session(join(dir, 'chdb'));
  t.teardown(async () => {
    engine.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, engine };
}

export interface Answer {
  readonly columns: string[];
  readonly types: string[];
  readonly rows: unknown[][];
  readonly hasMore: boolean;
}

/** A version of a SQL endpoint (or an insight's, when `query` is an object). */
export function sqlVersion(
  query: string | Record<string, unknown>,
  variables: Record<string, VariableType> = {},
): EndpointVersion {
  return {
    version: 1,
    query: typeof query === 'string' ? { kind: 'HogQLQuery', query } : (query as never),
    variables: Object.fromEntries(Object.entries(variables).map(([k, type]) => [k, { type }])),
    isActive: true,
    isMaterialized: true,
    createdAt: '2024-01-01T00:00:00Z',
    createdBy: null,
  };
}

export interface Materialized {
  readonly version: EndpointVersion;
  readonly compiled: CompiledVersion;
  readonly plan: MaterializationPlan;
  readonly serving: ServingPlan;
  readonly table: Table;
  readonly bytes: number;
}

/** Plans, runs and loads the materialization of a version; throws with the reason when it cannot be. */
export async function materialize(
  store: TableReader,
  engine: Session,
  version: EndpointVersion,
  options: { bucket?: MaterializationBucket; now?: Date; project?: number } = {},
): Promise<Materialized> {
  const compiled = compileVersion(version);
  const plan = planMaterialization(version, compiled, {
    now: options.now ?? new Date(),
    bucket: options.bucket,
  });
  if ('cannot' in plan) throw new Error(`cannot materialize: ${plan.cannot}`);
  const project = options.project ?? 1;
  const serving = await describeMaterialization(plan, store, project);
  const { sql, params } = materializationSql(plan, project);
  const result = await engine.queryBindAsync(sql, params, { format: 'Parquet' });
  const bytes = result.bytes();
  const table = tableFromIPC(readParquet(bytes).intoIPCStream());
  return { version, compiled, plan, serving, table, bytes: bytes.length };
}

/** A run answered from the materialization. */
export function servedRun(
  m: Materialized,
  variables: Record<string, unknown>,
  page: Page = {},
): ServedResult {
  return executeServing(m.table, m.serving, servingVariables(m.compiled, variables), page);
}

/** The same run on raw data, as a run of a version that is not materialized. */
export async function directRun(
  store: TableReader,
  version: EndpointVersion,
  variables: Record<string, unknown>,
  options: { page?: Page; now?: Date; project?: number } = {},
): Promise<Answer> {
  const compiled = compileVersion(version);
  const project = options.project ?? 1;
  if (compiled.kind === 'sql') {
    const page = options.page ?? {};
    const bound = bindVariables(compiled.resolved.variables, variables, compiled.declaredTypes);
    const result = await runCompiledQuery(paginate(compiled, page), bound, project, { store });
    const { rows, hasMore } = pageRows(result.results, page);
    return { columns: result.columns, types: result.types, rows, hasMore };
  }
  const prepared = prepareInsightRun(compiled.insight, variables, {
    now: options.now ?? new Date(),
    materialized: false,
  });
  const result = await runCompiledQuery(prepared.compiled, prepared.bound, project, { store });
  const { rows, hasMore } = finishInsightRows(prepared, result.columns, result.results);
  return { columns: result.columns, types: result.types, rows, hasMore };
}

/** Floats equal to 1e-9 of their size (a sum merged from buckets adds in another order); the rest exactly. */
export function sameAnswer(a: Answer, b: Answer): boolean {
  return (
    JSON.stringify(a.columns) === JSON.stringify(b.columns) &&
    JSON.stringify(a.types) === JSON.stringify(b.types) &&
    a.hasMore === b.hasMore &&
    sameValue(a.rows, b.rows)
  );
}

function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
  }
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  return JSON.stringify(a) === JSON.stringify(b);
}
