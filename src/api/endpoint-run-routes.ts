import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import {
  REFRESH_MODES,
  type EndpointRunner,
  type Refresh,
  type RunAnswer,
  type RunRequest,
  type RunTable,
} from '../query/endpoints/endpoint-runner.ts';
import { ROWS_FORMATS, type RowsFormat } from '../query/output/formats.ts';
import { apiRoute, type ApiRequest, type ApiResponse } from './api-route.ts';
import { PROJECT_PREFIXES, access, findEndpoint, findVersion } from './endpoint-access.ts';
import { readVersionParam } from './endpoint-input.ts';
import { endpointOpenApi } from './endpoint-openapi.ts';
import { invalid, objectBody, type JsonObject } from './json-input.ts';
import { encodedAnswer, readFormat } from './output-answer.ts';
import { ResponseMemo } from './response-memo.ts';
import { readVariables } from './variables-input.ts';

export interface EndpointRunRoutesDeps {
  readonly catalog: Catalog;
  readonly runner: EndpointRunner;
  readonly inFlight: InFlight;
  readonly logger: Logger;
  /** The largest `limit` a run takes (the rows a result may have). */
  readonly maxLimit: number;
}

function ok(answer: RunAnswer): ApiResponse {
  return { status: 200, json: answer.json };
}

/**
 * A cached answer, to be sent again to the same request while its result stays cached and fresh and the
 * catalog does not change (no key revoked or rescoped, no endpoint changed): all that the answer was worked
 * out from.
 */
function memorable(answer: RunAnswer, catalog: Catalog): ApiResponse {
  const revision = catalog.revision;
  const holds = answer.holds!;
  return { status: 200, json: answer.json, holds: () => catalog.revision === revision && holds() };
}

/**
 * A run's answer in a format other than JSON: the rows alone, and what the JSON answer says beside them in
 * headers (`Weir-Has-More` is how a client pages).
 */
function encoded(format: RowsFormat, table: RunTable): ApiResponse | Promise<ApiResponse> {
  const headers: Record<string, string> = {
    'Weir-Has-More': String(table.hasMore),
    'Weir-Endpoint-Version': String(table.version),
    'Weir-Is-Cached': String(table.isCached),
    'Weir-Last-Refresh': table.lastRefresh,
  };
  if (table.materializedAt !== null) headers['Weir-Endpoint-Materialized-At'] = table.materializedAt;
  return encodedAnswer(format, table, headers);
}

/** The fields of a run request (SPEC §4), in the body of a POST or the query string of either method. */
export const RUN_FIELDS = ['refresh', 'variables', 'debug', 'version', 'limit', 'offset', 'format'];
/** The fields of a run on a format's own path (`…/run.csv`): the path gives the format. */
const ROWS_RUN_FIELDS = RUN_FIELDS.filter((f) => f !== 'format');
const MAX_OFFSET = 1_000_000_000;

/**
 * `GET P/endpoints/{name}/openapi.json[?version=N]`: the OpenAPI description of the run (endpoint-openapi.ts).
 *
 * `POST` and `GET P/endpoints/{name}/run` on both path forms: runs a version of an endpoint with the
 * caller's variables and answers `{results, columns, types, hasMore, name, endpoint_version, is_cached,
 * last_refresh, endpoint_materialized, endpoint_materialized_at}` (+ `hogql`, `clickhouse`, `timings` with
 * `debug`), or with `format` the rows as CSV, NDJSON, Parquet or Arrow (output-answer.ts). Needs
 * `endpoint:read`.
 *
 * `POST` and `GET P/endpoints/{name}/run.csv` (`.ndjson`, `.parquet`, `.arrow`): the same run in the format
 * the path names, which takes no `format` field.
 */
export function registerEndpointRunRoutes(app: HttpApp, deps: EndpointRunRoutesDeps): void {
  const run = (
    req: ApiRequest,
    fromBody: JsonObject,
    pathFormat?: RowsFormat,
  ): ApiResponse | Promise<ApiResponse> => {
    const { project } = access(deps.catalog, req, 'endpoint:read');
    const endpoint = findEndpoint(deps.catalog, project, req.params[1]!);
    const allowed = pathFormat === undefined ? RUN_FIELDS : ROWS_RUN_FIELDS;
    const fields =
      req.query.size === 0
        ? fromBody
        : { ...fromQueryString(req.query, Object.keys(fromBody), allowed), ...fromBody };
    const request = readRunRequest(fields, deps.maxLimit);
    const format = pathFormat ?? readFormat(fields['format']);
    if (format !== 'json') {
      if (request.debug) {
        throw invalid(
          'debug',
          `'debug' adds fields to the JSON answer; a ${format} answer carries the rows only.`,
        );
      }
      const table = deps.runner.runTable(endpoint, request);
      return table instanceof Promise ? table.then((t) => encoded(format, t)) : encoded(format, table);
    }
    const answer = deps.runner.run(endpoint, request);
    if (answer instanceof Promise) return answer.then(ok);
    return answer.holds ? memorable(answer, deps.catalog) : ok(answer);
  };
  // Both path forms and both methods share one memo: its keys hold the path and the method.
  const memo = new ResponseMemo();
  for (const prefix of PROJECT_PREFIXES) {
    apiRoute(
      app,
      deps,
      `${prefix}/endpoints/:name/run`,
      {
        post: (req) => run(req, objectBody(req.body, RUN_FIELDS)),
        get: (req) => run(req, {}),
      },
      { memo },
    );
    // A path of its own per format lets the OpenAPI document give each format an operation with one answer
    // type, the run's own staying JSON (endpoint-openapi.ts).
    for (const format of ROWS_FORMATS) {
      apiRoute(app, deps, `${prefix}/endpoints/:name/run.${format}`, {
        post: (req) => run(req, objectBody(req.body, ROWS_RUN_FIELDS), format),
        get: (req) => run(req, {}, format),
      });
    }
    apiRoute(app, deps, `${prefix}/endpoints/:name/openapi.json`, {
      get: (req) => {
        const { project } = access(deps.catalog, req, 'endpoint:read');
        const endpoint = findEndpoint(deps.catalog, project, req.params[1]!);
        for (const name of req.query.keys()) {
          if (name !== 'version') {
            throw new AppError('unknown_field', {
              detail: `openapi.json takes no parameter '${name.slice(0, 64)}'; it takes version.`,
              attr: name.slice(0, 64),
            });
          }
        }
        const n = readVersionParam(req.query);
        const pinned = n === undefined ? undefined : findVersion(endpoint, n);
        return {
          status: 200,
          body: endpointOpenApi(endpoint, { baseUrl: req.origin, pinned, maxLimit: deps.maxLimit }),
        };
      },
    });
  }
}

/**
 * The query string's run fields as JSON values: `variables` is JSON, `debug` a boolean, the others as
 * written (numbers are read as such below). A field given both here and in the body is refused.
 */
function fromQueryString(
  query: URLSearchParams,
  inBody: readonly string[],
  allowed: readonly string[],
): JsonObject {
  const out: Record<string, unknown> = {};
  for (const [name, value] of query) {
    if (!allowed.includes(name)) {
      throw new AppError('unknown_field', {
        detail: `A run takes no parameter '${name.slice(0, 64)}'; it takes ${allowed.join(', ')}.`,
        attr: name.slice(0, 64),
      });
    }
    if (Object.hasOwn(out, name) || inBody.includes(name)) {
      throw invalid(
        name,
        `'${name}' is given twice (in the query string and the body, or twice in the query string).`,
      );
    }
    out[name] = name === 'variables' ? parseVariables(value) : value;
  }
  return out;
}

function parseVariables(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('invalid_variable', {
      detail: `'variables' in the query string is JSON: variables={"browser":"Chrome"} (URL-encoded).`,
      attr: 'variables',
    });
  }
}

function readRunRequest(fields: JsonObject, maxLimit: number): RunRequest {
  const refresh = fields['refresh'] ?? 'cache';
  if (typeof refresh !== 'string' || !(REFRESH_MODES as readonly string[]).includes(refresh)) {
    throw invalid('refresh', `'refresh' is one of ${REFRESH_MODES.join(', ')}.`);
  }
  return {
    refresh: refresh as Refresh,
    variables: readVariables(fields['variables']),
    debug: readFlag(fields['debug']),
    version: readInteger(fields, 'version', 1, 1_000_000_000),
    limit: readInteger(fields, 'limit', 0, maxLimit),
    offset: readInteger(fields, 'offset', 0, MAX_OFFSET),
  };
}

function readFlag(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 'false' || value === '0')
    return false;
  if (value === true || value === 'true' || value === '1') return true;
  throw invalid('debug', "'debug' is true or false.");
}

/** An integer from the body (a number) or the query string (its digits). */
function readInteger(fields: JsonObject, name: string, min: number, max: number): number | undefined {
  const raw = fields[name];
  if (raw === undefined || raw === null) return undefined;
  const n = typeof raw === 'string' && /^\d{1,10}$/.test(raw) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw invalid(name, `'${name}' is a whole number from ${min} to ${max}.`);
  }
  return n;
}
