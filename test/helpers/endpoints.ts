/** Calling the endpoints API of a test Weir. */
import type { Test } from 'tap';
import { PERSONAL_API_KEY, request, type HttpResult, type TestWeir } from './weir.ts';

/** Whatever serves the API: a test Weir, or a role (a `weir query` node) reached by its URL. */
export type Served = Pick<TestWeir, 'url'>;

export interface CallOptions {
  readonly project?: number;
  /** A personal API key; '' sends no Authorization header. */
  readonly key?: string;
  /** `projects` or `environments`. */
  readonly prefix?: string;
  /** More request headers (`if-match`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** `method` on `P/endpoints/<path>`; a body that is not a string is sent as JSON. */
export function endpointsApi(
  w: Served,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key ?? PERSONAL_API_KEY;
  if (key) headers['authorization'] = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const url = `${w.url}/api/${options.prefix ?? 'projects'}/${options.project ?? 1}/endpoints/${path}`;
  return request(url, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface EndpointBody {
  id: string;
  name: string;
  query: { kind: string; query: string };
  description: string;
  variables: Record<string, { type: string }>;
  cache_age_seconds: number;
  is_active: boolean;
  is_materialized: boolean;
  sync_frequency: string;
  current_version: number;
  versions_count: number;
  endpoint_path: string;
  created_at: string;
  updated_at: string;
  materialization: Record<string, unknown>;
}

/** Creates an endpoint that must be created. */
export async function createEndpoint(
  w: Served,
  body: Record<string, unknown>,
  options: CallOptions = {},
): Promise<EndpointBody> {
  const res = await endpointsApi(w, 'POST', '', body, options);
  if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${res.text}`);
  return res.json as EndpointBody;
}

export function hogql(query: string): { kind: 'HogQLQuery'; query: string } {
  return { kind: 'HogQLQuery', query };
}

export interface RunBody {
  results: unknown[][];
  columns: string[];
  types: string[];
  hasMore: boolean;
  name: string;
  endpoint_version: number;
  is_cached: boolean;
  last_refresh: string;
  endpoint_materialized: boolean;
  endpoint_materialized_at: string | null;
  hogql?: string;
  clickhouse?: string;
  timings?: { k: string; t: number }[];
}

/** Runs an endpoint: POST with `body` as JSON, or GET with `query` as the query string. */
export function runEndpoint(
  w: Served,
  name: string,
  body?: unknown,
  options: CallOptions & { readonly method?: 'GET' | 'POST'; readonly query?: string } = {},
): Promise<HttpResult> {
  const path = `${encodeURIComponent(name)}/run${options.query ? `?${options.query}` : ''}`;
  return endpointsApi(w, options.method ?? 'POST', path, body, options);
}

/** The body of a run that must succeed. */
export async function runOk(
  w: Served,
  name: string,
  body?: unknown,
  options: CallOptions & { readonly method?: 'GET' | 'POST'; readonly query?: string } = {},
): Promise<RunBody> {
  const res = await runEndpoint(w, name, body, options);
  if (res.status !== 200) throw new Error(`run ${name}: ${res.status} ${res.text}`);
  return res.json as RunBody;
}

const TYPE_OF_STATUS: Record<number, string> = {
  400: 'validation_error',
  401: 'authentication_error',
  403: 'permission_denied',
  404: 'not_found',
  405: 'method_not_allowed',
  429: 'throttled',
  504: 'timeout',
};

/** A SPEC §1 error body with this status, code and attr. */
export function refused(
  t: Test,
  res: HttpResult,
  status: number,
  code: string,
  attr: string | null,
  label = code,
): void {
  t.equal(res.status, status, `${label}: status`);
  t.match(res.headers.get('content-type'), /^application\/json/, `${label}: content type`);
  const body = res.json as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['attr', 'code', 'detail', 'type'], `${label}: body keys`);
  t.same(
    [body['type'], body['code'], body['attr']],
    [TYPE_OF_STATUS[status], code, attr],
    `${label}: type, code, attr`,
  );
  t.match(body['detail'], /\S/, `${label}: a sentence`);
}

/**
 * The refusals every endpoint route gives to callers who are not the project's: no key (401
 * not_authenticated), a key that does not exist (401 authentication_failed), and a valid key of another
 * project (403 project_forbidden). Returns the no-key answer for checks of its own.
 */
export async function refusesStrangers(
  t: Test,
  call: (key: string) => Promise<HttpResult>,
  elsewhereKey: string,
  label: string,
): Promise<HttpResult> {
  const none = await call('');
  refused(t, none, 401, 'not_authenticated', null, `${label}: no key`);
  refused(t, await call('phx_not_a_key_at_all'), 401, 'authentication_failed', null, `${label}: unknown key`);
  refused(t, await call(elsewhereKey), 403, 'project_forbidden', null, `${label}: another project's key`);
  return none;
}
