import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, Endpoint, Project } from '../core/ports.ts';
import type { InFlight } from '../http/in-flight.ts';
import { checkDefinition } from '../query/endpoints/definition.ts';
import { decideVersionChange, decideVersionFlags } from '../query/endpoints/versioning.ts';
import { requireMaterializable } from '../query/materialize/availability.ts';
import { pendingState, type Materializations } from '../query/materialize/materializations.ts';
import { AppError } from '../errors/app-error.ts';
import { apiRoute, type ApiRequest, type ApiResponse } from './api-route.ts';
import { PROJECT_PREFIXES, access, findEndpoint, findVersion, noEndpoint } from './endpoint-access.ts';
import {
  DEFAULT_CACHE_AGE_SECONDS,
  VERSION_FIELDS,
  createFields,
  readEndpointFields,
  readVersionParam,
} from './endpoint-input.ts';
import { endpointEtag, requireEtag } from './endpoint-etag.ts';
import { endpointJson, versionJson } from './endpoint-json.ts';

export interface EndpointRoutesDeps {
  readonly catalog: Catalog;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** Told of every change and deletion of an endpoint (its cached results go). */
  readonly onEndpointChanged?: (endpointId: string) => void;
  /** Refreshes materializations; told to look at once when one is asked for. */
  readonly materializations?: Materializations;
}

/**
 * Endpoints' CRUD (SPEC §4) on both path forms: list, create (version 1), get (`?version=N`), update (a
 * changed query makes version N+1; `?version=N` changes that version's flags), delete, versions. Reading
 * needs `endpoint:read`, changing `endpoint:write`.
 */
export function registerEndpointRoutes(app: HttpApp, deps: EndpointRoutesDeps): void {
  const { catalog } = deps;
  const changed = (e: Endpoint): void => deps.onEndpointChanged?.(e.id);

  for (const prefix of PROJECT_PREFIXES) {
    apiRoute(app, deps, `${prefix}/endpoints/`, {
      get: (req) => {
        const { project } = access(catalog, req, 'endpoint:read');
        const results = catalog.listEndpoints(project.id).map((e) => endpointJson(e));
        return { status: 200, body: { results, count: results.length } };
      },
      post: async (req) => {
        const { project, who } = access(catalog, req, 'endpoint:write');
        const fields = createFields(readEndpointFields(req.body));
        const variables = fields.variables ?? {};
        checkDefinition(fields.query, variables);
        const bucket = fields.materializationBucket ?? 'day';
        if (fields.isMaterialized) {
          requireMaterializable(
            {
              version: 1,
              query: fields.query,
              variables,
              isActive: true,
              isMaterialized: true,
              createdAt: '',
              createdBy: null,
            },
            bucket,
          );
        }
        const endpoint = await catalog.createEndpoint(project.id, {
          name: fields.name,
          description: fields.description ?? '',
          cacheAgeSeconds: fields.cacheAgeSeconds ?? DEFAULT_CACHE_AGE_SECONDS,
          isActive: fields.isActive ?? true,
          syncFrequency: fields.syncFrequency ?? '24hour',
          materializationBucket: bucket,
          query: fields.query,
          variables,
          isMaterialized: fields.isMaterialized ?? false,
          createdBy: who.key.id,
        });
        if (fields.isMaterialized) void deps.materializations?.tick();
        return { status: 201, body: endpointJson(endpoint), headers: etagOf(endpoint) };
      },
    });

    apiRoute(app, deps, `${prefix}/endpoints/:name/`, {
      get: (req) => {
        const { project } = access(catalog, req, 'endpoint:read');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        const n = readVersionParam(req.query);
        const shown = n === undefined ? undefined : findVersion(endpoint, n);
        return { status: 200, body: endpointJson(endpoint, shown), headers: etagOf(endpoint) };
      },
      patch: async (req) => {
        const { project, who } = access(catalog, req, 'endpoint:write');
        const name = req.params[1]!;
        findEndpoint(catalog, project, name);
        const n = readVersionParam(req.query);
        if (n !== undefined) return patchVersion(req, project, name, n);
        const fields = readEndpointFields(req.body);
        const updated = await catalog.updateEndpoint(project.id, name, (current) => {
          requireEtag(req.ifMatch, current);
          return {
            name: fields.name,
            description: fields.description,
            cacheAgeSeconds: fields.cacheAgeSeconds,
            isActive: fields.isActive,
            syncFrequency: fields.syncFrequency,
            materializationBucket: fields.materializationBucket,
            ...decideVersionChange(current, fields, who.key.id),
          };
        });
        if (!updated) throw noEndpoint(project, name); // deleted meanwhile
        changed(updated);
        void deps.materializations?.tick();
        return { status: 200, body: endpointJson(updated), headers: etagOf(updated) };
      },
      del: async (req) => {
        const { project } = access(catalog, req, 'endpoint:write');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        const deleted = await catalog.deleteEndpoint(project.id, endpoint.name, (current) =>
          requireEtag(req.ifMatch, current),
        );
        if (!deleted) throw noEndpoint(project, endpoint.name);
        changed(endpoint);
        return { status: 204 };
      },
    });

    apiRoute(app, deps, `${prefix}/endpoints/:name/materialize`, {
      // Refreshes the newest materialized version now (SPEC §4): 202, the refresh runs in the background.
      post: async (req) => {
        const { project } = access(catalog, req, 'endpoint:write');
        const name = req.params[1]!;
        const endpoint = findEndpoint(catalog, project, name);
        const target = [...endpoint.versions].reverse().find((v) => v.isMaterialized);
        if (!target) {
          throw new AppError('cannot_materialize', {
            detail: `No version of '${endpoint.name}' is materialized: set is_materialized on one first.`,
            attr: 'is_materialized',
          });
        }
        const updated = await catalog.updateEndpoint(project.id, name, (current) => {
          const v = current.versions[target.version - 1]!;
          return { version: { version: v.version, materialization: pendingState(v) } };
        });
        if (!updated) throw noEndpoint(project, name);
        void deps.materializations?.tick();
        return { status: 202, body: endpointJson(updated, findVersion(updated, target.version)) };
      },
    });

    apiRoute(app, deps, `${prefix}/endpoints/:name/versions/`, {
      get: (req) => {
        const { project } = access(catalog, req, 'endpoint:read');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        const results = [...endpoint.versions].reverse().map((v) => versionJson(endpoint, v));
        return { status: 200, body: { results, count: results.length } };
      },
    });
  }

  /** `PATCH …?version=N`: only that version's flags; the endpoint's own fields are changed without it. */
  async function patchVersion(
    req: ApiRequest,
    project: Project,
    name: string,
    n: number,
  ): Promise<ApiResponse> {
    const fields = readEndpointFields(req.body, VERSION_FIELDS);
    const updated = await catalog.updateEndpoint(project.id, name, (current) => {
      requireEtag(req.ifMatch, current);
      return decideVersionFlags(findVersion(current, n), fields, current.materializationBucket);
    });
    if (!updated) throw noEndpoint(project, name);
    changed(updated);
    void deps.materializations?.tick();
    return {
      status: 200,
      body: endpointJson(updated, findVersion(updated, n)),
      headers: etagOf(updated),
    };
  }
}

function etagOf(endpoint: Endpoint): Record<string, string> {
  return { ETag: endpointEtag(endpoint) };
}
