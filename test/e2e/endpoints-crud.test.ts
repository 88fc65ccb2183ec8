/**
 * Endpoints' CRUD over HTTP (SPEC §4) on both path forms: the fields of an endpoint, versions (a changed
 * query makes a new one, other fields change in place), the name rule and uniqueness under concurrent
 * creates, queries and variable declarations checked at create and update, and the auth matrix.
 */
import t from 'tap';
import { createKey, createProject } from '../helpers/query-api.ts';
import {
  createEndpoint,
  endpointsApi,
  hogql,
  refused,
  refusesStrangers,
  type EndpointBody,
} from '../helpers/endpoints.ts';
import { startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());
const p2 = await createProject(w, 'Other team');

const ENDPOINT_KEYS = [
  'cache_age_seconds',
  'created_at',
  'current_version',
  'description',
  'endpoint_path',
  'id',
  'is_active',
  'is_materialized',
  'materialization',
  'materialization_bucket',
  'name',
  'query',
  'sync_frequency',
  'updated_at',
  'variables',
  'versions_count',
];

t.test('create answers 201 with every field of SPEC §4, version 1 and the defaults', async (t) => {
  const before = Date.now();
  const res = await endpointsApi(w, 'POST', '', {
    name: 'daily_events',
    query: hogql('SELECT event, count() AS n FROM events WHERE event = {variables.event} GROUP BY event'),
    variables: { event: { type: 'string' } },
  });
  t.equal(res.status, 201);
  const e = res.json as EndpointBody;
  t.same(Object.keys(e).sort(), ENDPOINT_KEYS);
  t.match(e, {
    id: /^[0-9a-f-]{36}$/,
    name: 'daily_events',
    query: { kind: 'HogQLQuery', query: /^SELECT event/ },
    description: '',
    variables: { event: { type: 'string' } },
    cache_age_seconds: 300,
    is_active: true,
    is_materialized: false,
    sync_frequency: '24hour',
    materialization_bucket: 'day',
    current_version: 1,
    versions_count: 1,
    endpoint_path: '/api/environments/1/endpoints/daily_events/run',
  });
  t.same(e.materialization, {
    status: 'none',
    can_materialize: true,
    reason: null,
    last_materialized_at: null,
    rows: null,
    bytes: null,
    error: null,
  });
  t.ok(Date.parse(e.created_at) >= before - 1000 && e.created_at === e.updated_at);

  const full = await createEndpoint(
    w,
    {
      name: 'Full-one_2',
      query: hogql('SELECT count() FROM events WHERE properties.$browser LIKE {variables.b}'),
      description: 'Counts',
      variables: {},
      cache_age_seconds: 0,
      is_active: false,
      is_materialized: false,
      sync_frequency: '1hour',
    },
    { prefix: 'environments' },
  );
  t.match(full, {
    description: 'Counts',
    variables: {},
    cache_age_seconds: 0,
    is_active: false,
    sync_frequency: '1hour',
    materialization: { can_materialize: false, reason: /LIKE/ },
  });
});

t.test('every route on both path forms, with or without the trailing slash', async (t) => {
  await createEndpoint(w, { name: 'forms', query: hogql('SELECT 1 AS one') });
  for (const prefix of ['projects', 'environments']) {
    const o = { prefix };
    const list = await endpointsApi(w, 'GET', '', undefined, o);
    t.equal(list.status, 200, `${prefix}: list`);
    const body = list.json as { results: EndpointBody[]; count: number };
    t.equal(body.count, body.results.length);
    t.ok(body.results.some((e) => e.name === 'forms'));
    t.equal((await endpointsApi(w, 'GET', 'forms/', undefined, o)).status, 200, `${prefix}: get`);
    t.equal((await endpointsApi(w, 'GET', 'forms', undefined, o)).status, 200, `${prefix}: get, no slash`);
    t.equal((await endpointsApi(w, 'GET', 'forms/?version=1', undefined, o)).status, 200);
    t.equal(
      (await endpointsApi(w, 'GET', 'forms/versions/', undefined, o)).status,
      200,
      `${prefix}: versions`,
    );
    t.equal((await endpointsApi(w, 'GET', 'forms/versions', undefined, o)).status, 200);
    t.equal(
      (await endpointsApi(w, 'PATCH', 'forms/', { description: prefix }, o)).status,
      200,
      `${prefix}: patch`,
    );
    const made = await endpointsApi(w, 'POST', '', { name: `made_${prefix}`, query: hogql('SELECT 2') }, o);
    t.equal(made.status, 201, `${prefix}: create`);
    t.equal(
      (await endpointsApi(w, 'DELETE', `made_${prefix}/`, undefined, o)).status,
      204,
      `${prefix}: delete`,
    );
    t.equal((await endpointsApi(w, 'DELETE', `made_${prefix}`, undefined, o)).status, 404);
  }
  const put = await endpointsApi(w, 'PUT', 'forms/', { description: 'x' });
  refused(t, put, 405, 'method_not_allowed', null);
  t.equal(put.headers.get('allow'), 'GET, PATCH, DELETE');
  refused(t, await endpointsApi(w, 'DELETE', ''), 405, 'method_not_allowed', null, 'DELETE on the list');
});

t.test('versions: a changed query makes N+1; other fields change in place', async (t) => {
  const v1 = await createEndpoint(w, {
    name: 'versioned',
    query: hogql('SELECT {variables.a} AS a, {variables.b} AS b'),
    variables: { a: { type: 'number' }, b: { type: 'string' } },
  });
  const described = await endpointsApi(w, 'PATCH', 'versioned/', { description: 'now described' });
  t.match(described.json, { description: 'now described', current_version: 1, versions_count: 1 });
  t.ok((described.json as EndpointBody).updated_at >= v1.updated_at);

  const same = await endpointsApi(w, 'PATCH', 'versioned/', { query: v1.query });
  t.match(same.json, { current_version: 1 }, 'the same query makes no version');

  const v2 = await endpointsApi(w, 'PATCH', 'versioned/', { query: hogql('SELECT {variables.a} * 2 AS a') });
  t.equal(v2.status, 200);
  t.match(
    v2.json,
    {
      current_version: 2,
      versions_count: 2,
      query: { query: 'SELECT {variables.a} * 2 AS a' },
      variables: { a: { type: 'number' } },
      description: 'now described',
      id: v1.id,
    },
    'the new query keeps the declarations of the variables it still uses',
  );

  const v3 = await endpointsApi(w, 'PATCH', 'versioned/', { variables: { a: { type: 'string' } } });
  t.match(
    v3.json,
    { current_version: 3, variables: { a: { type: 'string' } } },
    'new declarations: a new version',
  );

  const shown = await endpointsApi(w, 'GET', 'versioned/?version=1');
  t.match(shown.json, {
    query: v1.query,
    variables: v1.variables,
    current_version: 3,
    versions_count: 3,
  });
  const versions = await endpointsApi(w, 'GET', 'versioned/versions/');
  const list = versions.json as { results: Record<string, unknown>[]; count: number };
  t.equal(list.count, 3);
  t.same(
    list.results.map((v) => v['version']),
    [3, 2, 1],
    'newest first',
  );
  t.same(Object.keys(list.results[0]!).sort(), [
    'created_at',
    'is_active',
    'is_materialized',
    'materialization',
    'query',
    'variables',
    'version',
  ]);
  t.equal(
    list.results[2]!['query'] && (list.results[2]!['query'] as { query: string }).query,
    v1.query.query,
  );

  refused(t, await endpointsApi(w, 'GET', 'versioned/?version=9'), 404, 'not_found', 'version');
  refused(t, await endpointsApi(w, 'GET', 'versioned/?version=x'), 400, 'invalid_input', 'version');
  refused(t, await endpointsApi(w, 'GET', 'versioned/?version=0'), 400, 'invalid_input', 'version');
});

t.test("PATCH ?version=N changes that version's flags only", async (t) => {
  await createEndpoint(w, { name: 'flags', query: hogql('SELECT 1') });
  await endpointsApi(w, 'PATCH', 'flags/', { query: hogql('SELECT 2') });
  const off = await endpointsApi(w, 'PATCH', 'flags/?version=1', { is_active: false });
  t.equal(off.status, 200);
  t.match(off.json, { is_active: false, query: { query: 'SELECT 1' }, current_version: 2 });
  t.match((await endpointsApi(w, 'GET', 'flags/')).json, { is_active: true }, 'the endpoint stays active');
  t.match((await endpointsApi(w, 'GET', 'flags/?version=1')).json, { is_active: false });
  t.match((await endpointsApi(w, 'GET', 'flags/?version=2')).json, { is_active: true });
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'flags/?version=1', { description: 'x' }),
    400,
    'unknown_field',
    'description',
    'an endpoint field with ?version',
  );
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'flags/?version=1', { query: hogql('SELECT 3') }),
    400,
    'unknown_field',
    'query',
    'a query with ?version',
  );
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'flags/?version=7', { is_active: false }),
    404,
    'not_found',
    'version',
  );
  const materialized = await endpointsApi(w, 'PATCH', 'flags/?version=2', { is_materialized: true });
  t.equal(materialized.status, 200, 'a version that can be materialized is');
  t.match(materialized.json, { is_materialized: true, materialization: { can_materialize: true } });
});

t.test('names: the rule of SPEC §4, unique in a project, one winner of concurrent creates', async (t) => {
  for (const name of ['', '1abc', '_a', 'a b', 'a.b', 'a/b', 'é', 'a'.repeat(129), 42]) {
    refused(
      t,
      await endpointsApi(w, 'POST', '', { name, query: hogql('SELECT 1') }),
      400,
      'invalid_input',
      'name',
      `name ${JSON.stringify(name).slice(0, 20)}`,
    );
  }
  t.equal(
    (await endpointsApi(w, 'POST', '', { name: `a${'b'.repeat(127)}`, query: hogql('SELECT 1') })).status,
    201,
  );
  await createEndpoint(w, { name: 'taken', query: hogql('SELECT 1') });
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'taken', query: hogql('SELECT 2') }),
    400,
    'endpoint_exists',
    'name',
  );
  t.equal(
    (await endpointsApi(w, 'POST', '', { name: 'taken', query: hogql('SELECT 2') }, { project: p2 })).status,
    201,
    'the same name in another project',
  );
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'flags/', { name: 'taken' }),
    400,
    'endpoint_exists',
    'name',
    'rename onto a name',
  );

  const racing = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      endpointsApi(
        w,
        'POST',
        '',
        { name: 'raced', query: hogql(`SELECT ${i}`) },
        {
          prefix: i % 2 ? 'projects' : 'environments',
        },
      ),
    ),
  );
  t.same(
    racing.map((r) => r.status).sort(),
    [201, ...Array<number>(11).fill(400)],
    'exactly one of 12 concurrent creates wins',
  );
  for (const r of racing.filter((x) => x.status === 400))
    refused(t, r, 400, 'endpoint_exists', 'name', 'a loser');

  const renamed = await endpointsApi(w, 'PATCH', 'raced/', { name: 'renamed' });
  t.match(renamed.json, { name: 'renamed', endpoint_path: '/api/environments/1/endpoints/renamed/run' });
  t.equal((await endpointsApi(w, 'GET', 'raced/')).status, 404);
  t.equal((await endpointsApi(w, 'DELETE', 'renamed/')).status, 204);
  t.equal(
    (await endpointsApi(w, 'POST', '', { name: 'renamed', query: hogql('SELECT 1') })).status,
    201,
    'a deleted name is free',
  );
});

t.test('the query and the variables are checked at create and update', async (t) => {
  const bad = await endpointsApi(w, 'POST', '', { name: 'bad', query: hogql('SELECT FROM events WHERE') });
  refused(t, bad, 400, 'invalid_query', 'query', 'syntax');
  t.match((bad.json as { detail: string }).detail, /^Syntax error: .*line 1, column \d+/);
  const unknown = await endpointsApi(w, 'POST', '', { name: 'bad', query: hogql('SELECT nope FROM events') });
  refused(t, unknown, 400, 'invalid_query', 'query', 'unknown column');
  t.match((unknown.json as { detail: string }).detail, /nope/);
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'bad', query: hogql('SELECT * FROM generateRandom()') }),
    400,
    'invalid_query',
    'query',
    'table function',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'bad', query: hogql('SELECT nope()') }),
    400,
    'invalid_query',
    'query',
    'unknown function',
  );

  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'bad',
      query: hogql("SELECT '{variables.x}'"),
      variables: { x: { type: 'string' } },
    }),
    400,
    'invalid_variables',
    'variables.x',
    'a declaration without a placeholder (a string is not one)',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'bad',
      query: hogql('SELECT {variables.x}'),
      variables: { x: { type: 'text' } },
    }),
    400,
    'invalid_variables',
    'variables.x',
    'an unknown type',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'bad',
      query: hogql('SELECT {variables.x}'),
      variables: { x: 'string' },
    }),
    400,
    'invalid_variables',
    'variables.x',
    'a declaration that is not an object',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'bad',
      query: hogql('SELECT {variables.x}'),
      variables: { x: { type: 'string', default: 'a' } },
    }),
    400,
    'invalid_variables',
    'variables.x',
    'a declaration with more than a type',
  );
  t.equal(
    (await endpointsApi(w, 'POST', '', { name: 'undeclared', query: hogql('SELECT {variables.x} AS x') }))
      .status,
    201,
    'a placeholder needs no declaration: its value types it',
  );

  await createEndpoint(w, { name: 'checked', query: hogql('SELECT 1') });
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'checked/', { query: hogql('SELEC 1') }),
    400,
    'invalid_query',
    'query',
    'update',
  );
  refused(
    t,
    await endpointsApi(w, 'PATCH', 'checked/', { variables: { y: { type: 'number' } } }),
    400,
    'invalid_variables',
    'variables.y',
    'update: a declaration without a placeholder',
  );
  t.match(
    (await endpointsApi(w, 'GET', 'checked/')).json,
    { current_version: 1 },
    'a refused update changes nothing',
  );
});

t.test('body fields: required, typed, unknown ones refused', async (t) => {
  const q = hogql('SELECT 1');
  refused(t, await endpointsApi(w, 'POST', '', { query: q }), 400, 'required', 'name');
  refused(t, await endpointsApi(w, 'POST', '', { name: 'x' }), 400, 'required', 'query');
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, nmae: 'typo' }),
    400,
    'unknown_field',
    'nmae',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, id: 'mine' }),
    400,
    'unknown_field',
    'id',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: 'SELECT 1' }),
    400,
    'invalid_input',
    'query',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: { kind: 'TrendsQuery', series: [] } }),
    400,
    'invalid_query',
    'query.series',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: { kind: 'PathsQuery' } }),
    400,
    'invalid_input',
    'query.kind',
    'an insight',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: { kind: 'HogQLQuery' } }),
    400,
    'required',
    'query.query',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: { ...q, values: {} } }),
    400,
    'unknown_field',
    'query.values',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, cache_age_seconds: -1 }),
    400,
    'invalid_input',
    'cache_age_seconds',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, cache_age_seconds: 1.5 }),
    400,
    'invalid_input',
    'cache_age_seconds',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, is_active: 'yes' }),
    400,
    'invalid_input',
    'is_active',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, sync_frequency: '2hour' }),
    400,
    'invalid_input',
    'sync_frequency',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, materialization_bucket: 'minute' }),
    400,
    'invalid_input',
    'materialization_bucket',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', { name: 'x', query: q, description: 5 }),
    400,
    'invalid_input',
    'description',
  );
  refused(
    t,
    await endpointsApi(w, 'POST', '', {
      name: 'x',
      query: hogql('SELECT count() FROM events WHERE event LIKE {variables.e}'),
      is_materialized: true,
    }),
    400,
    'cannot_materialize',
    'is_materialized',
  );
  refused(t, await endpointsApi(w, 'POST', '', '{"name":'), 400, 'invalid_payload', null);
  refused(t, await endpointsApi(w, 'POST', '', [1]), 400, 'invalid_payload', null);
  t.equal((await endpointsApi(w, 'GET', 'x/')).status, 404, 'nothing was made');
});

t.test('auth: no key, unknown key, another project, a key without the scope', async (t) => {
  await createEndpoint(w, { name: 'guarded', query: hogql('SELECT 1') });
  const reader = await createKey(w, { scopes: ['endpoint:read'], projects: [1] });
  const writer = await createKey(w, { scopes: ['endpoint:write'], projects: [1] });
  const queryOnly = await createKey(w, { scopes: ['query:read'], projects: [1] });
  const elsewhere = await createKey(w, { scopes: ['*'], projects: [p2] });
  const routes: [string, string, unknown, 'endpoint:read' | 'endpoint:write'][] = [
    ['GET', '', undefined, 'endpoint:read'],
    ['POST', '', { name: 'by_key', query: hogql('SELECT 1') }, 'endpoint:write'],
    ['GET', 'guarded/', undefined, 'endpoint:read'],
    ['PATCH', 'guarded/', { description: 'x' }, 'endpoint:write'],
    ['GET', 'guarded/versions/', undefined, 'endpoint:read'],
    ['DELETE', 'nothing_here/', undefined, 'endpoint:write'],
  ];
  for (const prefix of ['projects', 'environments']) {
    for (const [method, path, body, scope] of routes) {
      const label = `${prefix} ${method} ${path}`;
      const call = (key: string) => endpointsApi(w, method, path, body, { prefix, key });
      const none = await refusesStrangers(t, call, elsewhere.value, label);
      t.equal(none.headers.get('www-authenticate'), 'Bearer realm="weir"');
      refused(t, await call(queryOnly.value), 403, 'missing_scope', null, `${label}: query:read only`);
      const other = scope === 'endpoint:read' ? writer : reader;
      refused(t, await call(other.value), 403, 'missing_scope', null, `${label}: the other endpoint scope`);
    }
  }
  t.equal((await endpointsApi(w, 'GET', 'guarded/', undefined, { key: reader.value })).status, 200);
  t.equal(
    (
      await endpointsApi(
        w,
        'POST',
        '',
        { name: 'by_writer', query: hogql('SELECT 1') },
        { key: writer.value },
      )
    ).status,
    201,
  );
  refused(
    t,
    await endpointsApi(w, 'GET', 'guarded/', undefined, { project: 999 }),
    403,
    'project_forbidden',
    null,
    'a project the key does not reach, existing or not',
  );
  const theirs = await endpointsApi(w, 'GET', '', undefined, { project: p2 });
  t.notOk(
    (theirs.json as { results: EndpointBody[] }).results.some((e) => e.name === 'guarded'),
    "a project's list holds only its own endpoints",
  );
});

t.test('If-Match: a change from a stale read is 409 endpoint_changed and changes nothing', async (t) => {
  const made = await endpointsApi(w, 'POST', '', { name: 'etagged', query: hogql('SELECT 1 AS n') });
  const first = made.headers.get('etag')!;
  t.match(first, /^"[\w-]+"$/);
  t.equal((await endpointsApi(w, 'GET', 'etagged/')).headers.get('etag'), first, 'GET answers the same');
  const withTag = (tag: string): { headers: Record<string, string> } => ({
    headers: { 'if-match': tag },
  });
  const changed = await endpointsApi(w, 'PATCH', 'etagged/', { description: 'one' }, withTag(first));
  t.equal(changed.status, 200, 'the ETag read is the current one');
  const second = changed.headers.get('etag')!;
  t.not(second, first, 'a change of a field changes the ETag');
  const stale = await endpointsApi(w, 'PATCH', 'etagged/', { description: 'two' }, withTag(first));
  t.equal(stale.status, 409);
  t.match(stale.json, { type: 'conflict', code: 'endpoint_changed', attr: 'If-Match' });
  t.equal(((await endpointsApi(w, 'GET', 'etagged/')).json as EndpointBody).description, 'one', 'unchanged');
  const version = await endpointsApi(w, 'PATCH', 'etagged/?version=1', { is_active: true }, withTag(first));
  t.equal(version.status, 409, 'a version PATCH too');
  t.equal((await endpointsApi(w, 'PATCH', 'etagged/', { description: 'x' }, withTag('*'))).status, 200);
  const gone = await endpointsApi(w, 'DELETE', 'etagged/', undefined, withTag(second));
  t.equal(gone.status, 409, 'a delete from a stale read');
  t.equal((await endpointsApi(w, 'GET', 'etagged/')).status, 200, 'deleted nothing');
  const now = (await endpointsApi(w, 'GET', 'etagged/')).headers.get('etag')!;
  t.equal((await endpointsApi(w, 'DELETE', 'etagged/', undefined, withTag(now))).status, 204);
});
