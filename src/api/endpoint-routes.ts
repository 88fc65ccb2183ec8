import type { TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../core/logger.ts';
import type { Catalog, Endpoint, Project } from '../core/ports.ts';
import type { InFlight } from '../http/in-flight.ts';
import { checkDefinition } from '../query/endpoints/definition.ts';
import {
  decideVersionChange,
  decideVersionFlags,
  refuseMaterialization,
} from '../query/endpoints/versioning.ts';
import { apiRoute, type ApiRequest, type ApiResponse } from './api-route.ts';
import { PROJECT_PREFIXES, access, findEndpoint, findVersion, noEndpoint } from './endpoint-access.ts';
import {
  DEFAULT_CACHE_AGE_SECONDS,
  VERSION_FIELDS,
  createFields,
  readEndpointFields,
  readVersionParam,
} from './endpoint-input.ts';
import { endpointJson, versionJson } from './endpoint-json.ts';

export interface EndpointRoutesDeps {
  readonly catalog: Catalog;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** Told of every change and deletion of an endpoint (its cached results go). */
  readonly onEndpointChanged?: (endpointId: string) => void;
}

/**
 * Endpoints' CRUD (SPEC §4) on both path forms: list, create (version 1), get (`?version=N`), update (a
 * changed query makes version N+1; `?version=N` changes that version's flags), delete, versions. Reading
 * needs `endpoint:read`, changing `endpoint:write`.
 */
export function registerEndpointRoutes(app: TemplatedApp, deps: EndpointRoutesDeps): void {
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
        const checked = checkDefinition(fields.query, variables);
        if (fields.isMaterialized) refuseMaterialization(checked.materialization);
        const endpoint = await catalog.createEndpoint(project.id, {
          name: fields.name,
          description: fields.description ?? '',
          cacheAgeSeconds: fields.cacheAgeSeconds ?? DEFAULT_CACHE_AGE_SECONDS,
          isActive: fields.isActive ?? true,
          syncFrequency: fields.syncFrequency ?? '24hour',
          materializationBucket: fields.materializationBucket ?? 'day',
          query: fields.query,
          variables,
          isMaterialized: false,
          createdBy: who.key.id,
        });
        return { status: 201, body: endpointJson(endpoint) };
      },
    });

    apiRoute(app, deps, `${prefix}/endpoints/:name/`, {
      get: (req) => {
        const { project } = access(catalog, req, 'endpoint:read');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        const n = readVersionParam(req.query);
        const shown = n === undefined ? undefined : findVersion(endpoint, n);
        return { status: 200, body: endpointJson(endpoint, shown) };
      },
      patch: async (req) => {
        const { project, who } = access(catalog, req, 'endpoint:write');
        const name = req.params[1]!;
        findEndpoint(catalog, project, name);
        const n = readVersionParam(req.query);
        if (n !== undefined) return patchVersion(req, project, name, n);
        const fields = readEndpointFields(req.body);
        const updated = await catalog.updateEndpoint(project.id, name, (current) => ({
          name: fields.name,
          description: fields.description,
          cacheAgeSeconds: fields.cacheAgeSeconds,
          isActive: fields.isActive,
          syncFrequency: fields.syncFrequency,
          materializationBucket: fields.materializationBucket,
          ...decideVersionChange(current, fields, who.key.id),
        }));
        if (!updated) throw noEndpoint(project, name); // deleted meanwhile
        changed(updated);
        return { status: 200, body: endpointJson(updated) };
      },
      del: async (req) => {
        const { project } = access(catalog, req, 'endpoint:write');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        if (!(await catalog.deleteEndpoint(project.id, endpoint.name)))
          throw noEndpoint(project, endpoint.name);
        changed(endpoint);
        return { status: 204 };
      },
    });

    apiRoute(app, deps, `${prefix}/endpoints/:name/versions/`, {
      get: (req) => {
        const { project } = access(catalog, req, 'endpoint:read');
        const endpoint = findEndpoint(catalog, project, req.params[1]!);
        const results = [...endpoint.versions].reverse().map(versionJson);
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
    const updated = await catalog.updateEndpoint(project.id, name, (current) =>
      decideVersionFlags(findVersion(current, n), fields),
    );
    if (!updated) throw noEndpoint(project, name);
    changed(updated);
    return { status: 200, body: endpointJson(updated, findVersion(updated, n)) };
  }
}
