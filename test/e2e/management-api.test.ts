/**
 * Projects and personal API keys over HTTP (SPEC §3): every route, the auth matrix (no key, unknown key,
 * revoked key, missing scope, another project's key), validation, a new project capturing at once,
 * concurrent writers, and keys never stored in clear.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileCatalog } from '../../src/catalog/file-catalog.ts';
import { assertError } from '../helpers/capture-bodies.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  startTestWeir,
  type HttpResult,
} from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

type Json = Record<string, unknown>;

/** The fields a project is shown with, in sorted order. */
const PROJECT_FIELDS = ['anonymize_ips', 'api_token', 'created_at', 'event_retention_days', 'id', 'name'];

function api(method: string, path: string, key: string | undefined, body?: unknown): Promise<HttpResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers['authorization'] = `Bearer ${key}`;
  return request(`${w.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function createProject(name: string, key = PERSONAL_API_KEY): Promise<Json> {
  const res = await api('POST', '/api/projects/', key, { name });
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${res.text}`);
  return res.json as Json;
}

async function createKey(body: Json, key = PERSONAL_API_KEY): Promise<Json> {
  const res = await api('POST', '/api/personal_api_keys/', key, body);
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.json as Json;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('GET /api/projects/ lists the projects the key reaches', async (t) => {
  const res = await api('GET', '/api/projects/', PERSONAL_API_KEY);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const body = res.json as { results: Json[]; count: number };
  t.equal(body.count, body.results.length);
  t.match(body.results[0], { id: 1, name: 'Default project', api_token: PROJECT_API_KEY, created_at: ISO });
  t.same(Object.keys(body.results[0]!).sort(), PROJECT_FIELDS);
  t.equal((await api('GET', '/api/projects', PERSONAL_API_KEY)).status, 200, 'trailing slash optional');
});

t.test('POST /api/projects/ makes a project that captures at once, and the key gains it', async (t) => {
  const res = await api('POST', '/api/projects/', PERSONAL_API_KEY, { name: '  Marketing site ' });
  t.equal(res.status, 201);
  const project = res.json as Json;
  t.same(Object.keys(project).sort(), PROJECT_FIELDS);
  t.equal(project['name'], 'Marketing site', 'the name is trimmed');
  t.match(project['api_token'], /^phc_[A-Za-z0-9]{43}$/);
  t.ok((project['id'] as number) > 1);

  const captured = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: project['api_token'], event: 'mgmt_first', distinct_id: 'mgmt-new-project' }),
  );
  t.equal(captured.status, 200, 'the new project API key captures immediately');
  const rows = await w.rows<{ project_id: string }>(
    `SELECT toString(project_id) AS project_id FROM events WHERE event = 'mgmt_first'`,
  );
  t.same(rows, [{ project_id: String(project['id']) }], 'the row belongs to the new project');

  const listed = (await api('GET', '/api/projects/', PERSONAL_API_KEY)).json as { results: Json[] };
  t.ok(
    listed.results.some((p) => p['id'] === project['id']),
    'the key that made it reaches it',
  );
  for (const prefix of ['/api/projects', '/api/environments']) {
    for (const slash of ['/', '']) {
      const one = await api('GET', `${prefix}/${String(project['id'])}${slash}`, PERSONAL_API_KEY);
      t.equal(one.status, 200, `${prefix}/{id}${slash}`);
      t.same(one.json, project);
    }
  }
});

t.test('PATCH /api/projects/{id}/ renames a project', async (t) => {
  const project = await createProject('Before');
  const path = `/api/projects/${String(project['id'])}/`;
  const res = await api('PATCH', path, PERSONAL_API_KEY, { name: 'After' });
  t.equal(res.status, 200);
  t.same(res.json, { ...project, name: 'After' });
  t.same((await api('GET', path, PERSONAL_API_KEY)).json, { ...project, name: 'After' }, 'kept');
  const empty = await api('PATCH', path, PERSONAL_API_KEY, {});
  t.same(empty.json, { ...project, name: 'After' }, 'an empty patch changes nothing');
  assertError(
    t,
    await api('PATCH', path, PERSONAL_API_KEY, { name: '' }),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(
    t,
    await api('PATCH', path, PERSONAL_API_KEY, { api_token: 'phc_mine' }),
    400,
    'validation_error',
    'unknown_field',
  );
});

t.test('PATCH /api/projects/{id}/ sets anonymize_ips, a boolean, off for a new project', async (t) => {
  const project = await createProject('Private');
  t.equal(project['anonymize_ips'], false, 'a new project keeps IPs');
  const path = `/api/projects/${String(project['id'])}/`;
  const on = await api('PATCH', path, PERSONAL_API_KEY, { anonymize_ips: true });
  t.equal(on.status, 200);
  t.same(on.json, { ...project, anonymize_ips: true });
  t.same((await api('GET', path, PERSONAL_API_KEY)).json, { ...project, anonymize_ips: true }, 'kept');
  const renamed = await api('PATCH', path, PERSONAL_API_KEY, { name: 'Still private' });
  t.same(renamed.json, { ...project, name: 'Still private', anonymize_ips: true }, 'a rename keeps it');
  const err = await api('PATCH', path, PERSONAL_API_KEY, { anonymize_ips: 'yes' });
  assertError(t, err, 400, 'validation_error', 'invalid_input');
  t.match(err.json, { attr: 'anonymize_ips' });
});

t.test('project bodies are validated, each error naming its field', async (t) => {
  const cases: [unknown, number, string, string, string | null][] = [
    [{}, 400, 'validation_error', 'required', 'name'],
    [undefined, 400, 'validation_error', 'required', 'name'],
    [{ name: null }, 400, 'validation_error', 'required', 'name'],
    [{ name: '   ' }, 400, 'validation_error', 'invalid_input', 'name'],
    [{ name: 42 }, 400, 'validation_error', 'invalid_input', 'name'],
    [{ name: 'x'.repeat(201) }, 400, 'validation_error', 'invalid_input', 'name'],
    // Many chunks on the wire, read whole: the name is too long, not the JSON cut short.
    [{ name: 'x'.repeat(900 * 1024) }, 400, 'validation_error', 'invalid_input', 'name'],
    [{ nmae: 'typo' }, 400, 'validation_error', 'unknown_field', 'nmae'],
    ['{"name":', 400, 'validation_error', 'invalid_payload', null],
    ['[{"name":"x"}]', 400, 'validation_error', 'invalid_payload', null],
    [
      JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
      413,
      'payload_too_large',
      'payload_too_large',
      null,
    ],
  ];
  const before = (await api('GET', '/api/projects/', PERSONAL_API_KEY)).json as { count: number };
  for (const [body, status, type, code, attr] of cases) {
    const label = `${code} ${typeof body === 'string' ? body.slice(0, 20) : JSON.stringify(body)?.slice(0, 40)}`;
    const res = await api('POST', '/api/projects/', PERSONAL_API_KEY, body);
    assertError(t, res, status, type, code, label);
    t.equal((res.json as Json | undefined)?.['attr'], attr, `${label}: attr`);
  }
  const after = (await api('GET', '/api/projects/', PERSONAL_API_KEY)).json as { count: number };
  t.equal(after.count, before.count, 'no project was made');
});

t.test('other methods are 405 with Allow', async (t) => {
  for (const [method, path, allow] of [
    ['PUT', '/api/projects/', 'GET, POST'],
    ['PUT', '/api/projects/1/', 'GET, PATCH, DELETE'],
    ['PATCH', '/api/personal_api_keys/', 'GET, POST'],
    ['POST', '/api/personal_api_keys/abc/', 'GET, DELETE'],
  ] as const) {
    const res = await api(method, path, PERSONAL_API_KEY, {});
    assertError(t, res, 405, 'method_not_allowed', 'method_not_allowed', `${method} ${path}`);
    t.equal(res.headers.get('allow'), allow, `${method} ${path}: Allow`);
  }
});

t.test('personal API keys: made with a value shown once, listed masked, revoked at once', async (t) => {
  const res = await api('POST', '/api/personal_api_keys/', PERSONAL_API_KEY, {
    label: 'ci',
    scopes: ['query:read', 'endpoint:read', 'query:read'],
    projects: [1],
  });
  t.equal(res.status, 201);
  const made = res.json as Json;
  t.same(Object.keys(made).sort(), [
    'created_at',
    'id',
    'label',
    'mask_value',
    'projects',
    'scopes',
    'value',
  ]);
  t.match(made, { label: 'ci', scopes: ['query:read', 'endpoint:read'], projects: [1], created_at: ISO });
  const value = made['value'] as string;
  t.match(value, /^phx_[A-Za-z0-9]{43}$/);
  t.equal(made['mask_value'], `phx_…${value.slice(-4)}`);

  const asNew = await api('GET', '/api/projects/', value);
  t.equal(asNew.status, 200, 'the new key authenticates');
  t.same(
    (asNew.json as { results: Json[] }).results.map((p) => p['id']),
    [1],
  );

  const listed = (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as {
    results: Json[];
    count: number;
  };
  t.equal(listed.count, listed.results.length);
  const entry = listed.results.find((k) => k['id'] === made['id']);
  const { value: _shown, ...withoutValue } = made;
  t.same(entry, withoutValue, 'listed without a value');
  t.notOk(JSON.stringify(listed).includes(value), 'the value appears nowhere in the list');
  t.notOk(/value_?hash|[0-9a-f]{64}/i.test(JSON.stringify(listed)), 'nor its hash');

  const one = await api('GET', `/api/personal_api_keys/${String(made['id'])}/`, PERSONAL_API_KEY);
  t.same(one.json, entry, 'GET one key');

  const revoked = await api('DELETE', `/api/personal_api_keys/${String(made['id'])}/`, PERSONAL_API_KEY);
  t.equal(revoked.status, 204);
  t.equal(revoked.text, '');
  const refused = await api('GET', '/api/projects/', value);
  assertError(t, refused, 401, 'authentication_error', 'authentication_failed', 'the next request');
  t.match((refused.json as Json)['detail'], /revoked/);
  const gone = await api('DELETE', `/api/personal_api_keys/${String(made['id'])}/`, PERSONAL_API_KEY);
  assertError(t, gone, 404, 'not_found', 'not_found', 'revoking twice');
  const relisted = (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as {
    results: Json[];
  };
  t.notOk(
    relisted.results.some((k) => k['id'] === made['id']),
    'a revoked key is no longer listed',
  );
});

t.test('a key can revoke itself; the very request after is refused', async (t) => {
  const made = await createKey({ label: 'self', scopes: ['query:read'], projects: [1] });
  const value = made['value'] as string;
  const res = await api('DELETE', `/api/personal_api_keys/${String(made['id'])}`, value);
  t.equal(res.status, 204);
  assertError(
    t,
    await api('GET', '/api/personal_api_keys/', value),
    401,
    'authentication_error',
    'authentication_failed',
  );
});

t.test('auth matrix on every route', async (t) => {
  const projectBefore = (await api('GET', '/api/projects/1/', PERSONAL_API_KEY)).json;
  const keysBefore = (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as {
    count: number;
  };
  const victim = await createKey({ label: 'to revoke', scopes: ['*'], projects: [1] });
  await api('DELETE', `/api/personal_api_keys/${String(victim['id'])}/`, PERSONAL_API_KEY);
  const routes: [string, string, unknown][] = [
    ['GET', '/api/projects/', undefined],
    ['POST', '/api/projects/', { name: 'never' }],
    ['GET', '/api/projects/1/', undefined],
    ['GET', '/api/environments/1/', undefined],
    ['PATCH', '/api/projects/1/', { name: 'never' }],
    ['GET', '/api/personal_api_keys/', undefined],
    ['POST', '/api/personal_api_keys/', { label: 'never', scopes: ['*'], projects: [1] }],
    ['GET', `/api/personal_api_keys/${String(victim['id'])}/`, undefined],
    ['DELETE', `/api/personal_api_keys/${String(victim['id'])}/`, undefined],
  ];
  const headers: [string, Record<string, string>, string][] = [
    ['no header', {}, 'not_authenticated'],
    ['empty header', { authorization: '' }, 'not_authenticated'],
    [
      'unknown key',
      { authorization: 'Bearer phx_unknown_key_000000000000000000000000000' },
      'authentication_failed',
    ],
    ['revoked key', { authorization: `Bearer ${String(victim['value'])}` }, 'authentication_failed'],
    ['basic auth', { authorization: 'Basic dXNlcjpwYXNz' }, 'authentication_failed'],
    ['bare key', { authorization: PERSONAL_API_KEY }, 'authentication_failed'],
    ['project API key', { authorization: `Bearer ${PROJECT_API_KEY}` }, 'authentication_failed'],
  ];
  for (const [method, path, body] of routes) {
    for (const [name, h, code] of headers) {
      const res = await request(`${w.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...h },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      assertError(t, res, 401, 'authentication_error', code, `${method} ${path} (${name})`);
      t.match(
        res.headers.get('www-authenticate'),
        /^Bearer/,
        `${method} ${path} (${name}): WWW-Authenticate`,
      );
    }
  }
  const lower = await request(`${w.url}/api/projects/`, {
    headers: { authorization: `bearer   ${PERSONAL_API_KEY} ` },
  });
  t.equal(lower.status, 200, 'the scheme is case-insensitive and spaces are tolerated');
  t.same((await api('GET', '/api/projects/1/', PERSONAL_API_KEY)).json, projectBefore, 'nothing was renamed');
  const keysAfter = (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as { count: number };
  t.equal(keysAfter.count, keysBefore.count, 'no key was made');
});

t.test("a key of another project sees and does only that project's things", async (t) => {
  const other = await createProject('Other team');
  const otherId = other['id'] as number;
  const made = await createKey({ label: 'other team', scopes: ['query:read'], projects: [otherId] });
  const key = made['value'] as string;

  const listed = (await api('GET', '/api/projects/', key)).json as { results: Json[]; count: number };
  t.same(listed, { results: [other], count: 1 }, 'lists only its project');
  t.same((await api('GET', `/api/projects/${otherId}/`, key)).json, other);
  assertError(
    t,
    await api('GET', '/api/projects/1/', key),
    403,
    'permission_denied',
    'project_forbidden',
    'project 1',
  );
  assertError(
    t,
    await api('GET', '/api/environments/1/', key),
    403,
    'permission_denied',
    'project_forbidden',
    'project 1, environments form',
  );
  assertError(
    t,
    await api('GET', '/api/projects/987654/', key),
    403,
    'permission_denied',
    'project_forbidden',
    'a project it does not reach, whether it exists or not',
  );
  assertError(
    t,
    await api('PATCH', '/api/projects/1/', key, { name: 'taken over' }),
    403,
    'permission_denied',
    'project_forbidden',
    'rename project 1',
  );

  const keys = (await api('GET', '/api/personal_api_keys/', key)).json as { results: Json[] };
  t.same(
    keys.results.map((k) => k['id']),
    [made['id']],
    'lists only its own key',
  );
  const bootstrapId = (
    (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as { results: Json[] }
  ).results[0]!['id'] as string;
  assertError(
    t,
    await api('DELETE', `/api/personal_api_keys/${bootstrapId}/`, key),
    404,
    'not_found',
    'not_found',
    "revoking its maker's key",
  );
  assertError(
    t,
    await api('GET', `/api/personal_api_keys/${bootstrapId}/`, key),
    404,
    'not_found',
    'not_found',
  );
  t.equal(
    (await api('GET', '/api/projects/', PERSONAL_API_KEY)).status,
    200,
    'the bootstrap key still works',
  );
});

t.test('a key without the scope is refused (403 missing_scope)', async (t) => {
  const made = await createKey({
    label: 'read only',
    scopes: ['query:read', 'endpoint:read'],
    projects: [1],
  });
  const key = made['value'] as string;
  const res = await api('POST', '/api/projects/', key, { name: 'not allowed' });
  assertError(t, res, 403, 'permission_denied', 'missing_scope', 'create a project');
  t.match((res.json as Json)['detail'], /project:write/);
  assertError(
    t,
    await api('PATCH', '/api/projects/1/', key, { name: 'not allowed' }),
    403,
    'permission_denied',
    'missing_scope',
    'rename a project',
  );
  t.equal((await api('GET', '/api/projects/1/', key)).status, 200, 'reading needs no scope');

  const writer = await createKey({ label: 'writer', scopes: ['project:write'], projects: [] });
  const created = await api('POST', '/api/projects/', writer['value'] as string, { name: 'by writer' });
  t.equal(created.status, 201, 'project:write suffices');
  const reach = (await api('GET', '/api/projects/', writer['value'] as string)).json as { results: Json[] };
  t.same(
    reach.results.map((p) => p['id']),
    [(created.json as Json)['id']],
    'a key that reached nothing gains the project it made',
  );
});

t.test('a new key never exceeds the key that makes it', async (t) => {
  const made = await createKey({ label: 'narrow', scopes: ['query:read'], projects: [1] });
  const narrow = made['value'] as string;
  const child = await api('POST', '/api/personal_api_keys/', narrow, {
    label: 'child',
    scopes: ['query:read'],
    projects: [1],
  });
  t.equal(child.status, 201, 'within its reach');
  const cases: [Json, number, string, string, string][] = [
    [
      { label: 'x', scopes: ['endpoint:write'], projects: [1] },
      403,
      'permission_denied',
      'missing_scope',
      'scopes',
    ],
    [{ label: 'x', scopes: ['*'], projects: [1] }, 403, 'permission_denied', 'missing_scope', 'scopes'],
    [
      { label: 'x', scopes: ['query:read'], projects: [2] },
      403,
      'permission_denied',
      'project_forbidden',
      'projects',
    ],
    [
      { label: 'x', scopes: ['query:read'], projects: '*' },
      403,
      'permission_denied',
      'project_forbidden',
      'projects',
    ],
  ];
  for (const [body, status, type, code, attr] of cases) {
    const res = await api('POST', '/api/personal_api_keys/', narrow, body);
    assertError(t, res, status, type, code, JSON.stringify(body));
    t.equal((res.json as Json)['attr'], attr);
  }
  const mine = (await api('GET', '/api/personal_api_keys/', narrow)).json as { results: Json[] };
  t.same(
    mine.results.map((k) => k['label']).sort(),
    ['child', 'narrow'],
    'it manages itself and what it made',
  );
  const all = (await api('GET', '/api/personal_api_keys/', PERSONAL_API_KEY)).json as { results: Json[] };
  t.ok(
    all.results.some((k) => k['label'] === 'child'),
    'its maker manages the grandchild too',
  );
});

t.test('personal key bodies are validated', async (t) => {
  const ok = { label: 'v', scopes: ['query:read'], projects: [1] };
  const cases: [Json, string, string][] = [
    [{ scopes: ['query:read'], projects: [1] }, 'required', 'label'],
    [{ label: 'v', projects: [1] }, 'required', 'scopes'],
    [{ label: 'v', scopes: ['query:read'] }, 'required', 'projects'],
    [{ ...ok, label: '' }, 'invalid_input', 'label'],
    [{ ...ok, scopes: [] }, 'invalid_input', 'scopes'],
    [{ ...ok, scopes: 'query:read' }, 'invalid_input', 'scopes'],
    [{ ...ok, scopes: ['query:write'] }, 'invalid_input', 'scopes'],
    [{ ...ok, projects: 1 }, 'invalid_input', 'projects'],
    [{ ...ok, projects: ['1'] }, 'invalid_input', 'projects'],
    [{ ...ok, projects: [1.5] }, 'invalid_input', 'projects'],
    [{ ...ok, scoped_teams: [1] }, 'unknown_field', 'scoped_teams'],
    [{ ...ok, value: 'phx_chosen' }, 'unknown_field', 'value'],
  ];
  for (const [body, code, attr] of cases) {
    const res = await api('POST', '/api/personal_api_keys/', PERSONAL_API_KEY, body);
    assertError(t, res, 400, 'validation_error', code, JSON.stringify(body));
    t.equal((res.json as Json)['attr'], attr, `${JSON.stringify(body)}: attr`);
  }
});

t.test('a key reaching every project: unknown ids are 404, not 403', async (t) => {
  const { value } = await w.weir.catalog.createPersonalKey({
    label: 'operator',
    scopes: ['*'],
    projects: '*',
    createdBy: null,
  });
  const all = (await api('GET', '/api/projects/', value)).json as { count: number };
  t.equal(all.count, w.weir.catalog.listProjects().length, 'it lists every project');
  for (const path of [
    '/api/projects/987654/',
    '/api/projects/abc/',
    '/api/projects/-1/',
    '/api/environments/0/',
  ]) {
    assertError(t, await api('GET', path, value), 404, 'not_found', 'not_found', path);
  }
  const child = await createKey({ label: 'everything', scopes: ['query:read'], projects: '*' }, value);
  t.equal(child['projects'], '*', 'it can make another such key');
  const unknown = await api('POST', '/api/personal_api_keys/', value, {
    label: 'x',
    scopes: ['query:read'],
    projects: [987654],
  });
  assertError(
    t,
    unknown,
    400,
    'validation_error',
    'invalid_input',
    'a key for a project that does not exist',
  );
  const made = await createProject('by operator', value);
  t.ok(made['id'], 'it makes projects');
});

t.test('50 concurrent project creates and 20 key creates: all kept, distinct, and on disk', async (t) => {
  const [projects, keys] = await Promise.all([
    Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api('POST', '/api/projects/', PERSONAL_API_KEY, { name: `p${i}` }),
      ),
    ),
    Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api('POST', '/api/personal_api_keys/', PERSONAL_API_KEY, {
          label: `k${i}`,
          scopes: ['query:read'],
          projects: [1],
        }),
      ),
    ),
  ]);
  t.same([...new Set(projects.map((r) => r.status))], [201]);
  t.same([...new Set(keys.map((r) => r.status))], [201]);
  const ids = projects.map((r) => (r.json as Json)['id'] as number);
  t.equal(new Set(ids).size, 50, 'distinct project ids');
  t.equal(new Set(projects.map((r) => (r.json as Json)['api_token'])).size, 50, 'distinct project API keys');
  const keyIds = keys.map((r) => (r.json as Json)['id'] as string);
  t.equal(new Set(keyIds).size, 20, 'distinct key ids');

  const listed = (await api('GET', '/api/projects/', PERSONAL_API_KEY)).json as { results: Json[] };
  const reached = new Set(listed.results.map((p) => p['id']));
  t.ok(
    ids.every((id) => reached.has(id)),
    'the making key gained every one (no grant lost)',
  );

  // What a restart would read: the catalog reopened from its file.
  const reopened = await FileCatalog.open({
    dataDir: w.dataDir,
    bootstrapProjectApiKey: undefined,
    bootstrapPersonalApiKey: undefined,
  });
  t.equal(reopened.bootstrap, undefined, 'an existing catalog is read, not made again');
  for (const r of projects) {
    const p = r.json as Json;
    t.same(
      reopened.projectByApiToken(p['api_token'] as string)?.id,
      p['id'],
      `project ${String(p['id'])} on disk`,
    );
  }
  for (const r of keys) {
    const k = r.json as Json;
    t.equal(
      reopened.personalKeyByValue(k['value'] as string)?.id,
      k['id'],
      `key ${String(k['label'])} on disk`,
    );
  }
  const bootstrapKey = reopened.personalKeyByValue(PERSONAL_API_KEY);
  t.ok(
    ids.every((id) => bootstrapKey?.projects !== '*' && bootstrapKey?.projects.includes(id)),
    'the grants are on disk too',
  );
  t.same(
    reopened.listProjects().map((p) => p.id),
    w.weir.catalog.listProjects().map((p) => p.id),
    'the file holds exactly what the running catalog holds',
  );
});

t.test('catalog.json never holds a personal API key in clear', async (t) => {
  const made = await createKey({ label: 'secret', scopes: ['query:read'], projects: [1] });
  const text = readFileSync(join(w.dataDir, 'catalog.json'), 'utf8');
  t.notOk(text.includes(PERSONAL_API_KEY), 'the bootstrap key');
  t.notOk(text.includes(made['value'] as string), 'a key made over the API');
  t.notOk(text.includes((made['value'] as string).slice(4)), 'nor its random part');
  t.ok(text.includes(PROJECT_API_KEY), 'project API keys are public and kept so they can be shown');
});

t.test('PATCH /api/projects/{id}/ sets event_retention_days: whole days, or null for ever', async (t) => {
  const path = '/api/projects/1/';
  t.match(
    (await api('GET', path, PERSONAL_API_KEY)).json,
    { event_retention_days: null },
    'for ever at first',
  );
  t.match((await api('PATCH', path, PERSONAL_API_KEY, { event_retention_days: 30 })).json, {
    event_retention_days: 30,
  });
  t.match((await api('GET', path, PERSONAL_API_KEY)).json, { event_retention_days: 30 }, 'kept');
  for (const bad of [0, -1, 1.5, 'thirty', 36_501]) {
    const err = await api('PATCH', path, PERSONAL_API_KEY, { event_retention_days: bad });
    t.equal(err.status, 400, `refuses ${JSON.stringify(bad)}`);
    t.match(err.json, { code: 'invalid_input', attr: 'event_retention_days' });
  }
  t.match((await api('PATCH', path, PERSONAL_API_KEY, { event_retention_days: null })).json, {
    event_retention_days: null,
  });
});
