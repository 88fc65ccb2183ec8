import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import {
  SCOPES,
  type Catalog,
  type PersonalApiKey,
  type Project,
  type ProjectReach,
  type Scope,
} from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { apiRoute, type ApiRequest, type ApiResponse } from './api-route.ts';
import { deletionJson } from './person-routes.ts';
import { authenticate, type Caller } from './auth.ts';
import {
  invalid,
  isPresent,
  objectBody,
  optionalBoolean,
  requirePresent,
  requiredString,
  type JsonObject,
} from './json-input.ts';

export interface ManagementRoutesDeps {
  readonly catalog: Catalog;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** Told of each deletion accepted, so this process's runner starts it at once (if it has one). */
  readonly onDeletion?: () => void;
  /** A new project's event retention in days (WEIR_EVENT_RETENTION_DAYS); 0: for ever. @default 0 */
  readonly defaultEventRetentionDays?: number;
}

/** The longest event retention a project may set: a hundred years is "for ever" said as a number. */
const MAX_RETENTION_DAYS = 36_500;

const MAX_NAME = 200;

/**
 * Projects and personal API keys (SPEC §3): `/api/projects/` and `/api/personal_api_keys/`, bearer-authed.
 * A key sees the projects it reaches, and manages itself and the keys it made (directly or through keys it
 * made); a new key never exceeds the scopes or projects of the key that makes it.
 */
export function registerManagementRoutes(app: HttpApp, deps: ManagementRoutesDeps): void {
  const { catalog } = deps;
  const caller = (req: ApiRequest): Caller => authenticate(catalog, req.authorization);

  apiRoute(app, deps, '/api/projects/', {
    get: (req) => list(caller(req).projects().map(projectJson)),
    post: async (req) => {
      const who = caller(req);
      who.requireScope('project:write');
      const body = objectBody(req.body, ['name']);
      const name = requiredString(body, 'name', MAX_NAME);
      const days = deps.defaultEventRetentionDays ?? 0;
      const project = await catalog.createProject({
        name,
        grantTo: who.key.id,
        eventRetentionDays: days > 0 ? days : null,
      });
      return { status: 201, body: projectJson(project) };
    },
  });

  for (const path of ['/api/projects/:id/', '/api/environments/:id/']) {
    apiRoute(app, deps, path, {
      get: (req) => ({ status: 200, body: projectJson(caller(req).requireProject(req.params[0]!)) }),
      patch: async (req) => {
        const who = caller(req);
        const project = who.requireProject(req.params[0]!);
        who.requireScope('project:write');
        const body = objectBody(req.body, ['name', 'anonymize_ips', 'event_retention_days']);
        const name = isPresent(body, 'name') ? requiredString(body, 'name', MAX_NAME) : undefined;
        const anonymizeIps = optionalBoolean(body, 'anonymize_ips');
        const eventRetentionDays = retentionDays(body);
        const updated = await catalog.updateProject(project.id, { name, anonymizeIps, eventRetentionDays });
        return { status: 200, body: projectJson(updated ?? project) };
      },
      // 202: from this answer on its project API key captures nothing and it lists nowhere; its data,
      // endpoints and materializations are erased in the background (its state at P/deletions/{id}/).
      del: async (req) => {
        const who = caller(req);
        const project = who.requireProject(req.params[0]!);
        who.requireScope('project:write');
        const deletion = await catalog.deleteProject(project.id, who.key.id);
        if (!deletion) throw new AppError('not_found', { detail: `There is no project ${project.id}.` });
        deps.onDeletion?.();
        const body = deletionJson(req)(deletion);
        return { status: 202, body, headers: { location: String(body['url']) } };
      },
    });
  }

  apiRoute(app, deps, '/api/personal_api_keys/', {
    get: (req) => {
      const who = caller(req);
      const keys = catalog.listPersonalKeys().filter((k) => k.revokedAt === null && manages(catalog, who, k));
      return list(keys.map(keyJson));
    },
    post: async (req) => {
      const who = caller(req);
      const body = objectBody(req.body, ['label', 'scopes', 'projects']);
      const label = requiredString(body, 'label', MAX_NAME);
      const scopes = readScopes(body, who);
      const projects = readReach(body, who, catalog);
      const { key, value } = await catalog.createPersonalKey({
        label,
        scopes,
        projects,
        createdBy: who.key.id,
      });
      return { status: 201, body: { ...keyJson(key), value } };
    },
  });

  apiRoute(app, deps, '/api/personal_api_keys/:id/', {
    get: (req) => ({ status: 200, body: keyJson(managedKey(catalog, caller(req), req.params[0]!)) }),
    del: async (req) => {
      const key = managedKey(catalog, caller(req), req.params[0]!);
      // A race with another revocation of the same key is fine: either way it no longer works.
      await catalog.revokePersonalKey(key.id);
      return { status: 204 };
    },
  });
}

function list(results: readonly unknown[]): ApiResponse {
  return { status: 200, body: { results, count: results.length } };
}

function projectJson(p: Project): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    api_token: p.apiToken,
    created_at: p.createdAt,
    anonymize_ips: p.anonymizeIps,
    event_retention_days: p.eventRetentionDays,
  };
}

/** `event_retention_days`: days from 1 to MAX_RETENTION_DAYS, or null to keep events for ever. */
function retentionDays(body: JsonObject): number | null | undefined {
  if (!Object.hasOwn(body, 'event_retention_days')) return undefined;
  const v = body['event_retention_days'];
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_RETENTION_DAYS) {
    throw invalid(
      'event_retention_days',
      `'event_retention_days' is a whole number of days from 1 to ${MAX_RETENTION_DAYS}, or null to keep events for ever.`,
    );
  }
  return v;
}

/** A key as shown: never its value (only on creation) nor its hash. */
function keyJson(k: PersonalApiKey): Record<string, unknown> {
  return {
    id: k.id,
    label: k.label,
    scopes: k.scopes,
    projects: k.projects,
    mask_value: k.mask,
    created_at: k.createdAt,
  };
}

/** Whether `key` is the caller's own key or was made by it, directly or through keys it made. */
function manages(catalog: Catalog, who: Caller, key: PersonalApiKey): boolean {
  let current: PersonalApiKey | undefined = key;
  for (let depth = 0; current && depth < 10_000; depth++) {
    if (current.id === who.key.id) return true;
    current = current.createdBy === null ? undefined : catalog.personalKey(current.createdBy);
  }
  return false;
}

/** 404 for a key that does not exist, is revoked, or is not the caller's: a key learns nothing of others. */
function managedKey(catalog: Catalog, who: Caller, id: string): PersonalApiKey {
  const key = catalog.personalKey(id);
  if (!key || key.revokedAt !== null || !manages(catalog, who, key)) {
    throw new AppError('not_found', { detail: 'There is no such personal API key among yours.', attr: 'id' });
  }
  return key;
}

function readScopes(body: JsonObject, who: Caller): Scope[] {
  const raw = requirePresent(body, 'scopes');
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalid('scopes', `'scopes' must be a non-empty list of: ${SCOPES.join(', ')}.`);
  }
  const scopes: Scope[] = [];
  for (const s of raw as unknown[]) {
    if (typeof s !== 'string' || !(SCOPES as readonly string[]).includes(s)) {
      throw invalid('scopes', `'${String(s).slice(0, 64)}' is not a scope; scopes are ${SCOPES.join(', ')}.`);
    }
    const scope = s as Scope;
    if (!who.hasScope(scope)) {
      throw new AppError('missing_scope', {
        detail: `A key can only give scopes it holds, and this one lacks '${scope}'.`,
        attr: 'scopes',
      });
    }
    if (!scopes.includes(scope)) scopes.push(scope);
  }
  return scopes;
}

function readReach(body: JsonObject, who: Caller, catalog: Catalog): ProjectReach {
  const raw = requirePresent(body, 'projects');
  if (raw === '*') {
    if (who.key.projects !== '*') {
      throw new AppError('project_forbidden', {
        detail: 'Only a key that reaches every project can make one that does.',
        attr: 'projects',
      });
    }
    return '*';
  }
  if (!Array.isArray(raw)) throw invalid('projects', `'projects' must be a list of project ids, or "*".`);
  const ids: number[] = [];
  for (const id of raw as unknown[]) {
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
      throw invalid('projects', `'${String(id).slice(0, 64)}' is not a project id.`);
    }
    if (!who.reaches(id)) {
      throw new AppError('project_forbidden', {
        detail: `A key can only give projects it reaches, and this one does not reach project ${id}.`,
        attr: 'projects',
      });
    }
    if (!catalog.project(id)) throw invalid('projects', `There is no project ${id}.`);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}
