/** Endpoints and their versions as the API shows them (SPEC §4). */
import type { Endpoint, EndpointVersion } from '../core/ports.ts';
import { materializability } from '../query/materialize/availability.ts';
import { Materializations } from '../query/materialize/materializations.ts';

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
    materialization: materializationJson(e, v),
  };
}

/** One entry of `versions/`. */
export function versionJson(e: Endpoint, v: EndpointVersion): Record<string, unknown> {
  return {
    version: v.version,
    query: v.query,
    variables: v.variables,
    is_active: v.isActive,
    is_materialized: v.isMaterialized,
    created_at: v.createdAt,
    materialization: materializationJson(e, v),
  };
}

/** A version's materialization as SPEC §4 shows it: its state, and whether it can be materialized. */
function materializationJson(e: Endpoint, v: EndpointVersion): Record<string, unknown> {
  const { canMaterialize, reason } = materializability(v, e.materializationBucket);
  const state = v.isMaterialized ? v.materialization : undefined;
  return {
    status: Materializations.status(v),
    can_materialize: canMaterialize,
    reason,
    last_materialized_at: state?.lastMaterializedAt ?? null,
    rows: state?.rows ?? null,
    bytes: state?.bytes ?? null,
    error: state?.error ?? null,
  };
}
