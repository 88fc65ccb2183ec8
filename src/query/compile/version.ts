/**
 * An endpoint version compiled for a run: a SQL version parsed and resolved, an insight version read and
 * checked, each with whether it can be materialized. Below both endpoints/ (which runs versions) and
 * materialize/ (which refreshes them), so that neither imports the other for it.
 */
import type { EndpointVersion, VariableType } from '../../core/ports.ts';
import type { PropertyTypes } from '../../core/property-types.ts';
import type { Query } from '../dialect/mod.ts';
import { compileQuery } from '../hogql-query.ts';
import { readInsight, type CheckedInsightQuery } from '../insights/insight.ts';
import type { ResolvedQuery } from '../resolver/resolver.ts';
import { analyseMaterialization, type MaterializationAnalysis } from './materializable.ts';

/** An insight keeps its breakdown as a column when materialized; the rewrite (materialize/) has the last word. */
export const INSIGHT_MATERIALIZATION: MaterializationAnalysis = { canMaterialize: true, reason: null };

/** A SQL version, parsed and resolved. */
export interface CompiledSqlVersion {
  readonly kind: 'sql';
  readonly ast: Query;
  readonly resolved: ResolvedQuery;
  readonly materialization: MaterializationAnalysis;
  /** The declared type of each variable, by name (what `bindVariables` takes). */
  readonly declaredTypes: Readonly<Record<string, VariableType>>;
}

/** An insight version, read and checked; each run compiles it for its own range and variables. */
export interface CompiledInsightVersion {
  readonly kind: 'insight';
  readonly insight: CheckedInsightQuery;
  readonly materialization: MaterializationAnalysis;
}

export type CompiledVersion = CompiledSqlVersion | CompiledInsightVersion;

const compiledVersions = new WeakMap<EndpointVersion, { types: number; compiled: CompiledVersion }>();

/**
 * A version's query, compiled (SQL) or read (insight) once per version object (versions are immutable: a
 * change of their flags makes a new object, and a new compile) and per version of its project's property
 * types (a SQL query reads a property as its type: a type added or changed makes a new compile).
 */
export function compileVersion(
  version: EndpointVersion,
  database?: string,
  properties?: PropertyTypes,
): CompiledVersion {
  const types = properties?.version ?? -1;
  const kept = compiledVersions.get(version);
  let compiled =
    kept && (kept.types === types || kept.compiled.kind === 'insight') ? kept.compiled : undefined;
  if (!compiled) {
    const query = version.query;
    if (query.kind === 'HogQLQuery') {
      const { ast, resolved } = compileQuery(query.query, database, properties);
      const declaredTypes: Record<string, VariableType> = {};
      for (const [name, d] of Object.entries(version.variables)) declaredTypes[name] = d.type;
      compiled = { kind: 'sql', ast, resolved, materialization: analyseMaterialization(ast), declaredTypes };
    } else {
      compiled = { kind: 'insight', insight: readInsight(query), materialization: INSIGHT_MATERIALIZATION };
    }
    compiledVersions.set(version, { types, compiled });
  }
  return compiled;
}
