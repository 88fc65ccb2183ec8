/**
 * The materialization of an endpoint version (SPEC §4): the query the engine runs to make the stored table,
 * the values it binds, and the ServingPlan a run follows to answer from that table — or a precise reason
 * why the version cannot be materialized. SQL versions are rewritten (rewrite-sql.ts), insights keep their
 * breakdown as a column (rewrite-insight.ts).
 *
 * The plan is complete once its stored columns' ClickHouse types are known (`describeMaterialization`):
 * a run's answer carries them, and they tell how each Parquet value reads back (a DateTime and a
 * DateTime64(3) arrive alike).
 */
import type { EndpointVersion, MaterializationBucket, TableReader } from '../../core/ports.ts';
import type { PropertyTypes } from '../../core/property-types.ts';
import { PROJECT_PARAM } from '../clickhouse/printer.ts';
import { bindVariables, type BoundVariable, type ParamValue } from '../clickhouse/variables.ts';
import { printDialect } from '../dialect/mod.ts';
import type { CompiledVersion } from '../compile/version.ts';
import type { CompiledQuery } from '../hogql-query.ts';
import { planInsightRun } from '../insights/insight.ts';
import { QueryResolveError } from '../resolver/errors.ts';
import { resolveQuery } from '../resolver/resolver.ts';
import { PROJECT_PLACEHOLDER } from '../resolver/store-table.ts';
import { rewriteInsight } from './rewrite-insight.ts';
import { rewriteSql } from './rewrite-sql.ts';
import { withStoredTypes, type ServingPlan } from './serving.ts';

export interface MaterializationPlan {
  /** What the engine runs to make the stored table. */
  readonly query: CompiledQuery;
  /** The values its placeholders take (an insight's range ends; none for SQL). */
  readonly bound: Map<string, BoundVariable>;
  /** How a run is answered from the stored table; its stored types are null until described. */
  readonly serving: ServingPlan;
}

export interface MaterializationOptions {
  /** When the refresh starts: an insight's relative range is resolved at it. */
  readonly now: Date;
  /** The database of the store tables. */
  readonly database?: string;
  /** The bucket a range variable's time column is kept at. @default 'day' */
  readonly bucket?: MaterializationBucket;
  /** The project's property types (a SQL query reads its properties as them). */
  readonly properties?: PropertyTypes;
}

export function planMaterialization(
  version: EndpointVersion,
  compiled: CompiledVersion,
  options: MaterializationOptions,
): MaterializationPlan | { cannot: string } {
  if (compiled.kind === 'insight') {
    const { query, bound, serving } = rewriteInsight(compiled.insight, options.now, options.database);
    return { query: { ast: query, resolved: resolve(query, options.database, undefined) }, bound, serving };
  }
  if (!compiled.materialization.canMaterialize) {
    return { cannot: compiled.materialization.reason ?? 'The query cannot be materialized.' };
  }
  const declared = { ...compiled.declaredTypes };
  for (const [name, d] of Object.entries(version.variables)) declared[name] ??= d.type;
  const rewrite = rewriteSql(compiled.ast, compiled.resolved.columns, declared, options.bucket ?? 'day');
  if ('cannot' in rewrite) return rewrite;
  return {
    query: { ast: rewrite.query, resolved: resolve(rewrite.query, options.database, options.properties) },
    bound: new Map(),
    serving: rewrite.serving,
  };
}

function resolve(
  query: CompiledQuery['ast'],
  database: string | undefined,
  properties: PropertyTypes | undefined,
): CompiledQuery['resolved'] {
  try {
    return resolveQuery(query, { database, properties });
  } catch (err) {
    // The rewrite is Weir's own: a query it makes that does not resolve is Weir's fault, not the caller's.
    if (err instanceof QueryResolveError) {
      throw new Error(`materialization query does not resolve: ${err.message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * The SQL the engine runs for a plan, parameters as `{name:Type}`, with no SETTINGS clause: the writer adds
 * its own (output format, limits), and DESCRIBE takes none.
 */
export function materializationSql(
  plan: MaterializationPlan,
  projectId: number,
): { sql: string; params: Record<string, ParamValue> } {
  const params: Record<string, ParamValue> = { [PROJECT_PARAM]: projectId };
  for (const b of plan.bound.values()) params[b.param] = b.value;
  const sql = printDialect(plan.query.resolved.query, {
    placeholder: (name) => {
      if (name === PROJECT_PLACEHOLDER) return `{${PROJECT_PARAM}:UInt64}`;
      const b = plan.bound.get(name);
      if (b === undefined) throw new Error(`variable ${name} is not bound`);
      return `{${b.param}:${b.type}}`;
    },
  });
  return { sql, params };
}

/** The plan's serving part with its stored columns' types, as the engine describes the query (no rows read). */
export async function describeMaterialization(
  plan: MaterializationPlan,
  reader: TableReader,
  projectId: number,
): Promise<ServingPlan> {
  const { sql, params } = materializationSql(plan, projectId);
  const described = await reader.queryTable(`DESCRIBE TABLE (${sql})`, params, {
    project: projectId,
    kind: 'materialize',
  });
  const type = described.columns.indexOf('type');
  return withStoredTypes(
    plan.serving,
    described.rows.map((row) => String(row[type])),
  );
}

/**
 * A materialized run's variables, checked as a direct run checks them (400 `missing_variable`,
 * `unknown_variable`, `invalid_variable`; `date_variables_unavailable` on an insight), as `executeServing`
 * takes them: for SQL the bound values by name; for an insight the breakdown property's value, if given.
 */
export function servingVariables(
  compiled: CompiledVersion,
  variables: Readonly<Record<string, unknown>>,
  now: Date = new Date(),
): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  if (compiled.kind === 'sql') {
    const bound = bindVariables(compiled.resolved.variables, variables, compiled.declaredTypes);
    for (const b of bound.values()) out[b.name] = b.value;
    return out;
  }
  const plan = planInsightRun(compiled.insight, variables, { now, materialized: true });
  const property = Object.keys(variables)[0];
  if (plan.selection !== null && property !== undefined) {
    out[property] = plan.selection.kind === 'null' ? null : plan.values.get('breakdown_value')!.value;
  }
  return out;
}
