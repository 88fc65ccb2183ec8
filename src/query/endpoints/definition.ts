/**
 * What an endpoint version is checked against when it is made: its query parses and resolves (the same
 * compile step a run takes, so a version that was accepted compiles at run time), and its declared variables
 * are exactly placeholders of the query. Placeholders come from the resolved tree, never from the text: a
 * `{variables.x}` inside a string literal or a comment is not one.
 */
import type { EndpointQuery, EndpointVersion, VariableDeclaration, VariableType } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import type { Query } from '../dialect/mod.ts';
import { compileQuery } from '../hogql-query.ts';
import type { ResolvedQuery } from '../resolver/resolver.ts';
import { analyseMaterialization, type MaterializationAnalysis } from '../materialize/analysis.ts';

export interface CheckedDefinition {
  /** The query's variables, in order of first use. */
  readonly placeholders: readonly string[];
  readonly materialization: MaterializationAnalysis;
}

/**
 * Checks a query and the variable declarations given with it. 400 `invalid_query` (the parser's or the
 * resolver's message) or `invalid_variables` (a declaration without a placeholder).
 */
export function checkDefinition(
  query: EndpointQuery,
  declared: Readonly<Record<string, VariableDeclaration>>,
  database?: string,
): CheckedDefinition {
  const compiled = compileQuery(query.query, database);
  const placeholders = compiled.resolved.variables;
  const unused = Object.keys(declared).filter((name) => !placeholders.includes(name));
  if (unused.length > 0) {
    throw new AppError('invalid_variables', {
      detail: `The query has no placeholder for the declared variable(s) ${unused
        .map((n) => `'${n}'`)
        .join(', ')}: use {variables.${unused[0]}} in the query, or remove the declaration. The query uses ${
        placeholders.length === 0 ? 'no variables' : placeholders.map((n) => `'${n}'`).join(', ')
      }.`,
      attr: `variables.${unused[0]}`,
    });
  }
  return { placeholders, materialization: analyseMaterialization(compiled.ast) };
}

export interface CompiledVersion {
  readonly ast: Query;
  readonly resolved: ResolvedQuery;
  readonly materialization: MaterializationAnalysis;
  /** The declared type of each variable, by name (what `bindVariables` takes). */
  readonly declaredTypes: Readonly<Record<string, VariableType>>;
}

const compiledVersions = new WeakMap<EndpointVersion, CompiledVersion>();

/**
 * A version's query, parsed and resolved once per version object (versions are immutable: a change of
 * their flags makes a new object, and a new compile).
 */
export function compileVersion(version: EndpointVersion, database?: string): CompiledVersion {
  let compiled = compiledVersions.get(version);
  if (!compiled) {
    const { ast, resolved } = compileQuery(version.query.query, database);
    const declaredTypes: Record<string, VariableType> = {};
    for (const [name, d] of Object.entries(version.variables)) declaredTypes[name] = d.type;
    compiled = { ast, resolved, materialization: analyseMaterialization(ast), declaredTypes };
    compiledVersions.set(version, compiled);
  }
  return compiled;
}

/**
 * Whether a version can be materialized now, and why not: materialization is not built yet, so never — but
 * the reason says whether the query itself would qualify (SPEC §4's rule), which holds once it is.
 */
export function materializationState(analysis: MaterializationAnalysis): MaterializationAnalysis {
  if (!analysis.canMaterialize) return analysis;
  return {
    canMaterialize: false,
    reason:
      'Materialization is not available in this version of Weir yet; the query itself qualifies (every variable is a WHERE filter under AND).',
  };
}
