import type { Catalog, Endpoint, EndpointVersion, Project } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import type { ApiRequest } from './api-route.ts';
import { authenticate, type Caller } from './auth.ts';

/** Both forms of SPEC §3's `P`. */
export const PROJECT_PREFIXES = ['/api/projects/:id', '/api/environments/:id'];

/** The caller, and the project of the path, with the scope a route needs: 401, 403 or 404 otherwise. */
export function access(
  catalog: Catalog,
  req: ApiRequest,
  scope: 'endpoint:read' | 'endpoint:write',
): { who: Caller; project: Project } {
  const who = authenticate(catalog, req.authorization);
  const project = who.requireProject(req.params[0]!);
  who.requireScope(scope);
  return { who, project };
}

export function findEndpoint(catalog: Catalog, project: Project, name: string): Endpoint {
  const endpoint = catalog.endpoint(project.id, name);
  if (!endpoint) throw noEndpoint(project, name);
  return endpoint;
}

export function findVersion(endpoint: Endpoint, n: number): EndpointVersion {
  const version = endpoint.versions[n - 1];
  if (!version) {
    throw new AppError('not_found', {
      detail: `Endpoint '${endpoint.name}' has no version ${n}; its versions are 1 to ${endpoint.versions.length}.`,
      attr: 'version',
    });
  }
  return version;
}

export function noEndpoint(project: Project, name: string): AppError {
  return new AppError('not_found', {
    detail: `Project ${project.id} has no endpoint named '${name.slice(0, 128)}'.`,
  });
}
