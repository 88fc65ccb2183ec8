/**
 * The OpenAPI 3.0.3 description of one endpoint's run (SPEC §4): the run path with method `post`, its request
 * (`EndpointRunRequest`, with the version's variables typed and all of them required) and its JSON response.
 * What a stock generator (openapi-typescript, openapi-generator, …) needs to make a typed client; test/e2e has
 * one made and run against a live Weir.
 *
 * The run's 200 is JSON alone, and each other format is an operation of its own on the path Weir serves it
 * at (`…/run.csv`, …): a generator types an operation's answer from all its media types (openapi-fetch's
 * `data` is their union), so formats listed beside JSON would take the JSON type away from a plain client.
 *
 * No property has a `default`: stock generators (openapi-typescript) make such a property required, and a
 * client would then have to send `refresh` and `debug` on every call. The defaults are in the descriptions.
 *
 * Without `?version=N` the document describes the newest version and a client runs the newest, whichever it
 * is then. With it, the document describes version N and its `version` field is required and can only be
 * N: a client generated from it runs N for as long as N exists, whatever versions come after.
 */
import type { Endpoint, EndpointVersion, MaterializationBucket, VariableType } from '../core/ports.ts';
import { planMaterialization } from '../query/materialize/rewrite.ts';
import { compileVersion } from '../query/compile/version.ts';
import { magicVariables } from '../query/insights/insight.ts';
import { REFRESH_MODES } from '../query/endpoints/endpoint-runner.ts';
import { CONTENT_TYPES, ROWS_FORMATS, type RowsFormat } from '../query/output/formats.ts';
import { runPath } from './endpoint-json.ts';

type Schema = Record<string, unknown>;

export interface OpenApiOptions {
  /** The base URL clients call (`servers[0].url`). */
  readonly baseUrl: string;
  /** The version the document describes, pinned; undefined: the newest, not pinned. */
  readonly pinned?: EndpointVersion;
  /** The largest `limit` a run takes. */
  readonly maxLimit: number;
}

export function endpointOpenApi(endpoint: Endpoint, options: OpenApiOptions): Record<string, unknown> {
  const version = options.pinned ?? endpoint.versions[endpoint.versions.length - 1]!;
  const variables = variablesOf(version, endpoint.materializationBucket);
  const requiredVariables = variables.filter((v) => v.required).map((v) => v.name);
  const what = `Runs the Weir endpoint '${endpoint.name}' of project ${endpoint.projectId}, version ${version.version}${
    options.pinned ? '' : ' (the newest when this was generated; a run without `version` runs the newest)'
  }.`;
  const path = runPath(endpoint.projectId, endpoint.name);
  const operationId = `run_${endpoint.name.replaceAll('-', '_')}`;
  const requestBody = (schema: string): Schema => ({
    required: requiredVariables.length > 0 || options.pinned !== undefined,
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
  });
  const others = ROWS_FORMATS.map((f) => `\`.${f}\``).join(', ');
  const paths: Record<string, Schema> = {
    [path]: {
      post: {
        operationId,
        summary: `Execute ${endpoint.name}`,
        description: `${what} Answers JSON; the same rows in another format are the operations of this path with ${others} appended.`,
        security: [{ PersonalAPIKey: [] }],
        requestBody: requestBody('EndpointRunRequest'),
        responses: {
          '200': {
            description: 'Query results',
            content: { 'application/json': { schema: responseSchema() } },
          },
          ...errorResponses(),
        },
      },
    },
  };
  for (const format of ROWS_FORMATS) {
    const rows = ROWS_ANSWERS[format];
    paths[`${path}.${format}`] = {
      post: {
        operationId: `${operationId}_${format}`,
        summary: `Execute ${endpoint.name} as ${rows.name}`,
        description: `${what} Answers the rows alone as ${rows.name}, the JSON answer's other fields in headers.`,
        security: [{ PersonalAPIKey: [] }],
        requestBody: requestBody('EndpointRunRowsRequest'),
        responses: {
          '200': {
            description: `Query results as ${rows.name}`,
            headers: ROWS_HEADERS,
            content: { [mediaType(CONTENT_TYPES[format])]: { schema: rows.schema } },
          },
          ...errorResponses(),
        },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: endpoint.name,
      description: endpoint.description ? `${what}\n\n${endpoint.description}` : what,
      version: String(version.version),
    },
    servers: [{ url: options.baseUrl }],
    paths,
    components: {
      securitySchemes: { PersonalAPIKey: { type: 'http', scheme: 'bearer' } },
      schemas: {
        EndpointRunRequest: requestSchema(version, variables, options, 'json'),
        EndpointRunRowsRequest: requestSchema(version, variables, options, 'rows'),
        Error: ERROR_SCHEMA,
      },
    },
  };
}

/** A variable a run takes, as the request schema describes it. */
interface RunVariable {
  readonly name: string;
  readonly schema: Schema;
  readonly required: boolean;
}

/**
 * A SQL version's variables are its placeholders, all required, typed by their declarations; an insight's
 * are its magic variables (SPEC §4), none required: the breakdown property and, unless the version is
 * materialized, `date_from` / `date_to`.
 */
function variablesOf(version: EndpointVersion, bucket: MaterializationBucket): RunVariable[] {
  const compiled = compileVersion(version);
  if (compiled.kind === 'sql') {
    const buckets = bucketedVariables(version, bucket);
    return compiled.resolved.variables.map((name) => {
      const declared = Object.hasOwn(version.variables, name) ? version.variables[name]!.type : undefined;
      const schema = declared ? schemaOf(declared) : UNDECLARED;
      const at = buckets.get(name);
      return {
        name,
        schema: at
          ? {
              ...schema,
              description: `Applied at the ${at} bucket: the version is materialized with this column kept per ${at}, so a value is moved to the start of its ${at} (>=, <) or to its end (<=, >).`,
            }
          : schema,
        required: true,
      };
    });
  }
  const magic = magicVariables(compiled.insight, version.isMaterialized);
  const out: RunVariable[] = [];
  if (magic.breakdown !== null) {
    out.push({
      name: magic.breakdown,
      schema: {
        type: 'string',
        nullable: true,
        description: `Only the rows of this value of the breakdown property '${magic.breakdown}' ("" or null: the rows without one). All values when absent.`,
      },
      required: false,
    });
  }
  if (magic.dates) {
    for (const [name, what] of [
      ['date_from', 'first'],
      ['date_to', 'last'],
    ] as const) {
      out.push({
        name,
        schema: {
          type: 'string',
          format: 'date',
          example: '2026-01-31',
          description: `The ${what} day of the range, replacing the insight's own ${name} (UTC).`,
        },
        required: false,
      });
    }
  }
  return out;
}

/** The range variables of a materialized SQL version that apply at a bucket, with it (SPEC §4). */
function bucketedVariables(version: EndpointVersion, bucket: MaterializationBucket): Map<string, string> {
  const out = new Map<string, string>();
  if (!version.isMaterialized) return out;
  const plan = planMaterialization(version, compileVersion(version), { now: new Date(), bucket });
  if ('cannot' in plan || plan.serving.kind !== 'sql') return out;
  for (const f of plan.serving.filters) if (f.bucket) out.set(f.variable, f.bucket);
  return out;
}

/**
 * A run's request: the JSON run's, or (`rows`) that of a format's own path, without `debug` (its fields have
 * no place in the rows). Neither has `format`: the path gives it.
 */
function requestSchema(
  version: EndpointVersion,
  variables: readonly RunVariable[],
  options: OpenApiOptions,
  answer: 'json' | 'rows',
): Schema {
  const properties: Record<string, Schema> = {};
  for (const v of variables) properties[v.name] = v.schema;
  const requiredVariables = variables.filter((v) => v.required).map((v) => v.name);
  const required: string[] = [];
  if (requiredVariables.length > 0) required.push('variables');
  if (options.pinned) required.push('version');
  const insight = version.query.kind !== 'HogQLQuery';
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      variables: {
        type: 'object',
        description:
          variables.length === 0
            ? 'This query has no variables.'
            : insight
              ? 'The magic variables of this insight endpoint, by name; none is required.'
              : "Values of the query's variables by name. Every variable of the query is required.",
        properties,
        ...(requiredVariables.length > 0 ? { required: requiredVariables } : {}),
        additionalProperties: false,
      },
      refresh: {
        type: 'string',
        enum: [...REFRESH_MODES],
        description:
          "`cache` (when absent): a cached result younger than the endpoint's cache age if there is one; `force`: compute it now; `direct`: only for a materialized version, run it on raw data.",
      },
      ...(answer === 'json'
        ? {
            debug: {
              type: 'boolean',
              description:
                'False when absent. True adds `hogql` (the query as it ran), `clickhouse` and `timings` to the response.',
            },
          }
        : {}),
      version: options.pinned
        ? { type: 'integer', enum: [options.pinned.version], description: 'The version this client runs.' }
        : { type: 'integer', minimum: 1, description: 'The version to run; the newest when absent.' },
      // An insight answers its whole table: no pages.
      ...(insight
        ? {}
        : {
            limit: {
              type: 'integer',
              minimum: 0,
              maximum: options.maxLimit,
              description: "Rows of the page; the query's own LIMIT stays the ceiling.",
            },
            offset: { type: 'integer', minimum: 0, description: 'Rows skipped before the page.' },
          }),
    },
    ...(required.length > 0 ? { required } : {}),
  };
}

function schemaOf(type: VariableType): Schema {
  switch (type) {
    case 'string':
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date', example: '2026-01-31' };
    case 'datetime':
      return { type: 'string', format: 'date-time', example: '2026-01-31T12:00:00Z' };
    case 'list':
      return { type: 'array', items: LIST_ITEM };
  }
}

const SCALARS: Schema[] = [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }];
const LIST_ITEM: Schema = { anyOf: SCALARS, nullable: true };
/** A variable without a declared type is typed by its JSON value. */
const UNDECLARED: Schema = {
  description: 'Typed by its value: a string, a number, a boolean, null, or a list of one of them.',
  anyOf: [...SCALARS, { type: 'array', items: LIST_ITEM }],
  nullable: true,
};

function responseSchema(): Schema {
  return {
    type: 'object',
    required: [
      'results',
      'columns',
      'types',
      'hasMore',
      'name',
      'endpoint_version',
      'is_cached',
      'last_refresh',
      'endpoint_materialized',
    ],
    properties: {
      results: {
        type: 'array',
        description: 'The rows, each an array of values in the order of `columns`.',
        items: { type: 'array', items: {} },
      },
      columns: { type: 'array', items: { type: 'string' } },
      types: { type: 'array', items: { type: 'string' }, description: 'ClickHouse types of the columns.' },
      hasMore: { type: 'boolean', description: 'Whether rows follow this page.' },
      name: { type: 'string' },
      endpoint_version: { type: 'integer' },
      is_cached: { type: 'boolean' },
      last_refresh: { type: 'string', format: 'date-time', description: 'When the result was computed.' },
      endpoint_materialized: { type: 'boolean' },
      endpoint_materialized_at: { type: 'string', format: 'date-time', nullable: true },
      hogql: { type: 'string' },
      clickhouse: { type: 'string' },
      timings: {
        type: 'array',
        items: {
          type: 'object',
          required: ['k', 't'],
          properties: { k: { type: 'string' }, t: { type: 'number' } },
        },
      },
    },
  };
}

/** The 200 body of each format's own operation: text for CSV and NDJSON, bytes for Parquet and Arrow. */
const ROWS_ANSWERS: Readonly<Record<RowsFormat, { readonly name: string; readonly schema: Schema }>> = {
  csv: {
    name: 'CSV',
    schema: {
      type: 'string',
      description: 'A header line of the column names, then a line a row (RFC 4180, CRLF).',
    },
  },
  ndjson: {
    name: 'NDJSON',
    schema: { type: 'string', description: 'One JSON object a row, keyed by column name, a line each.' },
  },
  parquet: {
    name: 'Parquet',
    schema: { type: 'string', format: 'binary', description: 'The rows as a Parquet file (zstd).' },
  },
  arrow: {
    name: 'Arrow',
    schema: {
      type: 'string',
      format: 'binary',
      description: 'The rows as an Arrow IPC stream (not the file format).',
    },
  },
};

/** A content type without its parameters (`text/csv; charset=utf-8` → `text/csv`), as OpenAPI keys them. */
function mediaType(contentType: string): string {
  return contentType.split(';')[0]!.trim();
}

/** What an answer of rows alone says in headers, in place of the JSON answer's fields. */
const ROWS_HEADERS: Record<string, Schema> = {
  'Weir-Has-More': {
    description: 'Whether rows follow this page (`hasMore`).',
    schema: { type: 'string', enum: ['true', 'false'] },
  },
  'Weir-Endpoint-Version': {
    description: 'The version that ran (`endpoint_version`).',
    schema: { type: 'string' },
  },
  'Weir-Is-Cached': {
    description: 'Whether the result came from the cache (`is_cached`).',
    schema: { type: 'string', enum: ['true', 'false'] },
  },
  'Weir-Last-Refresh': {
    description: 'When the result was computed (`last_refresh`).',
    schema: { type: 'string' },
  },
  'Weir-Endpoint-Materialized-At': {
    description:
      'Only when answered from a materialization: when it was computed (`endpoint_materialized_at`).',
    schema: { type: 'string' },
  },
};

const ERROR_SCHEMA: Schema = {
  type: 'object',
  required: ['type', 'code', 'detail', 'attr'],
  properties: {
    type: { type: 'string' },
    code: { type: 'string', description: 'Stable; what a client branches on.' },
    detail: { type: 'string' },
    attr: { type: 'string', nullable: true },
  },
};

function errorResponses(): Record<string, unknown> {
  const error = (description: string): Schema => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });
  return {
    '400': error('The request is invalid: a missing, unknown or invalid variable, an invalid field.'),
    '401': error('No personal API key, or an unknown one.'),
    '403': error('The key lacks endpoint:read, or does not reach the project.'),
    '404': error('No such endpoint or version, or it is inactive.'),
    '429': error('The project runs its limit of queries at once; retry after Retry-After.'),
    '504': error('The query ran longer than the limit.'),
  };
}
