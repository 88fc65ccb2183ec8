/**
 * Reading an endpoint's body (SPEC §4) on create and update: each field's shape, with `attr` naming the
 * field on refusal. Whether the query compiles and its variables match is the query layer's check.
 */
import {
  MATERIALIZATION_BUCKETS,
  SYNC_FREQUENCIES,
  type MaterializationBucket,
  VARIABLE_TYPES,
  type EndpointQuery,
  type InsightEndpointQuery,
  type SyncFrequency,
  type VariableDeclaration,
} from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { invalid, isPresent, objectBody, optionalBoolean, type JsonObject } from './json-input.ts';

export const ENDPOINT_FIELDS = [
  'name',
  'query',
  'description',
  'variables',
  'cache_age_seconds',
  'is_active',
  'is_materialized',
  'sync_frequency',
  'materialization_bucket',
];
/** What `PATCH …?version=N` changes: the flags of that version. */
export const VERSION_FIELDS = ['is_active', 'is_materialized'];

export const NAME_RULE = /^[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;
export const DEFAULT_CACHE_AGE_SECONDS = 300;
/** A week: longer than any sync frequency, so a cached result never outlives a materialization's refresh. */
export const MAX_CACHE_AGE_SECONDS = 7 * 24 * 3600;
const MAX_DESCRIPTION = 4000;
const INSIGHT_KINDS = ['TrendsQuery', 'FunnelsQuery', 'RetentionQuery'];
const HOGQL_FIELDS = ['kind', 'query'];

/** The fields a body gives; an absent (or null) field is undefined, except `description` (null clears it). */
export interface EndpointFields {
  readonly name?: string;
  readonly query?: EndpointQuery;
  readonly description?: string;
  readonly variables?: Readonly<Record<string, VariableDeclaration>>;
  readonly cacheAgeSeconds?: number;
  readonly isActive?: boolean;
  readonly isMaterialized?: boolean;
  readonly syncFrequency?: SyncFrequency;
  readonly materializationBucket?: MaterializationBucket;
}

export function readEndpointFields(
  raw: unknown,
  allowed: readonly string[] = ENDPOINT_FIELDS,
): EndpointFields {
  const body = objectBody(raw, allowed);
  return {
    name: isPresent(body, 'name') ? readName(body['name']) : undefined,
    query: isPresent(body, 'query') ? readQuery(body['query']) : undefined,
    description:
      body['description'] === null ? '' : isPresent(body, 'description') ? readDescription(body) : undefined,
    variables: isPresent(body, 'variables') ? readDeclarations(body['variables']) : undefined,
    cacheAgeSeconds: isPresent(body, 'cache_age_seconds')
      ? readCacheAge(body['cache_age_seconds'])
      : undefined,
    isActive: optionalBoolean(body, 'is_active'),
    isMaterialized: optionalBoolean(body, 'is_materialized'),
    syncFrequency: isPresent(body, 'sync_frequency') ? readSyncFrequency(body['sync_frequency']) : undefined,
    materializationBucket: isPresent(body, 'materialization_bucket')
      ? readBucket(body['materialization_bucket'])
      : undefined,
  };
}

/** Name and query, which a create needs: 400 `required` naming the first missing. */
export function createFields(
  fields: EndpointFields,
): EndpointFields & { name: string; query: EndpointQuery } {
  const { name, query } = fields;
  if (name === undefined)
    throw new AppError('required', { detail: "The field 'name' is required.", attr: 'name' });
  if (query === undefined) {
    throw new AppError('required', {
      detail: `The field 'query' is required: {"kind": "HogQLQuery", "query": "SELECT …"}.`,
      attr: 'query',
    });
  }
  return { ...fields, name, query };
}

function readName(value: unknown): string {
  if (typeof value !== 'string' || !NAME_RULE.test(value)) {
    throw invalid(
      'name',
      `An endpoint name starts with a letter and has up to 128 letters, digits, '_' and '-' (${JSON.stringify(value).slice(0, 64)} does not).`,
    );
  }
  return value;
}

function readQuery(value: unknown): EndpointQuery {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('query', `'query' must be an object: {"kind": "HogQLQuery", "query": "SELECT …"}.`);
  }
  const q = value as JsonObject;
  const kind = q['kind'];
  if (typeof kind === 'string' && INSIGHT_KINDS.includes(kind)) {
    // Kept as given (a copy); the query layer reads and checks every field of it.
    return structuredClone(q) as InsightEndpointQuery;
  }
  if (kind !== 'HogQLQuery') {
    throw invalid(
      'query.kind',
      `An endpoint's query is {"kind": "HogQLQuery", …} or an insight ({"kind": "${INSIGHT_KINDS.join('" | "')}", …}); 'kind' is ${JSON.stringify(kind ?? null).slice(0, 64)}.`,
    );
  }
  for (const field of Object.keys(q)) {
    if (!HOGQL_FIELDS.includes(field)) {
      throw new AppError('unknown_field', {
        detail:
          field === 'variables'
            ? "An endpoint declares its variables' types in its own 'variables' field, beside 'query'."
            : `An endpoint's HogQLQuery takes no field '${field.slice(0, 64)}'; it takes ${HOGQL_FIELDS.join(', ')}.`,
        attr: `query.${field.slice(0, 64)}`,
      });
    }
  }
  const text = q['query'];
  if (text === undefined || text === null) {
    throw new AppError('required', {
      detail: "The field 'query.query' (the SQL) is required.",
      attr: 'query.query',
    });
  }
  if (typeof text !== 'string' || text.trim() === '') {
    throw invalid('query.query', "'query.query' must be the SQL, a non-empty string.");
  }
  return { kind: 'HogQLQuery', query: text };
}

function readDescription(body: JsonObject): string {
  const value = body['description'];
  if (typeof value !== 'string') throw invalid('description', "'description' must be a string.");
  if (value.length > MAX_DESCRIPTION) {
    throw invalid('description', `'description' is longer than ${MAX_DESCRIPTION} characters.`);
  }
  return value;
}

function readDeclarations(value: unknown): Record<string, VariableDeclaration> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('invalid_variables', {
      detail: `'variables' declares types by name: {"browser": {"type": "string"}}.`,
      attr: 'variables',
    });
  }
  const out: Record<string, VariableDeclaration> = {};
  for (const [name, declaration] of Object.entries(value as JsonObject)) {
    const attr = `variables.${name.slice(0, 64)}`;
    const d = declaration as JsonObject | null;
    if (typeof d !== 'object' || d === null || Array.isArray(d)) {
      throw new AppError('invalid_variables', {
        detail: `Variable '${name.slice(0, 64)}' is declared as {"type": "<type>"}, with a type of ${VARIABLE_TYPES.join(', ')}.`,
        attr,
      });
    }
    for (const field of Object.keys(d)) {
      if (field !== 'type') {
        throw new AppError('invalid_variables', {
          detail: `A variable declaration takes only 'type'; '${field.slice(0, 64)}' is not taken.`,
          attr,
        });
      }
    }
    const type = d['type'];
    if (typeof type !== 'string' || !(VARIABLE_TYPES as readonly string[]).includes(type)) {
      throw new AppError('invalid_variables', {
        detail: `Variable '${name.slice(0, 64)}': the type must be one of ${VARIABLE_TYPES.join(', ')}.`,
        attr,
      });
    }
    out[name] = { type: type as VariableDeclaration['type'] };
  }
  return out;
}

function readCacheAge(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_CACHE_AGE_SECONDS) {
    throw invalid(
      'cache_age_seconds',
      `'cache_age_seconds' is a whole number of seconds from 0 (never cached) to ${MAX_CACHE_AGE_SECONDS}.`,
    );
  }
  return value;
}

function readSyncFrequency(value: unknown): SyncFrequency {
  if (typeof value !== 'string' || !(SYNC_FREQUENCIES as readonly string[]).includes(value)) {
    throw invalid('sync_frequency', `'sync_frequency' is one of ${SYNC_FREQUENCIES.join(', ')}.`);
  }
  return value as SyncFrequency;
}

function readBucket(value: unknown): MaterializationBucket {
  if (typeof value !== 'string' || !(MATERIALIZATION_BUCKETS as readonly string[]).includes(value)) {
    throw invalid(
      'materialization_bucket',
      `'materialization_bucket' is one of ${MATERIALIZATION_BUCKETS.join(', ')}: the bucket a range variable's column is kept at.`,
    );
  }
  return value as MaterializationBucket;
}

/** A `version` query-string parameter: a positive integer, or undefined when absent. */
export function readVersionParam(query: URLSearchParams): number | undefined {
  const raw = query.get('version');
  if (raw === null) return undefined;
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : 0;
  if (n < 1)
    throw invalid(
      'version',
      `'version' is a version number (1, 2, …); got ${JSON.stringify(raw.slice(0, 32))}.`,
    );
  return n;
}
