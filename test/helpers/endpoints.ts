/** Calling the endpoints API of a test Weir. */
import { PERSONAL_API_KEY, request, type HttpResult, type TestWeir } from './weir.ts';

export interface CallOptions {
  readonly project?: number;
  /** A personal API key; '' sends no Authorization header. */
  readonly key?: string;
  /** `projects` or `environments`. */
  readonly prefix?: string;
}

/** `method` on `P/endpoints/<path>`; a body that is not a string is sent as JSON. */
export function endpointsApi(
  w: TestWeir,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = {};
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
  w: TestWeir,
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
