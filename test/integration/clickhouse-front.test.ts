/**
 * The ClickHouse front (test/clickhouse-front/, test-only) through the real `@clickhouse/client`: what the
 * server store will ask of a ClickHouse server over HTTP. With `WEIR_TEST_CLICKHOUSE_URL` set, the same
 * assertions run against that server instead, which is how the front is checked against the real thing.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { clickHouseForTest } from '../clickhouse-front/start.ts';

const PASSWORD = 'front-secret';
const ch = await clickHouseForTest({ password: PASSWORD });
/** The errors asserted on would be logged by the client too. */
const quiet = { log: { level: ClickHouseLogLevel.OFF } };
const credentials = { ...quiet, ...(ch.external ? {} : { password: PASSWORD }) };
const DB = `weir_front_test_${process.pid}_${Date.now()}`;

const admin = createClient({ url: ch.url, ...credentials });
await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${DB}` });
/** Every test's client: its statements run in DB (the `database` URL parameter). */
const client = createClient({ url: ch.url, ...credentials, database: DB });
t.teardown(async () => {
  await client.close();
  // A front's data directory goes with it; a real server keeps what the tests made unless it is dropped.
  if (ch.external) await admin.command({ query: `DROP DATABASE IF EXISTS ${DB}` });
  await admin.close();
  await ch.stop();
});

/** The server's URL without the credentials it may carry (they would override a client's own). */
function bare(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.toString();
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

const ROWS = [
  { id: 1, name: 'alpha', ts: '2026-11-01 10:00:00.123', tags: ['a', 'b'] },
  { id: 2, name: "o'brien\tx", ts: '2026-11-02 11:30:00.000', tags: [] },
  { id: 3, name: 'gamma', ts: '2026-11-03 12:45:59.999', tags: ['c'] },
];

t.test('ping: the client and GET /ping', async (t) => {
  const ping = await client.ping();
  t.equal(ping.success, true);
  const res = await fetch(new URL('/ping', bare(ch.url)));
  t.equal(res.status, 200);
  t.equal(await res.text(), 'Ok.\n');
});

t.test('DDL through command(), rows through insert() as JSONEachRow and JSONCompactEachRow', async (t) => {
  await client.command({
    query: `CREATE TABLE events (id UInt64, name String, ts DateTime64(3, 'UTC'), tags Array(String))
            ENGINE = MergeTree ORDER BY id`,
  });
  await client.insert({ table: 'events', values: ROWS.slice(0, 2), format: 'JSONEachRow' });
  const r = ROWS[2]!;
  await client.insert({
    table: 'events',
    values: [[r.tags, r.ts, r.name, r.id]],
    format: 'JSONCompactEachRow',
    columns: ['tags', 'ts', 'name', 'id'],
  });
  await client.command({ query: `ALTER TABLE events ADD COLUMN IF NOT EXISTS note String DEFAULT 'n'` });
  await client.command({ query: 'OPTIMIZE TABLE events FINAL' });
  const rs = await client.query({
    query: 'SELECT id, name, ts, tags, note FROM events ORDER BY id',
    format: 'JSONEachRow',
  });
  t.same(
    await rs.json(),
    ROWS.map((row) => ({ ...row, note: 'n' })),
  );
  const tables = await client.query({
    query: 'SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name',
    format: 'JSONEachRow',
  });
  t.same(await tables.json(), [{ name: 'events' }], 'the database parameter chose the database');
});

const PARAM_QUERY = `SELECT id, name FROM events
  WHERE name != {skip:String} AND id <= {max:UInt64} AND ts >= {from:DateTime64(3, 'UTC')}
    AND hasAny(tags, {tags:Array(String)}) = {any:UInt8}
  ORDER BY id`;
const PARAMS = {
  skip: "o'brien\tx",
  max: 3,
  from: new Date('2026-11-01T10:00:00.123Z'),
  tags: ['a', 'c', "it's"],
  any: 1,
};

t.test('query() in each format, with String, UInt64, DateTime64 and Array(String) parameters', async (t) => {
  const expected = [
    [1, 'alpha'],
    [3, 'gamma'],
  ];
  const json = await client.query({ query: PARAM_QUERY, query_params: PARAMS, format: 'JSON' });
  const body = await json.json<{ id: number; name: string }>();
  t.same(body.data, [
    { id: 1, name: 'alpha' },
    { id: 3, name: 'gamma' },
  ]);
  t.same(body.meta, [
    { name: 'id', type: 'UInt64' },
    { name: 'name', type: 'String' },
  ]);
  t.equal(body.rows, 2);

  const eachRow = await client.query({ query: PARAM_QUERY, query_params: PARAMS, format: 'JSONEachRow' });
  t.same(await eachRow.json(), [
    { id: 1, name: 'alpha' },
    { id: 3, name: 'gamma' },
  ]);

  const withNames = await client.query({
    query: PARAM_QUERY,
    query_params: PARAMS,
    format: 'JSONCompactEachRowWithNamesAndTypes',
  });
  t.same(await withNames.json(), [['id', 'name'], ['UInt64', 'String'], ...expected]);

  const compact = await client.query({ query: PARAM_QUERY, query_params: PARAMS, format: 'JSONCompact' });
  t.same((await compact.json<unknown[]>()).data, expected);

  const tsv = await client.query({ query: PARAM_QUERY, query_params: PARAMS, format: 'TabSeparated' });
  t.equal(await tsv.text(), '1\talpha\n3\tgamma\n');

  const csv = await client.query({ query: PARAM_QUERY, query_params: PARAMS, format: 'CSV' });
  t.equal(await csv.text(), '1,"alpha"\n3,"gamma"\n');

  // The escaped string parameter is read back exactly.
  const odd = await client.query({
    query: 'SELECT id FROM events WHERE name = {name:String}',
    query_params: { name: "o'brien\tx" },
    format: 'JSONEachRow',
  });
  t.same(await odd.json(), [{ id: 2 }]);
});

t.test('a UInt64 parameter beyond 2^53, given as a bigint, arrives exactly', async (t) => {
  const n = 2n ** 53n + 1n;
  const rs = await client.query({
    query: 'SELECT toString({n:UInt64}) AS s, {n:UInt64} AS n',
    query_params: { n },
    format: 'JSONEachRow',
    clickhouse_settings: { output_format_json_quote_64bit_integers: 1 },
  });
  t.same(await rs.json(), [{ s: '9007199254740993', n: '9007199254740993' }]);
});

t.test('errors come as ClickHouseError with the code and its name', async (t) => {
  const unknown = await rejection(
    client.query({ query: 'SELECT * FROM no_such_table', format: 'JSONEachRow' }),
  );
  t.ok(unknown instanceof ClickHouseError, 'a ClickHouseError');
  t.match(unknown, { code: '60', type: 'UNKNOWN_TABLE' });
  const syntax = await rejection(client.command({ query: 'SELEC 1' }));
  t.match(syntax, { code: '62', type: 'SYNTAX_ERROR' });
  const param = await rejection(
    client.query({ query: 'SELECT {x:UInt8}', query_params: { x: 'abc' }, format: 'JSONEachRow' }),
  );
  t.match(param, { code: '457', type: 'BAD_QUERY_PARAMETER' });
  // A statement that fails part-way leaves nothing in the next one's answer.
  const partway = await rejection(
    client.query({
      query: 'SELECT throwIf(number = 3) AS x FROM numbers(10) SETTINGS max_block_size = 1',
      format: 'JSONCompactEachRowWithNamesAndTypes',
    }),
  );
  t.match(partway, { code: '395', type: 'FUNCTION_THROW_IF_VALUE_IS_NON_ZERO' });
  const next = await client.query({ query: 'SELECT 42 AS x', format: 'JSONEachRow' });
  t.same(await next.json(), [{ x: 42 }]);
  const timeout = await rejection(
    client.query({
      query: 'SELECT sleep(0.5)',
      format: 'JSONEachRow',
      clickhouse_settings: { max_execution_time: 0.2 },
    }),
  );
  t.match(timeout, { code: '159', type: 'TIMEOUT_EXCEEDED' });
});

t.test('credentials: a user that does not exist is refused', async (t) => {
  const stranger = createClient({
    url: bare(ch.url),
    ...quiet,
    username: 'weir_no_such_user',
    password: 'x',
  });
  t.teardown(() => stranger.close());
  t.match(await rejection(stranger.query({ query: 'SELECT 1' })), {
    code: '516',
    type: 'AUTHENTICATION_FAILED',
  });
  if (ch.external) return;
  const wrong = createClient({ url: ch.url, ...quiet, password: 'wrong' });
  t.teardown(() => wrong.close());
  t.match(await rejection(wrong.query({ query: 'SELECT 1' })), {
    code: '516',
    type: 'AUTHENTICATION_FAILED',
  });
  const res = await fetch(new URL('/?query=SELECT%20%27h%27', ch.url), {
    headers: { 'X-ClickHouse-User': 'default', 'X-ClickHouse-Key': PASSWORD },
  });
  t.equal(await res.text(), 'h\n', 'X-ClickHouse-User and X-ClickHouse-Key are taken');
});

t.test('insert_deduplication_token makes a repeated insert a no-op', async (t) => {
  await client.command({
    query: `CREATE TABLE dedup (id UInt64, v String) ENGINE = MergeTree ORDER BY id
            SETTINGS non_replicated_deduplication_window = 100`,
  });
  const values = [
    { id: 1, v: 'x' },
    { id: 2, v: 'y' },
  ];
  const insert = (token: string): Promise<unknown> =>
    client.insert({
      table: 'dedup',
      values,
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: token },
    });
  await insert('token-1');
  await insert('token-1');
  const count = async (): Promise<unknown> =>
    (
      await (await client.query({ query: 'SELECT count() AS n FROM dedup', format: 'JSONEachRow' })).json()
    )[0];
  t.same(await count(), { n: 2 }, 'the repeated insert added nothing');
  await insert('token-2');
  t.same(await count(), { n: 4 }, 'another token inserts');
  // The token was this insert's setting only: a plain insert after it is not deduplicated against it.
  await client.insert({ table: 'dedup', values: [{ id: 9, v: 'z' }], format: 'JSONEachRow' });
  await client.insert({ table: 'dedup', values: [{ id: 9, v: 'z' }], format: 'JSONEachRow' });
  t.same(await count(), { n: 5 }, 'a block without a token is deduplicated by its content');
});

t.test('settings are per request; async_insert and wait_end_of_query are taken', async (t) => {
  const setting = async (settings: Record<string, number>): Promise<unknown> =>
    (
      await (
        await client.query({
          query: `SELECT value FROM system.settings WHERE name = 'max_result_rows'`,
          format: 'JSONEachRow',
          clickhouse_settings: settings,
        })
      ).json()
    )[0];
  t.same(await setting({ max_result_rows: 7 }), { value: '7' });
  t.same(await setting({}), { value: '0' }, 'not carried over to the next request');
  await client.command({ query: 'CREATE TABLE asyncs (id UInt64) ENGINE = MergeTree ORDER BY id' });
  await client.insert({
    table: 'asyncs',
    values: [{ id: 1 }],
    format: 'JSONEachRow',
    clickhouse_settings: { async_insert: 1, wait_for_async_insert: 1 },
  });
  const rs = await client.query({
    query: 'SELECT id FROM asyncs',
    format: 'JSONEachRow',
    clickhouse_settings: { wait_end_of_query: 1 },
  });
  t.same(await rs.json(), [{ id: 1 }]);
});

t.test('query_id is echoed', async (t) => {
  const query_id = `weir-front-${randomUUID()}`;
  const rs = await client.query({ query: 'SELECT 1 AS x', format: 'JSONEachRow', query_id });
  t.equal(rs.query_id, query_id);
  t.equal(rs.response_headers['x-clickhouse-query-id'], query_id);
  await rs.json();
});

t.test('exec() streams Parquet bytes', async (t) => {
  const result = await client.exec({
    query: 'SELECT id, name FROM events WHERE id >= {min:UInt64} ORDER BY id FORMAT Parquet',
    query_params: { min: 1 },
  });
  const chunks: Buffer[] = [];
  for await (const chunk of result.stream) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  t.ok(bytes.length > 8);
  t.equal(bytes.subarray(0, 4).toString('latin1'), 'PAR1', 'Parquet magic at the start');
  t.equal(bytes.subarray(-4).toString('latin1'), 'PAR1', 'and at the end');
});

t.test('ten queries at once are all answered, each with its own rows', async (t) => {
  const answers = await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      const rs = await client.query({
        query: 'SELECT {i:UInt32} AS i, count() AS n FROM numbers({rows:UInt32})',
        query_params: { i, rows: 1000 * (i + 1) },
        format: 'JSONEachRow',
      });
      return rs.json();
    }),
  );
  t.same(
    answers,
    Array.from({ length: 10 }, (_, i) => [{ i, n: 1000 * (i + 1) }]),
  );
});

t.test('gzip: responses compressed when asked, compressed insert bodies read', async (t) => {
  const gz: ClickHouseClient = createClient({
    url: ch.url,
    ...credentials,
    database: DB,
    compression: { response: true, request: true },
  });
  t.teardown(() => gz.close());
  await gz.command({ query: 'CREATE TABLE gz (id UInt64, s String) ENGINE = MergeTree ORDER BY id' });
  const values = Array.from({ length: 500 }, (_, id) => ({ id, s: 'x'.repeat(50) }));
  await gz.insert({ table: 'gz', values, format: 'JSONEachRow' });
  const rs = await gz.query({ query: 'SELECT id, s FROM gz ORDER BY id', format: 'JSONEachRow' });
  t.equal(rs.response_headers['content-encoding'], 'gzip');
  t.same(await rs.json(), values);
});

t.test('the front exits 0 on SIGTERM', { skip: ch.external && 'a real server' }, async (t) => {
  await client.close();
  await admin.close();
  t.equal(await ch.stop(), 0);
});
