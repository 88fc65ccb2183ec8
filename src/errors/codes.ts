/**
 * Every error code Weir answers with, in one table (SPEC §1). Each code has its HTTP status and a default
 * sentence for a person; `test/unit/errors.test.ts` fails when a code here is not documented in
 * `docs/errors.md`, so a client author can rely on the list.
 */
export type ErrorType =
  | 'validation_error'
  | 'authentication_error'
  | 'permission_denied'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'throttled'
  | 'server_error'
  | 'unavailable'
  | 'timeout';

export const STATUS_OF_TYPE: Readonly<Record<ErrorType, number>> = {
  validation_error: 400,
  authentication_error: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  throttled: 429,
  server_error: 500,
  unavailable: 503,
  timeout: 504,
};

interface CodeSpec {
  readonly type: ErrorType;
  readonly detail: string;
}

export const ERROR_CODES = {
  // Capture (SPEC §2)
  missing_api_key: {
    type: 'authentication_error',
    detail: 'No project API key was found in the request body (api_key, token or $token).',
  },
  invalid_api_key: { type: 'authentication_error', detail: 'The project API key names no project.' },
  inconsistent_api_key: {
    type: 'authentication_error',
    detail: 'The request carries more than one different project API key.',
  },
  invalid_payload: { type: 'validation_error', detail: 'The request body could not be decoded.' },
  empty_batch: { type: 'validation_error', detail: 'The batch is missing, not an array, or empty.' },
  invalid_event: { type: 'validation_error', detail: 'An event in the request is malformed.' },
  invalid_group: {
    type: 'validation_error',
    detail: '$groupidentify needs string $group_type and $group_key of at most 400 characters.',
  },
  invalid_alias: { type: 'validation_error', detail: '$create_alias needs a string alias.' },
  missing_survey_id: { type: 'validation_error', detail: 'Survey events need a $survey_id property.' },
  payload_too_large: { type: 'payload_too_large', detail: 'The request body is too large.' },
  unsupported_encoding: {
    type: 'unsupported_media_type',
    detail: 'The body has a Content-Encoding capture does not take: gzip, deflate and br are taken.',
  },
  unavailable: {
    type: 'unavailable',
    detail: 'Weir cannot take more events right now; retry after the time in Retry-After.',
  },
  // Auth and management API (SPEC §3)
  not_authenticated: {
    type: 'authentication_error',
    detail: 'No personal API key was given; send Authorization: Bearer <personal API key>.',
  },
  authentication_failed: {
    type: 'authentication_error',
    detail: 'The personal API key is not valid.',
  },
  missing_scope: { type: 'permission_denied', detail: 'The personal API key lacks a scope this needs.' },
  project_forbidden: {
    type: 'permission_denied',
    detail: 'The personal API key does not reach this project.',
  },
  required: { type: 'validation_error', detail: 'A required field is missing.' },
  invalid_input: { type: 'validation_error', detail: 'A field has a value this route does not take.' },
  unknown_field: { type: 'validation_error', detail: 'The body has a field this route does not take.' },
  // Query API (SPEC §3) and SQL endpoint runs (SPEC §4)
  invalid_query: {
    type: 'validation_error',
    detail:
      'The query cannot run: it does not parse, or names a table, column or function Weir does not serve.',
  },
  missing_variable: { type: 'validation_error', detail: 'A variable the query uses was not provided.' },
  unknown_variable: {
    type: 'validation_error',
    detail: 'A variable was provided that the query does not use.',
  },
  invalid_variable: {
    type: 'validation_error',
    detail: 'A variable has a value of the wrong type or format.',
  },
  query_limit_exceeded: {
    type: 'validation_error',
    detail: 'The query went past a limit of the run (memory, result rows or bytes, query size).',
  },
  // Endpoints (SPEC §4)
  too_many_suppressed: {
    type: 'validation_error',
    detail: 'The project would suppress more distinct ids than it may.',
  },
  endpoint_exists: {
    type: 'validation_error',
    detail: 'The project already has an endpoint of this name.',
  },
  invalid_variables: {
    type: 'validation_error',
    detail: "An endpoint's variable declarations do not match the placeholders of its query.",
  },
  cannot_materialize: {
    type: 'validation_error',
    detail: 'This endpoint version cannot be materialized.',
  },
  direct_not_materialized: {
    type: 'validation_error',
    detail: "refresh 'direct' is only for a materialized endpoint version.",
  },
  endpoint_changed: {
    type: 'conflict',
    detail:
      'The endpoint changed since the ETag given in If-Match was read; read it again and make the change anew.',
  },
  date_variables_unavailable: {
    type: 'validation_error',
    detail: "A materialized insight endpoint does not take 'date_from' / 'date_to'.",
  },
  // Every route
  invalid_request: {
    type: 'validation_error',
    detail: 'The request is not valid HTTP/1.1 (its Content-Length is not a length).',
  },
  not_found: { type: 'not_found', detail: 'Nothing is here.' },
  method_not_allowed: { type: 'method_not_allowed', detail: 'This method is not allowed on this route.' },
  server_error: { type: 'server_error', detail: 'Weir hit an internal error; it has been logged.' },
  store_unavailable: {
    type: 'unavailable',
    detail: 'The store cannot answer right now; retry after the time in Retry-After.',
  },
  timeout: { type: 'timeout', detail: 'The request took too long.' },
  throttled: { type: 'throttled', detail: 'Too many requests; retry after the time in Retry-After.' },
} as const satisfies Record<string, CodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function statusOf(code: ErrorCode): number {
  return STATUS_OF_TYPE[ERROR_CODES[code].type];
}
