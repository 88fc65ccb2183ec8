/**
 * Rows the engine refuses, on the two paths over NATS JetStream: `weir start` with the bus on a real
 * nats-server (the embedded store behind it), and `weir capture` + `weir ingest` on a ClickHouse server
 * store (the test front over chDB, or WEIR_TEST_CLICKHOUSE_URL). A batch with refused rows is neither nak'd
 * nor redelivered: the refused rows are set aside, the rest stored, the stream drains, and a restart finds
 * everything where it was. The refusal is the engine's own (a CHECK constraint on `events`), as in
 * quarantine.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createClient } from '@clickhouse/client';
import t from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { metricValue, spawnRole, waitStreamDrained, type RoleProcess } from '../helpers/roles.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  tempDir,
  waitFor,
  weirSql,
} from '../helpers/weir.ts';

const CONSTRAINT = "ADD CONSTRAINT no_poison CHECK event != 'poison'";
const auth = { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' };
const roles: RoleProcess[] = [];
t.teardown(async () => {
  for (const r of roles) await r.kill9();
});
const started = async (p: Promise<RoleProcess>): Promise<RoleProcess> => {
  const r = await p;
  roles.push(r);
  return r;
};

/** Four good events and three refused ones, in a batch and alone; every request answered 200. */
async function sendMixed(captureUrl: string): Promise<{ good: string[]; poison: string[] }> {
  const good = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const poison = [randomUUID(), randomUUID(), randomUUID()];
  const batch = [
    { event: 'fine', distinct_id: 'j1', uuid: good[0] },
    { event: 'poison', distinct_id: 'j1', uuid: poison[0] },
    { event: 'fine', distinct_id: 'j2', uuid: good[1] },
    { event: 'poison', distinct_id: 'j3', uuid: poison[1] },
  ];
  const res = await post(`${captureUrl}/batch/`, JSON.stringify({ api_key: PROJECT_API_KEY, batch }));
  if (res.status !== 200) throw new Error(`batch: ${res.status} ${res.text}`);
  for (const [event, uuid] of [
    ['poison', poison[2]],
    ['fine', good[2]],
    ['fine', good[3]],
  ] as const) {
    const one = await post(
      `${captureUrl}/i/v0/e/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, event, distinct_id: 'j4', uuid }),
    );
    if (one.status !== 200) throw new Error(`single: ${one.status} ${one.text}`);
  }
  return { good, poison };
}

/** The quarantine as the API of `apiUrl` lists it, once it holds `n` rows. */
async function quarantineOf(apiUrl: string, n: number): Promise<Record<string, unknown>[]> {
  return waitFor(
    async () => {
      const res = await request(`${apiUrl}/api/projects/1/quarantine/?status=held`, { headers: auth });
      if (res.status !== 200) throw new Error(`quarantine: ${res.status} ${res.text}`);
      const rows = (res.json as { results: Record<string, unknown>[] }).results;
      return rows.length >= n ? rows : undefined;
    },
    60_000,
    `${n} rows set aside`,
  );
}

t.test('weir start over JetStream: refused rows are set aside, nothing is redelivered', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.close());
  const dataDir = tempDir('weir-quarantine-js-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { WEIR_DATA_DIR: dataDir, WEIR_NATS_URL: nats.url };
  t.equal(await (await started(spawnRole('start', env))).stop(), 0);
  const added = await weirSql(dataDir, `ALTER TABLE events ${CONSTRAINT}`);
  t.equal(added.code, 0, added.stderr);

  let weir = await started(spawnRole('start', env));
  const { good, poison } = await sendMixed(weir.url);
  await waitStreamDrained(nats.url);
  const held = await quarantineOf(weir.url, 3);
  t.same(held.map((r) => r['event_uuid']).sort(), [...poison].sort());
  t.match(held, [{ reason: 'VIOLATED_CONSTRAINT' }, { reason: 'VIOLATED_CONSTRAINT' }, {}]);
  const metrics = await weir.metrics();
  t.equal(metricValue(metrics, 'weir_bus_nak_total'), 0, 'no batch was nak’d');
  t.equal(metricValue(metrics, 'weir_bus_redelivered_messages_total'), 0, 'nor delivered again');

  t.equal(await weir.stop(), 0);
  const stored = await weirSql(dataDir, 'SELECT toString(uuid) AS u FROM events FINAL ORDER BY u');
  t.same(
    stored.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { u: string }).u),
    [...good].sort(),
    'the good events, once each',
  );
  weir = await started(spawnRole('start', env));
  t.equal((await quarantineOf(weir.url, 3)).length, 3, 'still set aside after a restart');
  t.equal(await weir.stop(), 0);
});

t.test('weir capture and weir ingest on a ClickHouse server: the same, and a replay', async (t) => {
  const ch = await clickHouseForTest();
  const nats = await startNatsServer();
  const database = `weir_e2e_quarantine_${process.pid}`;
  const admin = createClient({ url: ch.url, password: ch.password ?? '' });
  t.teardown(async () => {
    await admin.command({ query: `DROP DATABASE IF EXISTS \`${database}\`` });
    await admin.close();
    await nats.close();
    await ch.stop();
  });
  const dirs = [tempDir('weir-quarantine-ingest-'), tempDir('weir-quarantine-capture-')];
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const shared = {
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'nats',
    WEIR_CLICKHOUSE_URL: ch.url,
    WEIR_CLICKHOUSE_DATABASE: database,
    ...(ch.password !== undefined ? { WEIR_CLICKHOUSE_PASSWORD: ch.password } : {}),
  };
  let ingest = await started(spawnRole('ingest', { ...shared, WEIR_DATA_DIR: dirs[0]! }));
  await admin.command({ query: `ALTER TABLE \`${database}\`.events ${CONSTRAINT}` });
  const capture = await started(spawnRole('capture', { ...shared, WEIR_DATA_DIR: dirs[1]! }));

  const { good, poison } = await sendMixed(capture.url);
  await waitStreamDrained(nats.url);
  const held = await quarantineOf(ingest.url, 3);
  t.same(held.map((r) => r['event_uuid']).sort(), [...poison].sort());
  const metrics = await ingest.metrics();
  t.equal(metricValue(metrics, 'weir_bus_nak_total'), 0, 'no batch was nak’d');
  t.match(metrics, /weir_ingest_rows_quarantined_total\{table="events",reason="VIOLATED_CONSTRAINT"\} 3/);

  const uuids = async (): Promise<string[]> => {
    const rs = await admin.query({
      query: `SELECT toString(uuid) AS u FROM \`${database}\`.events FINAL ORDER BY u`,
      format: 'JSONEachRow',
    });
    return (await rs.json<{ u: string }>()).map((r) => r.u);
  };
  t.same(await uuids(), [...good].sort(), 'the good events, once each');

  t.equal(await ingest.stop(), 0);
  ingest = await started(spawnRole('ingest', { ...shared, WEIR_DATA_DIR: dirs[0]! }));
  t.equal((await quarantineOf(ingest.url, 3)).length, 3, 'still set aside after a restart');
  await admin.command({ query: `ALTER TABLE \`${database}\`.events DROP CONSTRAINT no_poison` });
  const replay = await post(`${ingest.url}/api/projects/1/quarantine/replay/`, '{}', auth);
  t.equal(replay.status, 200, replay.text);
  t.match(replay.json, { stored: 3, refused: 0 });
  t.same(await uuids(), [...good, ...poison].sort(), 'every event stored, once');
});
