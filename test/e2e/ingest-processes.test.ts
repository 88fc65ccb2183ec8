/**
 * Many ingest processes on a ClickHouse server store (issue 28). Every role is an OS process: `weir capture`,
 * and one, two or three `weir ingest` sharing the bus partitions over one nats-server and one store (the
 * test-only ClickHouse front over chDB, or the real server of WEIR_TEST_CLICKHOUSE_URL). The same stream of
 * events, with merges across partitions, gives the same persons, distinct-id links, event persons and groups
 * with any number of ingest processes as with one `weir start` (the embedded store's single process); a
 * process killed with SIGKILL under load has its partitions taken over, and every event answered 200 is
 * stored exactly once; three processes migrating one fresh database at once leave one schema.
 */
import { rmSync } from 'node:fs';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import t from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { startNatsServer, type NatsServer } from '../helpers/nats-server.ts';
import {
  canonical,
  personStream,
  STATE_SQL,
  type StoredState,
  type StreamEvent,
} from '../helpers/person-stream.ts';
import {
  metricValue,
  spawnRole,
  sqlRows,
  startLoad,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { PROJECT_API_KEY, request, tempDir, waitFor } from '../helpers/weir.ts';

const PARTITIONS = 8;
const USERS = 40;

const ch = await clickHouseForTest();
const dirs: string[] = [];
const roles: RoleProcess[] = [];
const servers: NatsServer[] = [];
const clients: ClickHouseClient[] = [];
const databases: string[] = [];
t.teardown(async () => {
  await Promise.all(
    roles.map(async (r) => {
      const timer = setTimeout(() => void r.kill9(), 20_000);
      await r.stop();
      clearTimeout(timer);
    }),
  );
  // Each run's database goes with it, so the test leaves a real server (WEIR_TEST_CLICKHOUSE_URL) as it found it.
  const admin = createClient({ url: ch.url, password: ch.password ?? '' });
  for (const db of databases) await admin.command({ query: `DROP DATABASE IF EXISTS \`${db}\`` });
  await admin.close();
  for (const c of clients) await c.close();
  for (const s of servers) await s.close();
  await ch.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const dir = (): string => {
  const d = tempDir('weir-ingest-processes-');
  dirs.push(d);
  return d;
};
const started = async (p: Promise<RoleProcess>): Promise<RoleProcess> => {
  const r = await p;
  roles.push(r);
  return r;
};

/** A client of the store on one database of its own (so runs against one server never meet). */
function storeClient(database: string): ClickHouseClient {
  const c = createClient({ url: ch.url, database, password: ch.password ?? '' });
  clients.push(c);
  return c;
}

async function rowsOf<T>(client: ClickHouseClient, sql: string): Promise<T[]> {
  const rs = await client.query({ query: sql, format: 'JSONEachRow' });
  return rs.json<T>();
}

async function readState(read: <T>(sql: string) => Promise<T[]>): Promise<StoredState> {
  const out: Record<string, unknown> = {};
  for (const [k, sql] of Object.entries(STATE_SQL)) out[k] = await read(sql);
  return out as unknown as StoredState;
}

/** Sends a phase to capture in requests of 25 events; every request must be answered 200. */
async function send(captureUrl: string, events: readonly StreamEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 25) {
    const res = await request(`${captureUrl}/batch/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: PROJECT_API_KEY, batch: events.slice(i, i + 25) }),
    });
    if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
  }
}

interface Cluster {
  readonly nats: NatsServer;
  readonly capture: RoleProcess;
  readonly ingests: RoleProcess[];
  readonly client: ClickHouseClient;
  readonly database: string;
}

/** One nats-server, `ingests` ingest processes started at once on a fresh database, and one capture. */
async function startCluster(
  name: string,
  ingests: number,
  env: Record<string, string> = {},
): Promise<Cluster> {
  const nats = await startNatsServer();
  servers.push(nats);
  const database = `weir_e2e_${name}_${process.pid}`;
  databases.push(database);
  const shared = {
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'nats',
    WEIR_BUS_PARTITIONS: String(PARTITIONS),
    WEIR_CLICKHOUSE_URL: ch.url,
    WEIR_CLICKHOUSE_DATABASE: database,
    ...(ch.password !== undefined ? { WEIR_CLICKHOUSE_PASSWORD: ch.password } : {}),
    ...env,
  };
  const ingestProcesses = await Promise.all(
    Array.from({ length: ingests }, () => started(spawnRole('ingest', { ...shared, WEIR_DATA_DIR: dir() }))),
  );
  const capture = await started(spawnRole('capture', { ...shared, WEIR_DATA_DIR: dir() }));
  return { nats, capture, ingests: ingestProcesses, client: storeClient(database), database };
}

const stream = personStream(USERS);

// The reference: one `weir start`, the embedded store, its one process's person state.
const reference = await (async () => {
  const dataDir = dir();
  const weir = await started(spawnRole('start', { WEIR_DATA_DIR: dataDir }));
  for (const phase of stream) await send(weir.url, phase);
  await weir.stop();
  return canonical(await readState((sql) => sqlRows(dataDir, sql)));
})();

for (const n of [1, 2, 3]) {
  await t.test(
    `${n} ingest process(es) on the server store make the persons one process makes`,
    async (t) => {
      const c = await startCluster(`persons${n}`, n);
      let total = 0;
      for (const phase of stream) {
        await send(c.capture.url, phase);
        total += phase.length;
        await waitStreamDrained(c.nats.url, 60_000);
        const [row] = await rowsOf<{ n: string }>(c.client, 'SELECT count() AS n FROM events');
        t.equal(Number(row!.n), total, 'every event of the phase is stored once');
      }
      const state = canonical(await readState((sql) => rowsOf(c.client, sql)));
      t.same(
        state,
        reference,
        'persons, links, event persons, groups and warnings as one process makes them',
      );
      if (n > 1) {
        // Each process held a share of the partitions: the test ran what it meant to.
        const held = await Promise.all(
          c.ingests.map(async (i) => metricValue(await i.metrics(), 'weir_bus_partitions_held')),
        );
        t.ok(
          held.every((h) => h > 0),
          `every process consumed partitions (${held.join(', ')})`,
        );
      }
      for (const r of [c.capture, ...c.ingests]) t.equal(await r.stop(), 0, 'stops cleanly');
    },
  );
}

await t.test('three processes migrating one fresh database at once leave one schema', async (t) => {
  const c = await startCluster('migrate', 3);
  const tables = await rowsOf<{ name: string }>(
    c.client,
    `SELECT name FROM system.tables WHERE database = '${c.database}' ORDER BY name`,
  );
  const names = tables.map((r) => r.name);
  t.ok(
    names.includes('events') && names.includes('persons') && names.includes('weir_migrations'),
    names.join(', '),
  );
  t.equal(new Set(names).size, names.length, 'no table twice');
  const versions = await rowsOf<{ version: number; n: string }>(
    c.client,
    'SELECT version, count() AS n FROM weir_migrations FINAL GROUP BY version ORDER BY version',
  );
  t.ok(versions.length >= 6, `every migration recorded (${versions.length})`);
  for (const r of [c.capture, ...c.ingests]) t.equal(await r.stop(), 0, 'stops cleanly');
});

await t.test(
  'kill -9 of one of three ingest processes under load: every event answered 200 stored once',
  async (t) => {
    const c = await startCluster('kill9', 3, { WEIR_BUS_ACK_WAIT_MS: '5000' });
    const load = startLoad({
      urls: [c.capture.url],
      event: 'kill9',
      clients: 4,
      requests: 1_000_000,
      eventsPerRequest: 20,
      retry: true,
    });
    await waitFor(
      () => Promise.resolve(load.acked.size >= 2_000 ? true : undefined),
      60_000,
      'load before the kill',
    );
    const victim = c.ingests[1]!;
    await victim.kill9();
    const atKill = load.acked.size;
    await waitFor(
      () => Promise.resolve(load.acked.size >= atKill + 4_000 ? true : undefined),
      60_000,
      'load after the kill',
    );
    await load.stop();
    const stopped = Date.now();
    await waitStreamDrained(c.nats.url, 60_000);
    t.comment(`stream drained ${Date.now() - stopped} ms after the load stopped`);
    const [counts] = await rowsOf<{ rows: string; uuids: string }>(
      c.client,
      "SELECT count() AS rows, uniqExact(uuid) AS uuids FROM events WHERE event = 'kill9'",
    );
    t.equal(Number(counts!.uuids), Number(counts!.rows), 'no event stored twice');
    const stored = new Set(
      (
        await rowsOf<{ u: string }>(c.client, "SELECT toString(uuid) AS u FROM events WHERE event = 'kill9'")
      ).map((r) => r.u),
    );
    const missing = [...load.acked].filter((u) => !stored.has(u));
    t.same(
      missing.slice(0, 5),
      [],
      `every event answered 200 is stored (${missing.length} of ${load.acked.size} missing)`,
    );
    // No distinct id got two persons through a redelivery after the takeover.
    const doubled = await rowsOf<{ distinct_id: string }>(
      c.client,
      `SELECT distinct_id FROM person_distinct_ids FINAL WHERE is_deleted = 0
     GROUP BY distinct_id HAVING uniqExact(person_id) > 1`,
    );
    t.same(doubled, [], 'one person per distinct id');
    const wrong = await rowsOf<{ n: string }>(
      c.client,
      `SELECT count() AS n FROM events AS e
     INNER JOIN (SELECT distinct_id, person_id FROM person_distinct_ids FINAL WHERE is_deleted = 0) AS l
     ON e.distinct_id = l.distinct_id WHERE e.event = 'kill9' AND e.person_id != l.person_id`,
    );
    t.equal(Number(wrong[0]!.n), 0, "every event names its distinct id's person");
    for (const r of [c.capture, c.ingests[0]!, c.ingests[2]!]) t.equal(await r.stop(), 0, 'stops cleanly');
  },
);
