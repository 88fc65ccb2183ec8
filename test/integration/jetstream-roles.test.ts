/**
 * The scaled-out shape on one machine: two `weir capture` processes and one `weir ingest` process, each its
 * own OS process, through a real nats-server. Events go in through the posthog-node SDK and plain HTTP, and
 * are read back from the store with `weir sql` once ingest has stopped (chDB allows one process per store).
 * The catalog is the owner's file (`WEIR_CATALOG=file`), which capture reads from the shared data directory.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { PostHog } from 'posthog-node';
import { startNatsServer } from '../helpers/nats-server.ts';
import {
  metricValue,
  runLoad,
  spawnRole,
  sqlRows,
  storedCounts,
  storedUuids,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, post, runWeir, tempDir, waitFor } from '../helpers/weir.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const dataDir = tempDir();
const ingest = await spawnRole('ingest', {
  WEIR_NATS_URL: nats.url,
  WEIR_CATALOG: 'file',
  WEIR_DATA_DIR: dataDir,
});
// Capture B has a tiny spike-detection bucket, so a burst through it goes to the overflow lane.
const [a, b] = await Promise.all([
  spawnRole('capture', { WEIR_NATS_URL: nats.url, WEIR_CATALOG: 'file', WEIR_DATA_DIR: dataDir }),
  spawnRole('capture', {
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'file',
    WEIR_DATA_DIR: dataDir,
    WEIR_SPIKE_RATE: '1',
    WEIR_SPIKE_BURST: '20',
  }),
]);
const roles: RoleProcess[] = [ingest, a, b];
t.teardown(async () => {
  await Promise.all(roles.map((r) => r.kill9()));
});
/** What each test sent, checked against the store at the end. */
const sent: { twoCaptures?: Set<string> } = {};

t.test('capture and ingest without a NATS URL refuse to start with a usage error', async (t) => {
  for (const command of ['capture', 'ingest']) {
    const { code, stderr: err } = await runWeir([command]);
    t.equal(code, 2, `weir ${command} exits 2`);
    t.match(
      err,
      new RegExp(`${command} \\w+ (to|from) NATS JetStream: give --nats-url URL or set WEIR_NATS_URL`),
    );
    t.match(err, /usage: weir/);
  }
});

t.test('a capture process loads no store: no chDB library mapped, no data-directory lock', (t) => {
  const maps = (pid: number): string => readFileSync(`/proc/${pid}/maps`, 'utf8');
  t.notMatch(maps(a.pid), /chdb/i, 'capture has no chDB mapped');
  t.match(maps(ingest.pid), /chdb/i, 'ingest does (the check can see it)');
  t.equal(
    readFileSync(join(dataDir, 'weir.lock'), 'utf8').trim(),
    String(ingest.pid),
    'ingest holds the lock',
  );
  t.end();
});

t.test('every role reports ready and exports its bus metrics', async (t) => {
  for (const r of roles) t.equal((await fetch(`${r.url}/_ready`)).status, 200, `${r.command} ready`);
  await waitFor(
    async () =>
      /weir_bus_consumer_pending_messages\{lane="live"\}/.test(await ingest.metrics()) ? true : undefined,
    15_000,
    'consumer lag gauges',
  );
  const m = await ingest.metrics();
  t.equal(metricValue(m, 'weir_nats_connected', 'connection="consume"'), 1);
  t.equal(metricValue(await a.metrics(), 'weir_nats_connected', 'connection="publish"'), 1);
});

t.test('the posthog-node SDK through capture A lands in the store ingest owns', async (t) => {
  const client = new PostHog(PROJECT_API_KEY, { host: a.url, flushAt: 10, flushInterval: 0 });
  for (let i = 0; i < 50; i++)
    client.capture({ distinctId: `sdk-${i % 5}`, event: 'sdk via roles', properties: { i } });
  client.identify({ distinctId: 'sdk-0', properties: { email: 'zero@example.com' } });
  client.alias({ distinctId: 'sdk-0', alias: 'sdk-0-alias' });
  client.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { name: 'Acme' } });
  await client.shutdown();
  t.ok(
    metricValue(await a.metrics(), 'weir_capture_requests_total', 'status="200"') >= 1,
    'capture answered 200',
  );
  const published = metricValue(await a.metrics(), 'weir_bus_published_messages_total');
  t.ok(published >= 1, `capture published micro-batches (${published} messages)`);
});

t.test('the query API on the ingest process answers over what captures sent', async (t) => {
  // The SDK's 50 events went through capture A and JetStream; ingest owns the store and answers queries.
  const rows = await waitFor(
    async () => {
      const res = await fetch(`${ingest.url}/api/projects/1/query/`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${PERSONAL_API_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          query: {
            kind: 'HogQLQuery',
            query: 'SELECT count() FROM events WHERE event = {variables.name}',
            variables: { name: 'sdk via roles' },
          },
        }),
      });
      t.equal(res.status, 200);
      const body = (await res.json()) as { results: unknown[][] };
      return Number(body.results[0]![0]) === 50 ? body.results : undefined;
    },
    30_000,
    'the 50 SDK events to be counted by the query API',
  );
  t.same(rows, [[50]]);
});

t.test('an insight endpoint on the ingest process runs over what captures sent', async (t) => {
  const api = (path: string, body: unknown): Promise<Response> =>
    fetch(`${ingest.url}/api/projects/1/endpoints/${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${PERSONAL_API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const created = await api('', {
    name: 'sdk-trend',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'sdk via roles', math: 'dau' }],
      dateRange: { date_from: '-1d' },
      trendsFilter: { display: 'BoldNumber' },
    },
  });
  t.equal(created.status, 201, await created.clone().text());
  // The five SDK users, through capture A, JetStream and ingest: one total-value row.
  const body = await waitFor(
    async () => {
      const res = await api('sdk-trend/run', { refresh: 'force' });
      t.equal(res.status, 200);
      const b = (await res.json()) as { columns: string[]; results: unknown[][] };
      return b.results[0]?.[2] === 5 ? b : undefined;
    },
    30_000,
    'the five SDK users in the trend',
  );
  t.same(body.columns, ['series_index', 'series', 'value']);
  t.same(body.results, [[0, 'sdk via roles', 5]]);
});

t.test('two capture processes feed one ingest', async (t) => {
  const load = await runLoad({
    urls: [a.url, b.url],
    event: 'two captures',
    clients: 4,
    requests: 25,
    eventsPerRequest: 40,
    retry: false,
  });
  t.equal(load.acked.size, 4_000, 'every request answered 200');
  const viaA = metricValue(await a.metrics(), 'weir_capture_events_total');
  const viaB = metricValue(await b.metrics(), 'weir_capture_events_total');
  t.ok(viaA >= 2_000 && viaB >= 2_000, `both captures took events (A ${viaA}, B ${viaB})`);
  sent.twoCaptures = load.acked;
});

t.test('capture processes may share a port, but not the one ingest owns', async (t) => {
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const port = String((free.address() as AddressInfo).port);
  await new Promise((resolve) => free.close(resolve));
  const env = { WEIR_NATS_URL: nats.url, WEIR_CATALOG: 'file', WEIR_DATA_DIR: dataDir, WEIR_PORT: port };
  const [c, d] = await Promise.all([spawnRole('capture', env), spawnRole('capture', env)]);
  t.equal(c.url, d.url, 'two captures listen on one port');
  t.same(await Promise.all([c.stop(), d.stop()]), [0, 0]);
  const ingestPort = new URL(ingest.url).port;
  await t.rejects(
    spawnRole('capture', { ...env, WEIR_PORT: ingestPort }),
    { message: new RegExp(`cannot listen on http://127\\.0\\.0\\.1:${ingestPort}: is the port in use\\?`) },
    'the port ingest owns is refused',
  );
});

t.test('a burst from one distinct_id goes to overflow and is still stored', async (t) => {
  const before = metricValue(await b.metrics(), 'weir_capture_events_total', 'lane="overflow"');
  const res = await post(
    `${b.url}/batch/`,
    JSON.stringify({
      api_key: PROJECT_API_KEY,
      batch: Array.from({ length: 500 }, (_, i) => ({
        event: 'burst',
        properties: { distinct_id: 'hot', i },
      })),
    }),
  );
  t.equal(res.status, 200);
  const overflowed = metricValue(await b.metrics(), 'weir_capture_events_total', 'lane="overflow"') - before;
  t.ok(overflowed >= 400, `capture moved the burst to overflow (${overflowed} events)`);
  await waitFor(
    async () =>
      metricValue(await ingest.metrics(), 'weir_ingest_events_total', 'lane="overflow"') >=
      before + overflowed
        ? true
        : undefined,
    30_000,
    'ingest to commit the overflow lane',
  );
});

t.test('a project created after capture started can capture at once', async (t) => {
  const key = 'phc_created_later_0000000000000000000000000';
  const path = join(dataDir, 'catalog.json');
  const catalog = JSON.parse(readFileSync(path, 'utf8')) as { projects: unknown[]; nextProjectId: number };
  catalog.projects.push({ id: 2, name: 'Later', apiToken: key, createdAt: new Date().toISOString() });
  catalog.nextProjectId = 3;
  // As the catalog's owner writes it: a temporary file renamed over the old one.
  writeFileSync(`${path}.tmp`, JSON.stringify(catalog));
  renameSync(`${path}.tmp`, path);
  const body = JSON.stringify({ api_key: key, event: 'later project', distinct_id: 'l1' });
  const status = await waitFor(
    async () => {
      const s = (await post(`${a.url}/i/v0/e/`, body)).status;
      return s === 200 ? s : undefined;
    },
    15_000,
    'capture to accept the new key',
  );
  t.equal(status, 200);
});

t.test('after ingest stops, the store holds everything exactly once', async (t) => {
  await waitStreamDrained(nats.url);
  t.equal(await ingest.stop(), 0, 'ingest drained and exited 0');

  const sdk = await sqlRows<{ event: string; n: string }>(
    dataDir,
    `SELECT event, count() AS n FROM events
     WHERE distinct_id LIKE 'sdk-%' OR event = '$groupidentify' GROUP BY event ORDER BY event`,
  );
  t.same(
    sdk.map((r) => [r.event, Number(r.n)]),
    [
      ['$create_alias', 1],
      ['$groupidentify', 1],
      ['$identify', 1],
      ['sdk via roles', 50],
    ],
    'SDK events stored',
  );
  const [person] = await sqlRows<{ email: string }>(
    dataDir,
    `SELECT JSONExtractString(p.properties, 'email') AS email FROM persons AS p FINAL
     WHERE p.id = (SELECT person_id FROM person_distinct_ids FINAL WHERE distinct_id = 'sdk-0-alias')`,
  );
  t.equal(person?.email, 'zero@example.com', 'identify and alias reached the person');
  // Over the bus an event's properties travel as JSON text beside the few ingest reads (codec.ts).
  const [props] = await sqlRows<{ i: string; lib: string; keys: string }>(
    dataDir,
    `SELECT JSONExtractInt(properties, 'i') AS i, JSONExtractString(properties, '$lib') AS lib,
       length(JSONExtractKeys(properties)) AS keys
     FROM events WHERE event = 'sdk via roles' AND JSONExtractInt(properties, 'i') = 7`,
  );
  t.equal(String(props?.i), '7', "an event's own property stored");
  t.equal(props?.lib, 'posthog-node', "the SDK's properties stored beside it");
  t.ok(Number(props?.keys) > 3, `all its properties stored (${props?.keys} keys)`);
  const [group] = await sqlRows<{ name: string }>(
    dataDir,
    `SELECT JSONExtractString(properties, 'name') AS name FROM groups FINAL WHERE group_key = 'acme'`,
  );
  t.equal(group?.name, 'Acme', '$group_set reached the group');

  t.same(await storedCounts(dataDir, 'two captures'), { rows: 4_000, uuids: 4_000, final: 4_000 });
  const stored = await storedUuids(dataDir, 'two captures');
  t.ok(
    [...sent.twoCaptures!].every((u) => stored.has(u)),
    'every event answered 200 by either capture is stored',
  );
  t.same(await storedCounts(dataDir, 'burst'), { rows: 500, uuids: 500, final: 500 }, 'the burst is stored');
  const [later] = await sqlRows<{ project_id: string }>(
    dataDir,
    `SELECT project_id FROM events WHERE event = 'later project'`,
  );
  t.equal(Number(later?.project_id), 2, "the new project's event is stored under it");
});
