/**
 * The server store (ClickHouse over HTTP) through ClickHouse's real HTTP interface: the test-only front over
 * chDB (test/clickhouse-front/README.md), or the real server of WEIR_TEST_CLICKHOUSE_URL. Every test works in
 * a database of its own and drops it at the end, so the same assertions run against a real server.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import { tableFromIPC } from 'apache-arrow';
import { readParquet } from 'parquet-wasm';
import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { StoreQueryError, type Row } from '../../src/core/ports.ts';
import { AppError } from '../../src/errors/app-error.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { ServerStore, type ServerStoreConfig } from '../../src/store/server/server-store.ts';
import { startQueryRole } from '../../src/roles/query-role.ts';
import { StoreBusyError } from '../../src/store/store-errors.ts';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { startInsertProxy } from '../helpers/insert-proxy.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { eventRows } from '../helpers/rows.ts';
import { PROJECT_API_KEY, post, startTestWeir, tempDir, waitFor } from '../helpers/weir.ts';
import { queryApi, rows as queryRows } from '../helpers/query-api.ts';

const ch = await clickHouseForTest();
const server = new URL(ch.url);
const user = decodeURIComponent(server.username) || 'default';
const password = decodeURIComponent(server.password) || ch.password;
server.username = '';
server.password = '';
const url = server.toString().replace(/\/$/, '');
/** A client of the server itself, for what the tests check beside the store. */
const admin = createClient({ url, username: user, password: password ?? '' });
const databases: string[] = [];
t.teardown(async () => {
  for (const db of databases) await admin.command({ query: `DROP DATABASE IF EXISTS \`${db}\`` });
  await admin.close();
  await ch.stop();
});

function database(): string {
  const db = `weir_test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  databases.push(db);
  return db;
}

function config(db: string, overrides: Partial<ServerStoreConfig> = {}): ServerStoreConfig {
  return {
    url,
    user,
    password,
    database: db,
    cluster: undefined,
    maxPendingBytes: 64 * 1024 * 1024,
    requestTimeoutMs: 30_000,
    ...overrides,
  };
}

const deps = (): { logger: ReturnType<typeof createLogger>; metrics: Metrics } => ({
  logger: createLogger('silent'),
  metrics: new Metrics({ defaultMetrics: false }),
});

const db = database();
const store = await ServerStore.open(config(db), deps());
t.teardown(() => store.close());

const stored = (tag: string): Promise<Row[]> =>
  store.query<Row>(
    `SELECT toString(uuid) AS uuid, distinct_id, properties FROM events WHERE event = {tag:String} ORDER BY distinct_id`,
    { tag },
  );

t.test('rows, values and encoded blocks are inserted with their values', async (t) => {
  const objects = eventRows('as-objects', 2);
  await store.insert('events', objects);
  t.same(
    (await stored('as-objects')).map((r) => r['uuid']),
    objects.map((r) => r['uuid']),
    'rows given as objects',
  );

  const valueRows = eventRows('as-values', 3);
  const columns = Object.keys(valueRows[0]!);
  await store.insertValues(
    'events',
    columns,
    valueRows.map((r) => columns.map((c) => (c === 'properties' ? { n: r['distinct_id'] } : r[c]))),
  );
  t.same(
    await stored('as-values'),
    valueRows.map((r) => ({
      uuid: r['uuid'],
      distinct_id: r['distinct_id'],
      properties: JSON.stringify({ n: r['distinct_id'] }),
    })),
    'rows given as values, an object stored as its JSON text',
  );

  // As the group-commit writer hands them over: several encodings, one block.
  const a = eventRows('encoded-objects', 2);
  const b = eventRows('encoded-objects', 2).map((r, i) => ({ ...r, distinct_id: `z-${i}` }));
  await store.insertEncoded('events', 4, [store.encode(a), store.encode(b)]);
  t.same(
    (await stored('encoded-objects')).map((r) => r['distinct_id']),
    [...a, ...b].map((r) => r['distinct_id']).sort(),
    'encodings of objects',
  );
  const v = eventRows('encoded-values', 3);
  const vColumns = ['uuid', 'event', 'distinct_id', 'timestamp', 'created_at', 'project_id'];
  await store.insertEncoded(
    'events',
    3,
    [
      store.encode(v.slice(0, 1).map((r) => vColumns.map((c) => r[c]))),
      store.encode(v.slice(1).map((r) => vColumns.map((c) => r[c]))),
    ],
    vColumns,
  );
  t.same(
    (await stored('encoded-values')).map((r) => r['uuid']),
    v.map((r) => r['uuid']),
    'encodings of values with their columns',
  );
});

t.test('a block whose answer was lost is sent again under its token and stored once', async (t) => {
  const proxy = await startInsertProxy(url);
  t.teardown(() => proxy.close());
  const through = await ServerStore.open(config(db, { url: proxy.url }), deps(), { migrate: false });
  t.teardown(() => through.close());
  proxy.cutNextInsertAnswer();
  const rows = eventRows('answer-lost', 3);
  await through.insert('events', rows);
  t.equal(proxy.inserts, 2, 'the server got the block twice: the first answer was cut off');
  t.same(
    (await stored('answer-lost')).map((r) => r['uuid']),
    rows.map((r) => r['uuid']),
    'each row once',
  );
});

t.test('inserts past the bound of unanswered bytes are refused until the server answers', async (t) => {
  const proxy = await startInsertProxy(url);
  t.teardown(() => proxy.close());
  const small = await ServerStore.open(config(db, { url: proxy.url, maxPendingBytes: 1000 }), deps(), {
    migrate: false,
  });
  t.teardown(() => small.close());
  const release = proxy.holdInserts();
  const first = small.insert('events', eventRows('held', 3));
  await waitFor(() => Promise.resolve(proxy.held > 0 ? true : undefined), 5000, 'the insert to be held');
  t.notOk(small.accepting(), 'not accepting while more than three quarters of the bound is unanswered');
  await t.rejects(small.insert('events', eventRows('held', 3)), StoreBusyError);
  release();
  await first;
  t.ok(small.accepting(), 'accepting again once answered');
  t.equal((await stored('held')).length, 3);
});

t.test('queries take typed parameters, whole numbers beyond 2^53 included', async (t) => {
  const got = await store.query<{ n: string; s: string; a: number[]; big: string }>(
    'SELECT toString({n:UInt64}) AS n, {s:String} AS s, {a:Array(UInt8)} AS a, toString({big:UInt128}) AS big',
    { n: 42, s: "it's \\ a\ttab", a: [1, 2], big: 1e20 },
  );
  t.same(got, [{ n: '42', s: "it's \\ a\ttab", a: [1, 2], big: '100000000000000000000' }]);
});

t.test('a query binding 50,000 ids (~2 MB of parameters, past any URL limit) is answered', async (t) => {
  // Ingest's lookups bind a batch's ids; they travel in the request body once they are large.
  const ids = Array.from({ length: 50_000 }, (_, i) => `distinct-id-${i}-${'x'.repeat(20)}`);
  const [row] = await store.query<{ n: string }>('SELECT length({ids:Array(String)}) AS n', { ids });
  t.equal(Number(row!.n), ids.length);
});

t.test('queryTable answers names, types and rows', async (t) => {
  const table = await store.queryTable('SELECT {x:UInt8} AS x, toString({x:UInt8}) AS s, [1, 2] AS list', {
    x: 7,
  });
  t.same(table.columns, ['x', 's', 'list']);
  t.same(table.types, ['UInt8', 'String', 'Array(UInt8)']);
  t.same(table.rows, [[7, '7', [1, 2]]]);
});

t.test('exportParquet streams the answer to the file', async (t) => {
  const dir = tempDir('weir-server-parquet-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'out.parquet');
  await store.exportParquet(
    'SELECT number AS n, toString(number) AS s FROM numbers({count:UInt32})',
    { count: 1000 },
    path,
  );
  const table = tableFromIPC(readParquet(readFileSync(path)).intoIPCStream());
  t.equal(table.numRows, 1000);
  t.equal(String(table.getChild('s')?.get(999)), '999');
});

t.test("the engine's refusals are StoreQueryErrors; an unreachable server is unavailable", async (t) => {
  const refused = await store.queryTable('SELECT no_such_column', {}).catch((e: unknown) => e);
  t.ok(refused instanceof StoreQueryError, 'a StoreQueryError');
  t.match(refused, { code: 47, type: 'UNKNOWN_IDENTIFIER' });
  t.notMatch((refused as Error).message, /\(version /, 'without the server version');
  const parquet = await store
    .exportParquet('SELECT no_such_column', {}, join(tempDir('weir-server-parquet-'), 'x.parquet'))
    .catch((e: unknown) => e);
  t.match(parquet, { code: 47, type: 'UNKNOWN_IDENTIFIER' });
  t.ok(parquet instanceof StoreQueryError);

  const dead = await ServerStore.open(config(db, { url: 'http://127.0.0.1:9' }), deps(), { migrate: false });
  t.teardown(() => dead.close());
  const down = await dead.query('SELECT 1').catch((e: unknown) => e);
  t.ok(down instanceof AppError, 'an AppError');
  t.match(down, { code: 'unavailable', status: 503, retriable: true });
});

t.test(
  'three processes migrating one database at once leave one schema; again, nothing changes',
  async (t) => {
    const fresh = database();
    const schema = async (): Promise<string[]> =>
      (
        await store.query<{ name: string; create: string }>(
          `SELECT name, create_table_query AS create FROM system.tables WHERE database = {db:String} ORDER BY name`,
          { db: fresh },
        )
      ).map((r) => `${r.name}: ${r.create}`);
    const opened = await Promise.all([1, 2, 3].map(() => ServerStore.open(config(fresh), deps())));
    for (const s of opened) t.teardown(() => s.close());
    const tables = await schema();
    t.same(
      tables.map((r) => r.split(':')[0]),
      [
        'events',
        'group_type_mapping',
        'groups',
        'ingestion_warnings',
        'person_distinct_ids',
        'persons',
        'property_definitions',
        'quarantine',
        'weir_migrations',
      ],
      'one set of tables',
    );
    const versions = await opened[0]!.query<{ version: number }>(
      'SELECT DISTINCT version FROM weir_migrations FINAL ORDER BY version',
    );
    t.same(
      versions.map((r) => Number(r.version)),
      MIGRATIONS.map((m) => m.version),
      'every migration recorded',
    );
    const columns = await store.query<{ name: string }>(
      `SELECT name FROM system.columns WHERE database = {db:String} AND table = 'events' AND name = 'elements_chain'`,
      { db: fresh },
    );
    t.equal(columns.length, 1, 'the last migration applied once');
    const recorded = await opened[0]!.query<{ n: string }>('SELECT count() AS n FROM weir_migrations');

    const again = await ServerStore.open(config(fresh), deps());
    t.teardown(() => again.close());
    t.same(await schema(), tables, 'a second run changes no table');
    t.same(
      await again.query<{ n: string }>('SELECT count() AS n FROM weir_migrations'),
      recorded,
      'and records nothing',
    );
  },
);

t.test(
  'weir start with WEIR_CLICKHOUSE_URL: a captured event is read back through the query API',
  async (t) => {
    const w = await startTestWeir({
      WEIR_CLICKHOUSE_URL: url,
      WEIR_CLICKHOUSE_USER: user,
      ...(password === undefined ? {} : { WEIR_CLICKHOUSE_PASSWORD: password }),
      WEIR_CLICKHOUSE_DATABASE: database(),
    });
    t.teardown(() => w.close());
    t.notMatch(readFileSync('/proc/self/maps', 'utf8'), /chdb/i, 'no chDB in this process');
    const res = await post(
      `${w.url}/i/v0/e/`,
      JSON.stringify({
        api_key: PROJECT_API_KEY,
        event: 'server-signup',
        distinct_id: 'server-1',
        properties: { plan: 'pro' },
      }),
    );
    t.equal(res.status, 200);
    const got = await queryRows(
      w,
      "SELECT event, distinct_id, properties.plan FROM events WHERE event = 'server-signup'",
    );
    t.same(got, [['server-signup', 'server-1', 'pro']]);
  },
);

t.test('weir query with WEIR_CLICKHOUSE_URL reads the server itself, not a store owner', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.close());
  const shared = {
    WEIR_CLICKHOUSE_URL: url,
    WEIR_CLICKHOUSE_USER: user,
    ...(password === undefined ? {} : { WEIR_CLICKHOUSE_PASSWORD: password }),
    WEIR_CLICKHOUSE_DATABASE: database(),
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'nats',
  };
  const w = await startTestWeir(shared);
  t.teardown(() => w.close());
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({
    ...shared,
    WEIR_PORT: '0',
    WEIR_DATA_DIR: dir,
    WEIR_LOG_LEVEL: process.env['WEIR_TEST_LOG_LEVEL'] ?? 'silent',
  });
  // No WEIR_STORE_URL: without the server store this role would refuse to start.
  const node = await startQueryRole(config, createLogger(config.logLevel));
  t.teardown(() => node.close());
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({
      api_key: PROJECT_API_KEY,
      event: 'via-node',
      distinct_id: 'node-1',
      properties: { n: 5 },
    }),
  );
  t.equal(res.status, 200);
  // Until the node has read the type ingest recorded, `properties.n` is text and `+ 1` is refused.
  const got = await waitFor(async () => {
    const r = await queryApi(node, "SELECT event, properties.n + 1 FROM events WHERE event = 'via-node'");
    const results = r.status === 200 ? (r.json as { results: unknown[][] }).results : [];
    return results.length > 0 ? results : undefined;
  });
  t.same(got, [['via-node', 6]], 'the event, its property typed as a number by the definitions it read');
});
