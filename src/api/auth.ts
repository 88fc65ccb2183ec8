import type { Catalog, PersonalApiKey, Project, Scope } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Who is calling the management, query, run and OpenAPI routes (SPEC §3): a personal API key, found in
 * `Authorization: Bearer <key>`. Routes check what it may do with `requireProject` and `requireScope`;
 * both throw the AppError SPEC §1 asks for, so a route only has to let it propagate.
 *
 * Suggested order in a route: `authenticate` (401), then `requireProject` (403 / 404), then `requireScope`
 * (403) — a key never learns whether a project it does not reach exists.
 */
export class Caller {
  constructor(
    readonly key: PersonalApiKey,
    readonly catalog: Catalog,
  ) {}

  hasScope(scope: Scope): boolean {
    return this.key.scopes.includes('*') || this.key.scopes.includes(scope);
  }

  /** 403 `missing_scope` unless the key holds `scope` (or `*`). */
  requireScope(scope: Scope): void {
    if (!this.hasScope(scope)) {
      throw new AppError('missing_scope', { detail: `This personal API key lacks the scope '${scope}'.` });
    }
  }

  reaches(projectId: number): boolean {
    return this.key.projects === '*' || this.key.projects.includes(projectId);
  }

  /**
   * The project a path names (`/api/projects/{id}/…`), if the key reaches it. 403 `project_forbidden` for a
   * project outside the key's reach (existing or not); 404 `not_found` for an id that names no project.
   */
  requireProject(id: string | number): Project {
    const projectId = this.requireReach(id);
    const project = this.catalog.project(projectId);
    if (!project) throw new AppError('not_found', { detail: `There is no project ${projectId}.` });
    return project;
  }

  /**
   * The id a path names, if the key reaches it, whether the project exists or not (a deleted project's
   * deletions are still the key's to read). 404 for an id that is not one, 403 `project_forbidden`.
   */
  requireReach(id: string | number): number {
    const projectId = typeof id === 'number' ? id : /^\d{1,15}$/.test(id) ? Number(id) : undefined;
    if (projectId === undefined) {
      throw new AppError('not_found', { detail: 'A project id is a positive integer.' });
    }
    if (!this.reaches(projectId)) {
      throw new AppError('project_forbidden', {
        detail: `This personal API key does not reach project ${projectId}.`,
      });
    }
    return projectId;
  }

  /** The projects the key reaches, by id. */
  projects(): Project[] {
    return this.catalog.listProjects().filter((p) => this.reaches(p.id));
  }
}

/**
 * The caller behind an `Authorization` header value. 401 `not_authenticated` when there is none;
 * 401 `authentication_failed` when it is not a bearer key, or the key is unknown or revoked. The lookup is
 * a hash-map read in memory: a revoked key is refused on the very next request.
 */
export function authenticate(catalog: Catalog, authorization: string | undefined): Caller {
  if (!authorization?.trim()) throw new AppError('not_authenticated');
  const value = BEARER.exec(authorization)?.[1];
  if (value === undefined) {
    throw new AppError('authentication_failed', {
      detail: 'The Authorization header must be "Bearer <personal API key>".',
    });
  }
  if (value.startsWith('phc_')) {
    throw new AppError('authentication_failed', {
      detail:
        'This is a project API key (phc_…), which only captures events; use a personal API key (phx_…).',
    });
  }
  const key = catalog.personalKeyByValue(value);
  if (!key) throw new AppError('authentication_failed', { detail: 'This personal API key is not valid.' });
  if (key.revokedAt !== null) {
    throw new AppError('authentication_failed', { detail: 'This personal API key has been revoked.' });
  }
  return new Caller(key, catalog);
}

/**
 * The id of the project a path names, for a caller who reaches it and holds `scope`: 401, then 403 / 404, then
 * 403, in the order `Caller` suggests.
 */
export function projectWithScope(
  catalog: Catalog,
  authorization: string,
  projectParam: string,
  scope: Scope,
): number {
  const who = authenticate(catalog, authorization);
  const project = who.requireProject(projectParam);
  who.requireScope(scope);
  return project.id;
}
