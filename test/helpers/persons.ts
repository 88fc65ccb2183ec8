/** Persons made through capture, and the persons API read back, for the persons and erasure tests. */
import { PERSONAL_API_KEY, post, request, type HttpResult } from './weir.ts';

export interface PersonJson {
  id: string;
  uuid: string;
  name: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  is_identified: boolean;
  created_at: string;
}

export interface PersonPage {
  results: PersonJson[];
  next: string | null;
  previous: string | null;
}

interface Served {
  readonly url: string;
}

export function bearer(key = PERSONAL_API_KEY): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
}

/** Captures events as a batch, failing unless the answer is 200. */
export async function capture(
  w: Served,
  apiKey: string,
  events: readonly Record<string, unknown>[],
): Promise<void> {
  const res = await post(`${w.url}/batch/`, JSON.stringify({ api_key: apiKey, batch: events }));
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
}

/** `GET P/persons/…` with a personal key; `path` is what follows `persons/`. */
export function persons(
  w: Served,
  path = '',
  options: { project?: number; key?: string } = {},
): Promise<HttpResult> {
  return request(`${w.url}/api/projects/${options.project ?? 1}/persons/${path}`, {
    headers: bearer(options.key),
  });
}

/** The page a persons listing must answer. */
export async function personPage(w: Served, query = '', project = 1): Promise<PersonPage> {
  const res = await persons(w, query === '' ? '' : `?${query}`, { project });
  if (res.status !== 200) throw new Error(`persons answered ${res.status}: ${res.text}`);
  return res.json as PersonPage;
}

export interface DeletionJson {
  id: string;
  kind: string;
  status: 'queued' | 'running' | 'done';
  project_id: number;
  person_ids: string[];
  distinct_id_count: number;
  delete_events: boolean;
  suppress: boolean;
  attempts: number;
  last_error: string | null;
  counts: Record<string, number> | null;
  url: string;
}

/** Polls a deletion's state until `until` holds of it, or fails after `timeoutMs`. */
export async function deletionWhen(
  w: Served,
  id: string,
  until: (d: DeletionJson) => boolean,
  timeoutMs = 60_000,
  project = 1,
): Promise<DeletionJson> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const res = await request(`${w.url}/api/projects/${project}/deletions/${id}/`, { headers: bearer() });
    last = res.json;
    if (res.status === 200 && until(res.json as DeletionJson)) return res.json as DeletionJson;
    if (Date.now() > deadline) throw new Error(`deletion ${id} never got there: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
