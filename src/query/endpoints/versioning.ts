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
  MaterializationBucket,
  VariableDeclaration,
} from '../../core/ports.ts';
import { requireMaterializable } from '../materialize/availability.ts';
import { pendingState } from '../materialize/materializations.ts';
import { checkDefinition, sameQuery } from './definition.ts';

export interface DefinitionUpdate {
  readonly query?: EndpointQuery;
  readonly variables?: Readonly<Record<string, VariableDeclaration>>;
  readonly isMaterialized?: boolean;
  readonly materializationBucket?: MaterializationBucket;
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
  const bucket = update.materializationBucket ?? current.materializationBucket;
  if (update.query === undefined && update.variables === undefined) {
    if (update.isMaterialized === undefined || update.isMaterialized === newest.isMaterialized) return {};
    return decideVersionFlags(newest, { isMaterialized: update.isMaterialized }, bucket);
  }
  const query = update.query ?? newest.query;
  let variables = update.variables;
  if (variables === undefined) {
    const placeholders = checkDefinition(query, {}, database).placeholders;
    variables = Object.fromEntries(
      Object.entries(newest.variables).filter(([name]) => placeholders.includes(name)),
    );
  }
  checkDefinition(query, variables, database);
  const isMaterialized = update.isMaterialized ?? newest.isMaterialized;
  if (sameQuery(query, newest.query) && sameDeclarations(variables, newest.variables)) {
    return isMaterialized === newest.isMaterialized
      ? {}
      : decideVersionFlags(newest, { isMaterialized }, bucket);
  }
  if (update.isMaterialized) {
    // Checked as the version it will be; its first refresh is due as soon as it exists (no state yet).
    requireMaterializable(
      {
        ...newest,
        version: newest.version + 1,
        query,
        variables,
        isMaterialized: true,
        materialization: undefined,
      },
      bucket,
    );
  }
  return { newVersion: { query, variables, isMaterialized, createdBy } };
}

/** The flags of one version (`PATCH …?version=N`). */
export function decideVersionFlags(
  version: EndpointVersion,
  flags: { readonly isActive?: boolean; readonly isMaterialized?: boolean },
  bucket: MaterializationBucket,
): Pick<EndpointChange, 'version'> {
  if (flags.isActive === undefined && flags.isMaterialized === undefined) return {};
  if (flags.isMaterialized === true && !version.isMaterialized) {
    requireMaterializable(version, bucket);
    // Enabling asks for a refresh at once (SPEC §4), keeping any earlier result until it lands.
    return { version: { version: version.version, ...flags, materialization: pendingState(version) } };
  }
  return { version: { version: version.version, ...flags } };
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
