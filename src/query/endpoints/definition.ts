/**
 * What an endpoint version is checked against when it is made, and what a run compiles it to.
 *
 * A SQL version: its query parses and resolves (the same compile step a run takes, so a version that was
 * accepted compiles at run time), and its declared variables are exactly placeholders of the query.
 * Placeholders come from the resolved tree, never from the text: a `{variables.x}` inside a string literal
 * or a comment is not one.
 *
 * An insight version (TrendsQuery, FunnelsQuery, RetentionQuery): its query object is read and checked
 * field by field, and compiled once for a run now, so a query that cannot run is refused when it is made.
 * It takes no declared variables: its variables are the magic ones of SPEC §4.
 */
import type { EndpointQuery, VariableDeclaration } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import { compileQuery } from '../hogql-query.ts';
import { prepareInsightRun, readInsight } from '../insights/insight.ts';
import { INSIGHT_MATERIALIZATION } from '../compile/version.ts';
import { analyseMaterialization, type MaterializationAnalysis } from '../compile/materializable.ts';

export interface CheckedDefinition {
  /** The query's variables, in order of first use (none for an insight: its variables are magic). */
  readonly placeholders: readonly string[];
  readonly materialization: MaterializationAnalysis;
}

/**
 * Checks a query and the variable declarations given with it. 400 `invalid_query` (the parser's, the
 * resolver's or the insight reader's message) or `invalid_variables` (a declaration without a placeholder).
 */
export function checkDefinition(
  query: EndpointQuery,
  declared: Readonly<Record<string, VariableDeclaration>>,
  database?: string,
): CheckedDefinition {
  if (query.kind !== 'HogQLQuery') {
    const insight = readInsight(query);
    if (Object.keys(declared).length > 0) {
      throw new AppError('invalid_variables', {
        detail: `An insight endpoint declares no variables: it takes its breakdown property and 'date_from' / 'date_to' as variables by itself. Remove 'variables'.`,
        attr: 'variables',
      });
    }
    // Compiled once now, so that a query Weir cannot run is refused here rather than at its first run.
    prepareInsightRun(insight, {}, { now: new Date(), materialized: false, database });
    return { placeholders: [], materialization: INSIGHT_MATERIALIZATION };
  }
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

/** Whether two queries are the same (a PATCH with an unchanged query makes no new version). */
export function sameQuery(a: EndpointQuery, b: EndpointQuery): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
