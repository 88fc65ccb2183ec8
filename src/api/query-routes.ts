import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, TableReader } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import type { PropertyDefinitions } from '../core/property-types.ts';
import type { InFlight } from '../http/in-flight.ts';
import type { QueryLimits } from '../query/clickhouse/printer.ts';
import { runHogQLQuery, type HogQLQueryInput } from '../query/hogql-query.ts';
import { apiRoute } from './api-route.ts';
import { authenticate } from './auth.ts';
import { objectBody, requirePresent, type JsonObject } from './json-input.ts';
import { encodedAnswer, readFormat } from './output-answer.ts';
import { readVariables } from './variables-input.ts';

export interface QueryRoutesDeps {
  readonly catalog: Catalog;
  readonly store: TableReader;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** @default DEFAULT_LIMITS of the printer */
  readonly limits?: QueryLimits;
  /** The projects' property types; without them every property reads as text. */
  readonly properties?: PropertyDefinitions;
  /** The database of the store tables. @default 'default' */
  readonly database?: string;
}

/**
 * Fields of PostHog's query request Weir takes and ignores: a client id (PostHog uses it to cancel), a cache
 * hint (every run here is fresh) and a name for logs.
 */
const REQUEST_FIELDS = ['query', 'client_query_id', 'refresh', 'name', 'format'];
/** Fields of a HogQLQuery. `filters`, `modifiers` and `values` are refused rather than silently not applied. */
const QUERY_FIELDS = ['kind', 'query', 'variables', 'name', 'tags'];

/**
 * The query API (SPEC §3): `POST P/query/` runs one `HogQLQuery` on the project's data and answers
 * `{results, columns, types, hogql, clickhouse, timings}`, or with `format` the rows alone as CSV, NDJSON,
 * Parquet or Arrow (output-answer.ts). Needs the scope `query:read`.
 */
export function registerQueryRoutes(app: HttpApp, deps: QueryRoutesDeps): void {
  for (const path of ['/api/projects/:id/query/', '/api/environments/:id/query/']) {
    apiRoute(app, deps, path, {
      post: async (req) => {
        const who = authenticate(deps.catalog, req.authorization);
        const project = who.requireProject(req.params[0]!);
        who.requireScope('query:read');
        const input = readRequest(req.body);
        const format = readFormat(objectBody(req.body, REQUEST_FIELDS)['format']);
        const result = await runHogQLQuery(input, project.id, {
          store: deps.store,
          limits: deps.limits,
          properties: deps.properties,
          database: deps.database,
        });
        if (format === 'json') return { status: 200, body: result };
        return encodedAnswer(
          format,
          { columns: result.columns, types: result.types, rows: result.results },
          {},
        );
      },
    });
  }
}

function readRequest(body: unknown): HogQLQueryInput {
  const request = objectBody(body, REQUEST_FIELDS);
  const query = requirePresent(request, 'query');
  if (typeof query !== 'object' || query === null || Array.isArray(query)) {
    throw invalid('query', `'query' must be an object: {"kind": "HogQLQuery", "query": "SELECT …"}.`);
  }
  const q = query as JsonObject;
  for (const field of Object.keys(q)) {
    if (!QUERY_FIELDS.includes(field)) {
      throw new AppError('unknown_field', {
        detail: `A HogQLQuery here takes no field '${field.slice(0, 64)}'; it takes ${QUERY_FIELDS.join(', ')}.`,
        attr: `query.${field.slice(0, 64)}`,
      });
    }
  }
  if (q['kind'] !== 'HogQLQuery') {
    throw invalid(
      'query.kind',
      `This route runs {"kind": "HogQLQuery"} queries; 'kind' is ${JSON.stringify(q['kind'] ?? null).slice(0, 64)}.`,
    );
  }
  const text = q['query'];
  if (text === undefined || text === null) {
    throw new AppError('required', {
      detail: "The field 'query.query' (the SQL) is required.",
      attr: 'query.query',
    });
  }
  if (typeof text !== 'string') throw invalid('query.query', "'query.query' must be a string of SQL.");
  return { query: text, variables: readVariables(q['variables']) };
}

function invalid(attr: string, detail: string): AppError {
  return new AppError('invalid_input', { detail, attr });
}
