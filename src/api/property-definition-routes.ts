import type { HttpApp } from '../http/transport.ts';
import type { Catalog } from '../core/ports.ts';
import type { Logger } from '../core/logger.ts';
import {
  PROPERTY_PARENTS,
  type PropertyCatalog,
  type PropertyDefinition,
  type PropertyParent,
} from '../core/property-catalog.ts';
import { PROPERTY_TYPES, type PropertyType } from '../core/property-types.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { apiRoute, type ApiRequest } from './api-route.ts';
import { projectWithScope } from './auth.ts';
import { invalid, objectBody, requirePresent } from './json-input.ts';
import { integerParam } from './query-params.ts';

export interface PropertyDefinitionRoutesDeps {
  readonly catalog: Catalog;
  readonly propertyDefinitions: PropertyCatalog;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/**
 * Property definitions (SPEC §3): the event and person properties ingest has seen, with their detected types
 * (docs/properties.md). `GET P/property_definitions/` lists them (`query:read`, as the queries they type);
 * `GET` / `PATCH P/property_definitions/{event|person}/{name}/` reads one or sets its type on purpose
 * (`project:write`, as other changes to a project).
 */
export function registerPropertyDefinitionRoutes(app: HttpApp, deps: PropertyDefinitionRoutesDeps): void {
  const definitions = deps.propertyDefinitions;
  for (const base of [
    '/api/projects/:id/property_definitions/',
    '/api/environments/:id/property_definitions/',
  ]) {
    apiRoute(app, deps, base, {
      get: (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'query:read');
        const { results, count } = definitions.list(projectId, {
          type: parentParam(req),
          search: req.query.get('search') ?? undefined,
          limit: integerParam(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
          offset: integerParam(req, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
        });
        return { status: 200, body: { results: results.map(definitionJson), count } };
      },
    });

    apiRoute(app, deps, `${base}:type/:name/`, {
      get: (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'query:read');
        return { status: 200, body: definitionJson(found(definitions, projectId, req)) };
      },
      patch: async (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'project:write');
        const current = found(definitions, projectId, req);
        const body = objectBody(req.body, ['property_type']);
        const value = requirePresent(body, 'property_type');
        if (typeof value !== 'string' || !(PROPERTY_TYPES as readonly string[]).includes(value)) {
          throw invalid('property_type', `'property_type' must be one of ${PROPERTY_TYPES.join(', ')}.`);
        }
        const changed = await definitions.setType(
          projectId,
          current.type,
          current.name,
          value as PropertyType,
        );
        return { status: 200, body: definitionJson(changed ?? current) };
      },
    });
  }
}

function found(definitions: PropertyCatalog, projectId: number, req: ApiRequest): PropertyDefinition {
  const type = req.params[1]!;
  const name = req.params[2]!;
  if (!(PROPERTY_PARENTS as readonly string[]).includes(type)) {
    throw new AppError('not_found', {
      detail: `A property definition's type is event or person, not '${type.slice(0, 64)}'.`,
    });
  }
  const definition = definitions.get(projectId, type as PropertyParent, name);
  if (!definition) {
    throw new AppError('not_found', {
      detail: `No ${type} property '${name.slice(0, 200)}' has been seen in this project.`,
    });
  }
  return definition;
}

function parentParam(req: ApiRequest): PropertyParent | undefined {
  const type = req.query.get('type');
  if (type === null || type === '') return undefined;
  if (!(PROPERTY_PARENTS as readonly string[]).includes(type)) {
    throw invalid('type', `'type' is event or person.`);
  }
  return type as PropertyParent;
}

/** A definition as PostHog's API shows one, plus when it was seen; `events` for event properties only. */
function definitionJson(d: PropertyDefinition): Record<string, unknown> {
  return {
    name: d.name,
    type: d.type,
    property_type: d.propertyType,
    is_numerical: d.propertyType === 'Numeric',
    ...(d.type === 'event' ? { events: d.events } : {}),
    first_seen_at: d.firstSeenAt,
    last_seen_at: d.lastSeenAt,
    type_changed_at: d.typeChangedAt,
  };
}
