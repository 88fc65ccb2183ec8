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
