/** Calling the query API of a test Weir. */
import { PERSONAL_API_KEY, PROJECT_API_KEY, post, request, waitFor, type HttpResult } from './weir.ts';
import type { Served } from './endpoints.ts';

export interface QueryBody {
  results: unknown[][];
  columns: string[];
  types: string[];
  hogql: string;
  clickhouse: string;
  timings: { k: string; t: number }[];
}

export interface QueryOptions {
  readonly project?: number;
  readonly key?: string;
  readonly variables?: Record<string, unknown>;
  /** `projects` or `environments`. */
  readonly prefix?: string;
}

export function queryApi(w: Served, sql: string, options: QueryOptions = {}): Promise<HttpResult> {
  const query: Record<string, unknown> = { kind: 'HogQLQuery', query: sql };
  if (options.variables) query['variables'] = options.variables;
  return rawQuery(w, { query }, options);
}

export function rawQuery(w: Served, body: unknown, options: QueryOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = options.key ?? PERSONAL_API_KEY;
  if (key) headers['authorization'] = `Bearer ${key}`;
  return request(`${w.url}/api/${options.prefix ?? 'projects'}/${options.project ?? 1}/query/`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The results of a query that must succeed. */
export async function rows(w: Served, sql: string, options: QueryOptions = {}): Promise<unknown[][]> {
  return (await ok(w, sql, options)).results;
}

export async function ok(w: Served, sql: string, options: QueryOptions = {}): Promise<QueryBody> {
  const res = await queryApi(w, sql, options);
  if (res.status !== 200) throw new Error(`query failed: ${res.status} ${res.text}\n${sql}`);
  return res.json as QueryBody;
}

export async function createProject(w: Served, name: string): Promise<number> {
  const res = await request(`${w.url}/api/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${res.text}`);
  return (res.json as { id: number }).id;
}

export async function createKey(
  w: Served,
  body: { scopes: string[]; projects: number[] | '*'; label?: string },
): Promise<{ id: string; value: string }> {
  const res = await request(`${w.url}/api/personal_api_keys/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
    body: JSON.stringify({ label: 'test', ...body }),
  });
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.json as { id: string; value: string };
}

/**
 * Captures a batch of events into an empty project 1 (as a historical import, so spike detection leaves it
 * whole) and waits until a query sees every one of them.
 */
/**
 * Captures `batch` as a historical migration through `w` and waits until `readFrom` (another role's API, a
 * query node) counts that many events.
 */
export async function captureAll(
  w: Served,
  batch: readonly Record<string, unknown>[],
  readFrom: Served = w,
): Promise<void> {
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, historical_migration: true, batch }),
  );
  if (res.status !== 200) throw new Error(`capture: ${res.status} ${res.text}`);
  await waitFor(
    async () =>
      (await rows(readFrom, 'SELECT count() FROM events'))[0]![0] === batch.length ? true : undefined,
    20_000,
    'the captured events',
  );
}
