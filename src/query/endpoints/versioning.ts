/**
 * How an update of an endpoint's query, variables or materialization becomes a catalog change: a changed
 * query (or changed variable declarations, which change what a run accepts) makes version N+1; the same
 * query and declarations change nothing. Decided from the newest state of the endpoint, inside the catalog's
 * serialised change, so two concurrent updates never decide from the same version.
 */
import type {
  Endpoint,
  EndpointChange,
  EndpointQuery,
  EndpointVersion,
  VariableDeclaration,
} from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import { checkDefinition, compileVersion, materializationState, sameQuery } from './definition.ts';
import type { MaterializationAnalysis } from '../materialize/analysis.ts';

export interface DefinitionUpdate {
  readonly query?: EndpointQuery;
  readonly variables?: Readonly<Record<string, VariableDeclaration>>;
  readonly isMaterialized?: boolean;
}

/**
 * The version part of a change, or an empty change. Without `variables`, a new query keeps the declarations
 * of the variables it still uses (the others belonged to the old query). 400 `invalid_query`,
 * `invalid_variables` or `cannot_materialize` when the result could not run.
 */
export function decideVersionChange(
  current: Endpoint,
  update: DefinitionUpdate,
  createdBy: string | null,
  database?: string,
): Pick<EndpointChange, 'newVersion' | 'version'> {
  const newest = current.versions[current.versions.length - 1]!;
  if (update.query === undefined && update.variables === undefined) {
    if (update.isMaterialized === undefined || update.isMaterialized === newest.isMaterialized) return {};
    if (update.isMaterialized) refuseMaterialization(compileVersion(newest, database).materialization);
    return { version: { version: newest.version, isMaterialized: update.isMaterialized } };
  }
  const query = update.query ?? newest.query;
  let variables = update.variables;
  if (variables === undefined) {
    const placeholders = checkDefinition(query, {}, database).placeholders;
    variables = Object.fromEntries(
      Object.entries(newest.variables).filter(([name]) => placeholders.includes(name)),
    );
  }
  const checked = checkDefinition(query, variables, database);
  const isMaterialized = update.isMaterialized ?? newest.isMaterialized;
  if (update.isMaterialized) refuseMaterialization(checked.materialization);
  if (sameQuery(query, newest.query) && sameDeclarations(variables, newest.variables)) {
    return isMaterialized === newest.isMaterialized
      ? {}
      : { version: { version: newest.version, isMaterialized } };
  }
  return { newVersion: { query, variables, isMaterialized, createdBy } };
}

/** The flags of one version (`PATCH …?version=N`). */
export function decideVersionFlags(
  version: EndpointVersion,
  flags: { readonly isActive?: boolean; readonly isMaterialized?: boolean },
  database?: string,
): Pick<EndpointChange, 'version'> {
  if (flags.isMaterialized === true && !version.isMaterialized) {
    refuseMaterialization(compileVersion(version, database).materialization);
  }
  if (flags.isActive === undefined && flags.isMaterialized === undefined) return {};
  return { version: { version: version.version, ...flags } };
}

/** 400 `cannot_materialize`, with the reason the endpoint shows in `materialization.reason`. */
export function refuseMaterialization(analysis: MaterializationAnalysis): never {
  throw new AppError('cannot_materialize', {
    detail: materializationState(analysis).reason ?? 'This version cannot be materialized.',
    attr: 'is_materialized',
  });
}

function sameDeclarations(
  a: Readonly<Record<string, VariableDeclaration>>,
  b: Readonly<Record<string, VariableDeclaration>>,
): boolean {
  const names = Object.keys(a);
  return (
    names.length === Object.keys(b).length &&
    names.every((n) => Object.hasOwn(b, n) && b[n]!.type === a[n]!.type)
  );
}
