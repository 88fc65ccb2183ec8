/** Endpoints and their versions as the API shows them (SPEC §4). */
import type { Endpoint, EndpointVersion } from '../core/ports.ts';
import { compileVersion, materializationState } from '../query/endpoints/definition.ts';
import type { MaterializationAnalysis } from '../query/materialize/analysis.ts';

/** The run path of an endpoint, in the `environments` form PostHog documents. */
export function runPath(projectId: number, name: string): string {
  return `/api/environments/${projectId}/endpoints/${encodeURIComponent(name)}/run`;
}

/**
 * An endpoint as shown: its own fields, and the query, variables and flags of `shown` (the newest version
 * unless `?version=N` named another; `is_active` is then that version's).
 */
export function endpointJson(e: Endpoint, shown?: EndpointVersion): Record<string, unknown> {
  const current = e.versions[e.versions.length - 1]!;
  const v = shown ?? current;
  return {
    id: e.id,
    name: e.name,
    query: v.query,
    description: e.description,
    variables: v.variables,
    cache_age_seconds: e.cacheAgeSeconds,
    is_active: shown ? v.isActive : e.isActive,
    is_materialized: v.isMaterialized,
    sync_frequency: e.syncFrequency,
    materialization_bucket: e.materializationBucket,
    current_version: current.version,
    versions_count: e.versions.length,
    endpoint_path: runPath(e.projectId, e.name),
    created_at: e.createdAt,
    updated_at: e.updatedAt,
    materialization: materializationJson(v),
  };
}

/** One entry of `versions/`. */
export function versionJson(v: EndpointVersion): Record<string, unknown> {
  return {
    version: v.version,
    query: v.query,
    variables: v.variables,
    is_active: v.isActive,
    is_materialized: v.isMaterialized,
    created_at: v.createdAt,
    materialization: materializationJson(v),
  };
}

/** Materialization is not built yet: every version runs on raw data (status `none`), and says why. */
function materializationJson(v: EndpointVersion): Record<string, unknown> {
  const state = materializationState(analysis(v));
  return {
    status: 'none',
    can_materialize: state.canMaterialize,
    reason: state.reason,
    last_materialized_at: null,
    rows: null,
    error: null,
  };
}

function analysis(v: EndpointVersion): MaterializationAnalysis {
  try {
    return compileVersion(v).materialization;
  } catch (err) {
    // A version accepted by an older Weir whose dialect this one reads differently.
    return {
      canMaterialize: false,
      reason: err instanceof Error ? err.message : 'The query does not compile.',
    };
  }
}
