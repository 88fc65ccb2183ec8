/**
 * The query API over HTTP (SPEC §3): answers checked against what the dataset says in plain JavaScript or by
 * hand, the response shape, property and person semantics, deduplication of a retried event, variables of
 * every type, the auth matrix, and the errors of SPEC §1.
 */
import t from 'tap';
import { assertError } from '../helpers/capture-bodies.ts';
import {
  createKey,
  createProject,
  ok,
  queryApi,
  rawQuery,
  rows,
  type QueryBody,
} from '../helpers/query-api.ts';
import { countBy, seedDataset, type DatasetEvent } from '../helpers/query-dataset.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, post, request, startTestWeir, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const p2 = await createProject(w, 'Other team');
const p3 = await createProject(w, 'Third team');
const data = await seedDataset(w.weir.store, [1, p2, p3]);
const own = data.events.filter((e) => e.project === 1);
const generated = own.filter((e) => e.properties['generated'] === true);
const HAND = "properties.generated IS NULL AND distinct_id IN ('u1', 'u2', 'u3')";

t.equal(p2, 2, 'the second project is project 2 (the one the dataset marks SECRET)');

t.test('the response has the fields of SPEC §3, on both path forms', async (t) => {
  for (const prefix of ['projects', 'environments']) {
    const res = await queryApi(
      w,
      'SELECT event, count() AS n FROM events GROUP BY event ORDER BY event LIMIT 2',
      {
        prefix,
      },
    );
    t.equal(res.status, 200, prefix);
    t.match(res.headers.get('content-type'), /^application\/json/);
    const body = res.json as QueryBody;
    t.same(Object.keys(body).sort(), ['clickhouse', 'columns', 'hogql', 'results', 'timings', 'types']);
    t.same(body.columns, ['event', 'n']);
    t.same(body.types, ['String', 'UInt64']);
    t.equal(body.results.length, 2);
    t.equal(typeof body.results[0]![1], 'number', 'a count is a JSON number');
    t.match(body.hogql, /^SELECT event, count\(\) AS n FROM events GROUP BY event ORDER BY event LIMIT 2$/);
    t.match(body.clickhouse, /PREWHERE project_id = \{weir_project:UInt64\}/);
    t.match(body.clickhouse, /SETTINGS .*readonly = 1$/);
    t.ok(body.timings.length >= 3 && body.timings.every((x) => typeof x.k === 'string' && x.t >= 0));
  }
  const noSlash = await request(`${w.url}/api/projects/1/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'SELECT 1' } }),
  });
  t.equal(noSlash.status, 200, 'the trailing slash is optional');
  const get = await request(`${w.url}/api/projects/1/query/`, {
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
  });
  assertError(t, get, 405, 'method_not_allowed', 'method_not_allowed');
  t.equal(get.headers.get('allow'), 'POST');
});

t.test('hand-computed answers on the hand-written events', async (t) => {
  t.same(
    await rows(w, `SELECT event, count() AS n FROM events WHERE ${HAND} GROUP BY event ORDER BY event`),
    [
      ['$pageview', 6],
      ['purchase', 1],
      ['signed up', 2],
    ],
    'the retried purchase counts once',
  );
  t.same(
    await rows(
      w,
      `SELECT properties.$browser AS browser, count() AS n FROM events WHERE ${HAND} AND event = '$pageview' GROUP BY browser ORDER BY browser`,
    ),
    [
      ['Chrome', 3],
      ['Firefox', 1],
      ['Safari', 2],
    ],
  );
  t.same(
    await rows(
      w,
      `SELECT level, count() AS persons FROM (
         SELECT person_id, windowFunnel(86400)(timestamp, event = '$pageview', event = 'signed up') AS level
         FROM events WHERE ${HAND} GROUP BY person_id)
       GROUP BY level ORDER BY level`,
    ),
    [
      [1, 2],
      [2, 1],
    ],
    'u1 converts within a day; u2 signs up two days later; u3 never does',
  );
  t.same(
    await rows(
      w,
      `SELECT uniqExact(person_id) AS users, countIf(event = '$pageview') AS views FROM events WHERE ${HAND}`,
    ),
    [[3, 6]],
  );
});

t.test('answers on the generated events match the dataset computed in JavaScript', async (t) => {
  const G = "properties.generated = 'true'";
  t.same(
    await rows(w, `SELECT event, count() FROM events WHERE ${G} GROUP BY event ORDER BY event`),
    countBy(generated, (e) => e.event),
  );
  t.same(
    await rows(
      w,
      `SELECT toString(toDate(timestamp)) AS day, count() FROM events WHERE ${G} AND event = '$pageview' GROUP BY day ORDER BY day`,
    ),
    countBy(
      generated.filter((e) => e.event === '$pageview'),
      (e) => e.timestamp.slice(0, 10),
    ),
  );
  const browsers = new Map<string, Set<string>>();
  for (const e of generated) {
    const b = String(e.properties['$browser']);
    browsers.set(b, (browsers.get(b) ?? new Set()).add(e.personId));
  }
  t.same(
    await rows(
      w,
      `SELECT properties['$browser'] AS b, uniqExact(person_id) FROM events WHERE ${G} GROUP BY b ORDER BY b`,
    ),
    [...browsers].sort().map(([b, s]) => [b, s.size]),
  );
  const amount = generated.reduce(
    (sum, e) => sum + (typeof e.properties['amount'] === 'number' ? e.properties['amount'] : 0),
    0,
  );
  t.same(
    await rows(
      w,
      `SELECT sum(toInt64OrZero(properties.amount)) AS total FROM events WHERE ${G} AND event = 'purchase'`,
    ),
    [[amount]],
  );
  const active = (e: DatasetEvent): boolean => e.timestamp >= '2026-02-05';
  t.same(
    await rows(w, `SELECT count() FROM events WHERE ${G} AND timestamp >= {variables.since}`, {
      variables: { since: '2026-02-05' },
    }),
    [[generated.filter(active).length]],
    'a date given as a string variable compares with timestamp',
  );
});

t.test(
  'properties read as text: strings decoded, numbers as written, null and missing as NULL',
  async (t) => {
    t.same(
      await rows(
        w,
        `SELECT properties.n, properties['n'], toTypeName(properties.n) FROM events WHERE ${HAND} AND event = '$pageview' AND distinct_id IN ('u1', 'u2') ORDER BY timestamp`,
      ),
      [
        ['1', '1', 'Nullable(String)'],
        ['2', '2', 'Nullable(String)'],
        ['3', '3', 'Nullable(String)'],
        [null, null, 'Nullable(String)'],
        [null, null, 'Nullable(String)'],
      ],
    );
    t.same(
      await rows(
        w,
        `SELECT properties.note FROM events WHERE ${HAND} AND event = 'signed up' AND distinct_id = 'u2'`,
      ),
      [['it\'s "quoted" \\ é']],
    );
    t.same(
      await rows(
        w,
        `SELECT properties.$set.plan, properties['$set']['plan'] FROM events WHERE ${HAND} AND distinct_id = 'u3'`,
      ),
      [['x', 'x']],
      'a nested key by dots or brackets',
    );
    t.same(
      await rows(
        w,
        `SELECT properties.tags, length(JSONExtractArrayRaw(properties, 'tags')) FROM events WHERE ${HAND} AND event = 'purchase'`,
      ),
      [['["a","b"]', 2]],
      'an array reads as its JSON text',
    );
    t.same(
      await rows(
        w,
        `SELECT e.person.properties.email, person.properties.plan, person.id = person_id FROM events AS e WHERE ${HAND} AND event = 'purchase'`,
      ),
      [['u1@example.com', 'pro', true]],
      'person.properties on events is the person as the event saw it',
    );
  },
);

t.test('persons, distinct ids, groups and warnings: the newest version, deleted rows gone', async (t) => {
  t.same(
    await rows(
      w,
      'SELECT properties.email, properties.plan, is_identified FROM persons ORDER BY properties.email',
    ),
    [
      ['u1@example.com', 'enterprise', 1],
      ['u2@example.com', 'free', 0],
    ],
  );
  t.same(await rows(w, 'SELECT distinct_id FROM person_distinct_ids ORDER BY distinct_id'), [['u1'], ['u2']]);
  t.same(
    await rows(
      w,
      `SELECT p.properties.plan AS plan, count() AS n
       FROM events AS e
       INNER JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id
       INNER JOIN persons AS p ON pdi.person_id = p.id
       GROUP BY plan ORDER BY plan`,
    ),
    [
      ['enterprise', own.filter((e) => e.distinctId === 'u1').length],
      ['free', own.filter((e) => e.distinctId === 'u2').length],
    ],
  );
  t.same(
    await rows(
      w,
      'SELECT g.group_properties.name, g.properties.name, count() FROM events AS e INNER JOIN groups AS g ON e.$group_0 = g.group_key GROUP BY g.group_properties.name, g.properties.name',
    ),
    [['Acme', 'Acme', 2]],
  );
  t.same(await rows(w, 'SELECT type, details.reason FROM ingestion_warnings ORDER BY details.reason'), [
    ['event_dropped', 'x'],
    ['event_dropped', 'y'],
  ]);
});

t.test('a retried event stored twice is seen once', async (t) => {
  const uuid = data.retriedUuid(1);
  const stored = await w.rows<{ n: number }>(
    `SELECT toUInt32(count()) AS n FROM events WHERE uuid = '${uuid}'`,
  );
  t.equal(Number(stored[0]!.n), 2, 'the store holds both copies');
  t.same(await rows(w, `SELECT count() FROM events WHERE uuid = '${uuid}'`), [[1]]);
});

t.test('CTEs, subqueries, unions, window functions and arrays', async (t) => {
  t.same(
    await rows(
      w,
      `WITH firsts AS (SELECT person_id, min(timestamp) AS t FROM events WHERE ${HAND} GROUP BY person_id)
       SELECT count() FROM firsts WHERE t < '2026-01-02'`,
    ),
    [[2]],
  );
  t.same(
    await rows(
      w,
      `SELECT m, n FROM (
         SELECT 'views' AS m, count() AS n FROM events WHERE ${HAND} AND event = '$pageview'
         UNION ALL SELECT 'signups', count() FROM events WHERE ${HAND} AND event = 'signed up')
       ORDER BY m DESC`,
    ),
    [
      ['views', 6],
      ['signups', 2],
    ],
  );
  t.same(
    await rows(
      w,
      `SELECT distinct_id, event FROM (
         SELECT distinct_id, event, row_number() OVER (PARTITION BY distinct_id ORDER BY timestamp) AS rn
         FROM events WHERE ${HAND}) WHERE rn = 1 ORDER BY distinct_id`,
    ),
    [
      ['u1', '$pageview'],
      ['u2', '$pageview'],
      ['u3', '$pageview'],
    ],
  );
  t.same(
    await rows(
      w,
      `SELECT arrayMap(x -> x * 2, [1, 2]), tag FROM events ARRAY JOIN JSONExtractArrayRaw(properties, 'tags') AS tag WHERE ${HAND} ORDER BY tag`,
    ),
    [
      [[2, 4], '"a"'],
      [[2, 4], '"b"'],
    ],
  );
  t.same(
    await rows(
      w,
      `SELECT person_id IN (SELECT id FROM persons WHERE properties.plan = 'enterprise') AS ent, count() FROM events WHERE ${HAND} GROUP BY ent ORDER BY ent`,
    ),
    [
      [false, 4],
      [true, 5],
    ],
  );
});

t.test('column names: the alias, the column, or the expression as written; * expanded', async (t) => {
  const body = await ok(
    w,
    `SELECT e.event, count() AS n, max(e.timestamp), properties.$browser FROM events AS e WHERE ${HAND} GROUP BY e.event, properties.$browser LIMIT 1`,
  );
  t.same(body.columns, ['event', 'n', 'max(e.timestamp)', 'properties.$browser']);
  t.same(body.types, ['String', 'UInt64', "DateTime64(6, 'UTC')", 'Nullable(String)']);
  const star = await ok(w, 'SELECT * FROM persons LIMIT 1');
  t.same(star.columns, ['project_id', 'id', 'properties', 'is_identified', 'created_at']);
});

t.test('events captured over HTTP can be queried at once', async (t) => {
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({
      api_key: PROJECT_API_KEY,
      event: 'captured now',
      distinct_id: 'cap-1',
      properties: { $browser: 'Lynx' },
    }),
  );
  t.equal(res.status, 200);
  const seen = await waitFor(async () => {
    const r = await rows(w, "SELECT properties.$browser FROM events WHERE event = 'captured now'");
    return r.length > 0 ? r : undefined;
  });
  t.same(seen, [['Lynx']]);
});

t.test('variables of every type are bound as typed parameters', async (t) => {
  const cases: [string, unknown, unknown, string][] = [
    ['string', 'Chrome', 'Chrome', 'String'],
    ['integer', 42, 42, 'Int64'],
    ['negative integer', -7, -7, 'Int64'],
    ['float', 1.5, 1.5, 'Float64'],
    ['boolean', true, true, 'Bool'],
    ['null', null, null, 'Nullable(Nothing)'],
    ['list of strings', ['a', "b'c"], ['a', "b'c"], 'Array(String)'],
    ['list of integers', [1, 2], [1, 2], 'Array(Int64)'],
    ['list of numbers', [1, 2.5], [1, 2.5], 'Array(Float64)'],
    ['empty list', [], [], 'Array(Nothing)'],
    ['string carrying SQL', "x' OR 1=1 --", "x' OR 1=1 --", 'String'],
  ];
  for (const [label, value, expected, type] of cases) {
    const body = await ok(w, 'SELECT {variables.v} AS v, toTypeName({variables.v}) AS t', {
      variables: { v: value },
    });
    t.same(body.results, [[expected, type]], label);
    t.match(
      body.clickhouse,
      new RegExp(`\\{var_v:${type.replace(/[()]/g, '\\$&')}\\}`),
      `${label}: a parameter, not text`,
    );
  }
  const inlined = await ok(w, 'SELECT {variables.browser}, {variables.ids}', {
    variables: { browser: "it's", ids: [1, 2] },
  });
  t.equal(inlined.hogql, "SELECT 'it\\'s', [1, 2]", 'hogql shows the values inlined');
  t.same(
    await rows(
      w,
      `SELECT count() FROM events WHERE ${HAND} AND event = {variables.e} AND properties.$browser IN {variables.b} LIMIT {variables.n}`,
      {
        variables: { e: '$pageview', b: ['Chrome', 'Safari'], n: 10 },
      },
    ),
    [[5]],
    'in WHERE, IN and LIMIT',
  );
  t.same(
    await rows(w, 'SELECT {variables.browser}', {
      variables: { 'var-1': { code_name: 'browser', value: 'Edge', variableId: 'var-1' } },
    }),
    [['Edge']],
    "PostHog's shape: keyed by id, named by code_name",
  );
  t.same(
    await rows(w, `SELECT count() FROM events WHERE event = {variables.e}`, {
      variables: { e: "$pageview' OR '1'='1" },
    }),
    [[0]],
    'a value carrying SQL is only a value',
  );
});

t.test('variable errors', async (t) => {
  const missing = await queryApi(w, 'SELECT {variables.browser}, {variables.os}', { variables: { os: 'x' } });
  assertError(t, missing, 400, 'validation_error', 'missing_variable');
  t.match(missing.json, { detail: "Required variable(s) 'browser' not provided", attr: 'variables' });
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { variables: { stray: 1 } }),
    400,
    'validation_error',
    'unknown_variable',
  );
  for (const value of [{ a: 1 }, [1, 'a'], [[1]], [{}]]) {
    assertError(
      t,
      await queryApi(w, 'SELECT {variables.v}', { variables: { v: value } }),
      400,
      'validation_error',
      'invalid_variable',
      JSON.stringify(value),
    );
  }
  assertError(
    t,
    await rawQuery(w, { query: { kind: 'HogQLQuery', query: 'SELECT 1', variables: [1] } }),
    400,
    'validation_error',
    'invalid_variable',
  );
});

t.test('query errors say what and where', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['SELECT count( FROM events', 'invalid_query', /^Syntax error: .*\(line 1, column \d+\)$/],
    [
      'SELECT 1 FROM evnets',
      'invalid_query',
      /^Unknown table 'evnets'; the tables are events, persons, person_distinct_ids, groups, ingestion_warnings, raw_groups, sessions \(line 1, column 15\)$/,
    ],
    ['SELECT 1 FROM Events', 'invalid_query', /did you mean 'events'\?/],
    ['SELECT\n  evnt FROM events', 'invalid_query', /^Unknown column 'evnt'.*\(line 2, column 3\)$/],
    [
      'SELECT nosuchfn(event) FROM events',
      'invalid_query',
      /^Unknown function 'nosuchfn'.*\(line 1, column 8\)$/,
    ],
    ['SELECT event.x FROM events', 'invalid_query', /'event' is a String, not JSON/],
    [
      "SELECT toInt64('abc')",
      'invalid_query',
      /^ClickHouse refused the query: Cannot parse string 'abc' as Int64.*\(CANNOT_PARSE_TEXT\)$/,
    ],
    [
      'SELECT event + 1 FROM events',
      'invalid_query',
      /^ClickHouse refused the query: .*\(ILLEGAL_TYPE_OF_ARGUMENT|NO_COMMON_TYPE\)$/,
    ],
    ['SELECT arrayJoin(range(60000))', 'query_limit_exceeded', /more than 50000 rows/],
    [
      'SELECT number FROM (SELECT arrayJoin(range(60000)) AS number) ORDER BY number LIMIT 55000',
      'query_limit_exceeded',
      /more than 50000 rows/,
    ],
  ];
  for (const [sql, code, detail] of cases) {
    const res = await queryApi(w, sql);
    assertError(t, res, 400, 'validation_error', code, sql);
    t.match((res.json as { detail: string }).detail, detail, sql);
    t.equal((res.json as { attr: string }).attr, 'query', `${sql}: attr`);
  }
});

t.test('request body errors', async (t) => {
  assertError(t, await rawQuery(w, '{'), 400, 'validation_error', 'invalid_payload');
  assertError(t, await rawQuery(w, {}), 400, 'validation_error', 'required');
  assertError(t, await rawQuery(w, { query: 'SELECT 1' }), 400, 'validation_error', 'invalid_input');
  assertError(
    t,
    await rawQuery(w, { query: { kind: 'TrendsQuery', query: 'SELECT 1' } }),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(t, await rawQuery(w, { query: { kind: 'HogQLQuery' } }), 400, 'validation_error', 'required');
  assertError(
    t,
    await rawQuery(w, { query: { kind: 'HogQLQuery', query: 7 } }),
    400,
    'validation_error',
    'invalid_input',
  );
  const unknown = await rawQuery(w, { query: { kind: 'HogQLQuery', query: 'SELECT 1', filters: {} } });
  assertError(t, unknown, 400, 'validation_error', 'unknown_field');
  t.equal((unknown.json as { attr: string }).attr, 'query.filters');
  assertError(
    t,
    await rawQuery(w, { query: { kind: 'HogQLQuery', query: 'SELECT 1' }, async: true }),
    400,
    'validation_error',
    'unknown_field',
  );
  t.equal(
    (
      await rawQuery(w, {
        query: { kind: 'HogQLQuery', query: 'SELECT 1' },
        client_query_id: 'x',
        refresh: 'blocking',
      })
    ).status,
    200,
    'PostHog request fields are taken',
  );
});

t.test('auth: no key, unknown key, revoked key, no query:read, another project', async (t) => {
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: '' }),
    401,
    'authentication_error',
    'not_authenticated',
  );
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: 'phx_not_a_key' }),
    401,
    'authentication_error',
    'authentication_failed',
  );
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: PROJECT_API_KEY }),
    401,
    'authentication_error',
    'authentication_failed',
  );

  const reader = await createKey(w, { scopes: ['query:read'], projects: [1] });
  t.equal(
    (await queryApi(w, 'SELECT 1', { key: reader.value })).status,
    200,
    'a query:read key on the project',
  );
  const revoke = await request(`${w.url}/api/personal_api_keys/${reader.id}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
  });
  t.equal(revoke.status, 204);
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: reader.value }),
    401,
    'authentication_error',
    'authentication_failed',
  );

  const noScope = await createKey(w, { scopes: ['endpoint:read'], projects: [1] });
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: noScope.value }),
    403,
    'permission_denied',
    'missing_scope',
  );

  const other = await createKey(w, { scopes: ['query:read'], projects: [p3] });
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { key: other.value }),
    403,
    'permission_denied',
    'project_forbidden',
  );
  const theirs = await ok(
    w,
    "SELECT count() FROM events WHERE properties.generated IS NULL AND event = '$pageview'",
    {
      key: other.value,
      project: p3,
    },
  );
  t.same(theirs.results, [[6]], 'the same key answers for its own project');
  assertError(
    t,
    await queryApi(w, 'SELECT 1', { project: 99 }),
    403,
    'permission_denied',
    'project_forbidden',
    'a project the key does not reach, existing or not',
  );
});
