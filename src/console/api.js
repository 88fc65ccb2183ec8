// The API of the server that served the console, called with the personal API key a person signed in with.
// The key lives in this tab's sessionStorage (gone when the tab closes) and travels only in the
// Authorization header of same-origin requests, never in a URL.

const KEY = 'weir.personalApiKey';

export function signedIn() {
  return sessionStorage.getItem(KEY) !== null;
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

/** An error answer of the API (SPEC §1), or a failure to reach it. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && typeof body.detail === 'string' ? body.detail : `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = body && typeof body.code === 'string' ? body.code : 'http_error';
    this.attr = body && typeof body.attr === 'string' ? body.attr : null;
  }
}

/** Checks a key against the API before keeping it: a key that lists no projects is no use here. */
export async function signIn(key) {
  const projects = await call('GET', '/api/projects/', undefined, key);
  sessionStorage.setItem(KEY, key);
  return projects.results;
}

async function call(method, path, body, key = sessionStorage.getItem(KEY)) {
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiError(0, { code: 'network_error', detail: `The server did not answer: ${err.message}` });
  }
  const text = await res.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

const project = (id) => `/api/projects/${encodeURIComponent(id)}`;
const endpoint = (id, name) => `${project(id)}/endpoints/${encodeURIComponent(name)}`;
const versioned = (version) => (version === undefined ? '' : `?version=${encodeURIComponent(version)}`);

export const api = {
  projects: () => call('GET', '/api/projects/').then((r) => r.results),
  endpoints: (id) => call('GET', `${project(id)}/endpoints/`).then((r) => r.results),
  endpoint: (id, name, version) => call('GET', `${endpoint(id, name)}/${versioned(version)}`),
  versions: (id, name) => call('GET', `${endpoint(id, name)}/versions/`).then((r) => r.results),
  openapi: (id, name, version) => call('GET', `${endpoint(id, name)}/openapi.json${versioned(version)}`),
  run: (id, name, body) => call('POST', `${endpoint(id, name)}/run`, body),
  query: (id, sql) => call('POST', `${project(id)}/query/`, { query: { kind: 'HogQLQuery', query: sql } }),
  /** Prometheus text; `/metrics` takes no key. */
  metrics: async () => {
    const res = await fetch('/metrics', { credentials: 'omit', cache: 'no-store' });
    if (!res.ok) throw new ApiError(res.status, undefined);
    return res.text();
  },
};
