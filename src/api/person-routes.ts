import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, Deletion, TableReader } from '../core/ports.ts';
import { suppressionHash } from '../core/suppression.ts';
import type { InFlight } from '../http/in-flight.ts';
import {
  distinctIdsOfPersons,
  getPerson,
  isPersonUuid,
  listPersons,
  PERSON_FILTER_OPERATORS,
  personUuid,
  type PersonListFilter,
  type PersonPropertyFilter,
} from '../query/persons/person-reads.ts';
import { AppError } from '../errors/app-error.ts';
import { apiRoute, type ApiRequest } from './api-route.ts';
import { authenticate, projectWithScope } from './auth.ts';
import { invalid, isPresent, objectBody, optionalBoolean, type JsonObject } from './json-input.ts';
import { integerParam } from './query-params.ts';

export interface PersonRoutesDeps {
  readonly catalog: Catalog;
  readonly store: TableReader;
  readonly database: string;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** Told of each deletion accepted, so this process's runner starts it at once (if it has one). */
  readonly onDeletion?: (deletion: Deletion) => void;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const MAX_FILTERS = 20;
const MAX_TEXT = 1000;
/** Persons or distinct ids one bulk deletion takes (PostHog's bound). */
const MAX_BULK = 1000;

/**
 * Persons (SPEC §3, PostHog's persons API): `GET P/persons/` lists a project's persons, newest first, by
 * distinct id, email, search or property filters, a page at a time; `GET P/persons/{uuid}/` shows one. Both
 * need `person:read`. A person's events are read through the query API (`WHERE person_id = '…'`).
 */
export function registerPersonRoutes(app: HttpApp, deps: PersonRoutesDeps): void {
  const reads = { reader: deps.store, database: deps.database };
  for (const base of ['/api/projects/:id/persons/', '/api/environments/:id/persons/']) {
    apiRoute(app, deps, base, {
      get: async (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'person:read');
        const filter = listFilter(req);
        const { persons, more } = await listPersons(reads, projectId, filter);
        return {
          status: 200,
          body: {
            results: persons,
            next: more ? nextUrl(req, filter) : null,
            previous: previousUrl(req, filter),
          },
        };
      },
    });
    apiRoute(app, deps, `${base}:uuid/`, {
      get: async (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'person:read');
        const person = await getPerson(reads, projectId, personUuid(req.params[1]!));
        if (!person) {
          throw new AppError('not_found', { detail: `Project ${projectId} has no person ${req.params[1]}.` });
        }
        return { status: 200, body: person };
      },
      // PostHog's delete person: `?delete_events=true` erases its events too; `?suppress=true` (Weir's) drops
      // its distinct ids' events at capture from now on.
      del: async (req) => {
        const who = authenticate(deps.catalog, req.authorization);
        const projectId = who.requireProject(req.params[0]!).id;
        who.requireScope('person:write');
        const person = await getPerson(reads, projectId, personUuid(req.params[1]!));
        if (!person) {
          throw new AppError('not_found', { detail: `Project ${projectId} has no person ${req.params[1]}.` });
        }
        const deletion = await deps.catalog.createDeletion({
          kind: 'persons',
          projectId,
          personIds: [person.uuid],
          distinctIds: [],
          deleteEvents: flagParam(req, 'delete_events'),
          suppress: flagParam(req, 'suppress'),
          createdBy: who.key.id,
          suppressionHashes: flagParam(req, 'suppress') ? person.distinct_ids.map(suppressionHash) : [],
        });
        deps.onDeletion?.(deletion);
        return accepted(req, deletion);
      },
    });
    apiRoute(app, deps, `${base}bulk_delete/`, {
      post: async (req) => {
        const who = authenticate(deps.catalog, req.authorization);
        const projectId = who.requireProject(req.params[0]!).id;
        who.requireScope('person:write');
        const body = objectBody(req.body, ['ids', 'distinct_ids', 'delete_events', 'suppress']);
        const personIds = listOf(body, 'ids', isPersonUuid);
        const distinctIds = listOf(
          body,
          'distinct_ids',
          (v) => typeof v === 'string' && v !== '' && v.length <= 200,
        );
        if (personIds.length + distinctIds.length === 0) {
          throw invalid('ids', "Give the persons to delete: 'ids' (uuids), 'distinct_ids', or both.");
        }
        const suppress = optionalBoolean(body, 'suppress') ?? false;
        const ids = personIds.map((id) => id.toLowerCase());
        const suppressed = suppress
          ? [...new Set([...distinctIds, ...(await distinctIdsOfPersons(reads, projectId, ids))])]
          : [];
        const deletion = await deps.catalog.createDeletion({
          kind: 'persons',
          projectId,
          personIds: ids,
          distinctIds,
          deleteEvents: optionalBoolean(body, 'delete_events') ?? false,
          suppress,
          createdBy: who.key.id,
          suppressionHashes: suppressed.map(suppressionHash),
        });
        deps.onDeletion?.(deletion);
        return accepted(req, deletion);
      },
    });
  }
  for (const base of ['/api/projects/:id/persons/', '/api/environments/:id/persons/']) {
    // Undoes a suppression: capture takes these distinct ids' events again (what was erased stays erased).
    apiRoute(app, deps, `${base}unsuppress/`, {
      post: async (req) => {
        const who = authenticate(deps.catalog, req.authorization);
        const project = who.requireProject(req.params[0]!);
        who.requireScope('person:write');
        const body = objectBody(req.body, ['distinct_ids']);
        const ids = listOf(body, 'distinct_ids', (v) => typeof v === 'string' && v !== '' && v.length <= 200);
        if (ids.length === 0)
          throw invalid('distinct_ids', "'distinct_ids' lists the ids to take events of again.");
        const hashes = ids.map(suppressionHash);
        const had = new Set(project.suppressedDistinctIds);
        await deps.catalog.updateProject(project.id, { unsuppress: hashes });
        return { status: 200, body: { unsuppressed: hashes.filter((h) => had.has(h)).length } };
      },
    });
  }
  for (const base of ['/api/projects/:id/deletions/', '/api/environments/:id/deletions/']) {
    apiRoute(app, deps, base, {
      get: (req) => {
        const readable = deletionReader(deps.catalog, req);
        const results = deps.catalog.listDeletions().filter(readable).reverse().map(deletionJson(req));
        return { status: 200, body: { results, count: results.length } };
      },
    });
    apiRoute(app, deps, `${base}:deletion/`, {
      get: (req) => {
        const d = deps.catalog.deletion(req.params[1]!);
        if (!d || !deletionReader(deps.catalog, req)(d)) {
          throw new AppError('not_found', { detail: 'The project has no deletion of this id.', attr: 'id' });
        }
        return { status: 200, body: deletionJson(req)(d) };
      },
    });
  }
}

/**
 * The deletions of the project a path names that the caller may read: a key that reaches the project (which
 * may be deleted already) with the scope that makes such a deletion.
 */
function deletionReader(catalog: Catalog, req: ApiRequest): (d: Deletion) => boolean {
  const who = authenticate(catalog, req.authorization);
  const projectId = who.requireReach(req.params[0]!);
  if (!who.hasScope('person:write') && !who.hasScope('project:write')) who.requireScope('person:write');
  return (d) =>
    d.projectId === projectId && who.hasScope(d.kind === 'project' ? 'project:write' : 'person:write');
}

function accepted(
  req: ApiRequest,
  deletion: Deletion,
): { status: number; body: unknown; headers: Record<string, string> } {
  const body = deletionJson(req)(deletion);
  return { status: 202, body, headers: { location: String(body['url']) } };
}

/** A deletion as the API shows it: its state and counts, never the distinct ids it erased. */
export function deletionJson(req: ApiRequest): (d: Deletion) => Record<string, unknown> {
  return (d) => ({
    id: d.id,
    kind: d.kind,
    status: d.status,
    project_id: d.projectId,
    person_ids: d.personIds,
    distinct_id_count: d.distinctIdCount,
    delete_events: d.deleteEvents,
    suppress: d.suppress,
    created_at: d.createdAt,
    started_at: d.startedAt,
    finished_at: d.finishedAt,
    attempts: d.attempts,
    last_error: d.lastError,
    counts: d.counts && {
      persons: d.counts.persons,
      distinct_ids: d.counts.distinctIds,
      events: d.counts.events,
      quarantined: d.counts.quarantined,
      warnings: d.counts.warnings,
      other: d.counts.other,
    },
    url: `${req.origin}/api/projects/${d.projectId}/deletions/${d.id}/`,
  });
}

/** `?name=true` / `1` (PostHog's query flags); false when absent. */
function flagParam(req: ApiRequest, name: string): boolean {
  const v = req.query.get(name);
  if (v === null || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw invalid(name, `'${name}' is true or false.`);
}

function listOf(body: JsonObject, field: string, valid: (v: unknown) => boolean): string[] {
  if (!isPresent(body, field)) return [];
  const value = body[field];
  if (!Array.isArray(value) || value.length > MAX_BULK || !value.every(valid)) {
    throw invalid(
      field,
      field === 'ids'
        ? `'ids' is a list of up to ${MAX_BULK} person uuids.`
        : `'distinct_ids' is a list of up to ${MAX_BULK} distinct ids (1 to 200 characters).`,
    );
  }
  return [...new Set(value as string[])];
}

function listFilter(req: ApiRequest): PersonListFilter {
  return {
    distinctId: textParam(req, 'distinct_id'),
    email: textParam(req, 'email'),
    search: textParam(req, 'search'),
    properties: propertiesParam(req),
    limit: integerParam(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integerParam(req, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

function textParam(req: ApiRequest, name: string): string | undefined {
  const v = req.query.get(name);
  if (v === null) return undefined;
  if (v.length > MAX_TEXT) throw invalid(name, `'${name}' is at most ${MAX_TEXT} characters.`);
  return v;
}

/** PostHog's `properties`: a JSON list of `{key, value?, operator?}` on person properties. */
function propertiesParam(req: ApiRequest): PersonPropertyFilter[] | undefined {
  const raw = req.query.get('properties');
  if (raw === null || raw === '') return undefined;
  const usage = `'properties' is a JSON list of up to ${MAX_FILTERS} {"key", "value", "operator"} (operators: ${PERSON_FILTER_OPERATORS.join(', ')}).`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalid('properties', usage);
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_FILTERS) throw invalid('properties', usage);
  return parsed.map((f: unknown) => {
    if (typeof f !== 'object' || f === null || Array.isArray(f)) throw invalid('properties', usage);
    const { key, value, operator = 'exact', type = 'person' } = f as Record<string, unknown>;
    if (typeof key !== 'string' || key === '' || key.length > MAX_TEXT) throw invalid('properties', usage);
    if (type !== 'person') {
      throw invalid('properties', `A persons filter is on person properties: type '${String(type)}' is not.`);
    }
    if (typeof operator !== 'string' || !(PERSON_FILTER_OPERATORS as readonly string[]).includes(operator)) {
      throw invalid('properties', usage);
    }
    const op = operator as PersonPropertyFilter['operator'];
    if (op === 'is_set' || op === 'is_not_set') return { key, operator: op, values: [] };
    const values = (Array.isArray(value) ? value : [value]).map((v) => {
      if (typeof v === 'string') return v;
      if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
      throw invalid(
        'properties',
        `The value of filter '${key}' is a string, number or boolean, or a list of them.`,
      );
    });
    if (values.length === 0) throw invalid('properties', `Filter '${key}' needs a value.`);
    return { key, operator: op, values };
  });
}

/** The URL of the next page: the same request with the offset moved on (PostHog's `next`). */
function nextUrl(req: ApiRequest, filter: PersonListFilter): string {
  return pageUrl(req, filter.limit, filter.offset + filter.limit);
}

function previousUrl(req: ApiRequest, filter: PersonListFilter): string | null {
  return filter.offset === 0 ? null : pageUrl(req, filter.limit, Math.max(0, filter.offset - filter.limit));
}

function pageUrl(req: ApiRequest, limit: number, offset: number): string {
  const query = new URLSearchParams(req.query);
  query.set('limit', String(limit));
  query.set('offset', String(offset));
  return `${req.origin}/api/projects/${req.params[0]}/persons/?${query.toString()}`;
}
