import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, TableReader } from '../core/ports.ts';
import type { InFlight } from '../http/in-flight.ts';
import {
  getPerson,
  listPersons,
  PERSON_FILTER_OPERATORS,
  personUuid,
  type PersonListFilter,
  type PersonPropertyFilter,
} from '../query/persons/person-reads.ts';
import { AppError } from '../errors/app-error.ts';
import { apiRoute, type ApiRequest } from './api-route.ts';
import { projectWithScope } from './auth.ts';
import { invalid } from './json-input.ts';
import { integerParam } from './query-params.ts';

export interface PersonRoutesDeps {
  readonly catalog: Catalog;
  readonly store: TableReader;
  readonly database: string;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const MAX_FILTERS = 20;
const MAX_TEXT = 1000;

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
    });
  }
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
