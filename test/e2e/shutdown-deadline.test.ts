/**
 * SIGTERM ends within a bound when ClickHouse or NATS is unreachable (issue 39): `weir ingest` on a server
 * store (the test-only ClickHouse front) whose ClickHouse is killed, or frozen, while events wait; and
 * `weir start` over JetStream whose nats-server is frozen. Each exits within WEIR_SHUTDOWN_DEADLINE_SECONDS
 * (and a little), non-zero, with a line saying what it left; what could not be committed stays on the bus,
 * and once ClickHouse is back a new ingest stores every event captured exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import t from 'tap';
import { startFront, type StartedFront } from '../clickhouse-front/start.ts';
import { startNatsServer, type NatsServer } from '../helpers/nats-server.ts';
import {
  metricValue,
  spawnRole,
  storedCounts,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { PROJECT_API_KEY, request, spawnWeir, tempDir, waitFor, type SpawnedWeir } from '../helpers/weir.ts';

const DEADLINE_SECONDS = 3;
/**
 * Where ClickHouse is killed, the shutdown fails fast (connections refused, a few retries) and ends on its
 * own: a deadline it does not reach shows that exit, 1. Where something is frozen, the short one ends it.
 */
const KILLED_DEADLINE_SECONDS = 10;
/** Room for a loaded machine to schedule the exit after the deadline. */
const SLACK_MS = 4000;
const DATABASE = `weir_e2e_shutdown_${process.pid}`;

const dirs: string[] = [];
const dir = (prefix?: string): string => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};
const roles: RoleProcess[] = [];
const weirs: SpawnedWeir[] = [];
const servers: NatsServer[] = [];
const fronts: StartedFront[] = [];
const clients: ClickHouseClient[] = [];
t.teardown(async () => {
  for (const r of roles) await r.kill9();
  for (const w of weirs) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  for (const c of clients) await c.close();
  for (const f of fronts) {
    f.resume();
    await f.stop();
  }
  for (const s of servers) {
    s.resume();
    await s.close();
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Sends `n` events in one /batch/ request, which must be answered 200; returns their uuids. */
async function capture(url: string, event: string, n: number): Promise<string[]> {
  const uuids = Array.from({ length: n }, () => randomUUID());
  const res = await request(`${url}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      api_key: PROJECT_API_KEY,
      batch: uuids.map((uuid, i) => ({ event, uuid, properties: { distinct_id: `${event}-${i % 7}`, i } })),
    }),
  });
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
  return uuids;
}

/** SIGTERM, then polls for the exit until the deadline and a little; the exit code and how long it took. */
async function terminate(
  proc: { readonly child: ChildProcess; output(): string },
  deadlineSeconds = DEADLINE_SECONDS,
): Promise<{ code: number | null; ms: number }> {
  const { child } = proc;
  const started = Date.now();
  child.kill('SIGTERM');
  try {
    await waitFor(
      () => Promise.resolve(child.exitCode !== null || child.signalCode !== null ? true : undefined),
      deadlineSeconds * 1000 + SLACK_MS,
      'the process to exit after SIGTERM',
    );
    // 'exit' can come before the last of the output has been read from the pipes.
    await waitFor(
      () =>
        Promise.resolve(
          child.stdout?.readableEnded !== false && child.stderr?.readableEnded !== false ? true : undefined,
        ),
      SLACK_MS,
      'the output of the exited process',
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; its output:\n${proc.output().slice(-4000)}`, {
      cause: err,
    });
  }
  return { code: child.exitCode, ms: Date.now() - started };
}

/** The pino lines of a process's output at level error (50). */
function errorLines(output: string): { msg: string; exitCode?: number; step?: string }[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"level":50'))
    .map((l) => JSON.parse(l) as { msg: string; exitCode?: number; step?: string });
}

/** Batches handed to ingest and not acknowledged yet, on the JetStream consumer of the live lane. */
async function ackPending(natsUrl: string): Promise<number> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    return (await jsm.consumers.info('EVENTS', 'ingest-live-0')).num_ack_pending;
  } finally {
    await nc.close();
  }
}

await t.test('weir ingest on a ClickHouse server that goes away', async (t) => {
  const nats = await startNatsServer();
  servers.push(nats);
  const chDir = dir('weir-shutdown-front-');
  let front = await startFront({ dataDir: chDir });
  fronts.push(front);
  const shared = { WEIR_NATS_URL: nats.url, WEIR_CATALOG: 'nats' };
  const ingest = async (url: string, deadlineSeconds = DEADLINE_SECONDS): Promise<RoleProcess> => {
    const r = await spawnRole('ingest', {
      ...shared,
      WEIR_CLICKHOUSE_URL: url,
      WEIR_CLICKHOUSE_DATABASE: DATABASE,
      WEIR_DATA_DIR: dir(),
      WEIR_SHUTDOWN_DEADLINE_SECONDS: String(deadlineSeconds),
    });
    roles.push(r);
    return r;
  };
  const first = await ingest(front.url, KILLED_DEADLINE_SECONDS);
  const cap = await spawnRole('capture', { ...shared, WEIR_DATA_DIR: dir() });
  roles.push(cap);
  const captured: string[] = [];
  const storedCount = async (url: string): Promise<number> => {
    const client = createClient({ url, database: DATABASE });
    try {
      const rs = await client.query({ query: 'SELECT count() AS n FROM events', format: 'JSONEachRow' });
      return Number((await rs.json<{ n: string }>())[0]!.n);
    } finally {
      await client.close();
    }
  };
  captured.push(...(await capture(cap.url, 'before', 40)));
  await waitFor(
    async () => ((await storedCount(front.url)) === captured.length ? true : undefined),
    30_000,
    'the first events to be stored',
  );

  await t.test('killed: SIGTERM exits promptly with code 1, saying what is left on the bus', async (t) => {
    await front.kill();
    captured.push(...(await capture(cap.url, 'killed', 40)));
    // Ingest has been handed the batch and failed to commit it: it waits on the bus for a redelivery.
    await waitFor(
      async () => (metricValue(await first.metrics(), 'weir_bus_nak_total') > 0 ? true : undefined),
      30_000,
      'ingest to fail a commit',
    );
    const { code, ms } = await terminate(first, KILLED_DEADLINE_SECONDS);
    t.comment(`exited ${code} after ${ms} ms`);
    t.equal(code, 1, 'exit code 1: a step of the shutdown failed');
    t.ok(ms < KILLED_DEADLINE_SECONDS * 1000, `before the deadline (${ms} ms)`);
    t.match(
      errorLines(first.output()).at(-1),
      {
        exitCode: 1,
        msg: /^shutdown finished with a failed step: \d+ batch\(es\) .* left unacknowledged on the bus and will be redelivered/,
      },
      'the last line says the batches are left on the bus',
      { output: first.output().slice(-4000) },
    );
  });

  // ClickHouse returns (on another port: the front's own choice), and a new ingest takes the partitions.
  front = await startFront({ dataDir: chDir });
  fronts.push(front);
  const second = await ingest(front.url);
  await waitFor(
    async () => ((await storedCount(front.url)) === captured.length ? true : undefined),
    60_000,
    'the events left on the bus to be stored by the new ingest',
  );

  await t.test('frozen: SIGTERM exits at the deadline with code 3 and the line', async (t) => {
    await front.pause();
    captured.push(...(await capture(cap.url, 'frozen', 40)));
    await waitFor(
      async () => ((await ackPending(nats.url)) > 0 ? true : undefined),
      30_000,
      'ingest to be handed the batch',
    );
    const { code, ms } = await terminate(second);
    t.comment(`exited ${code} after ${ms} ms`);
    t.equal(code, 3, 'exit code 3: the shutdown was cut short');
    t.ok(ms >= DEADLINE_SECONDS * 1000 - 100, `not before the deadline (${ms} ms)`);
    const last = errorLines(second.output()).at(-1);
    t.match(
      last,
      {
        exitCode: 3,
        step: 'stop consuming',
        msg: /shutdown not finished within 3 s .*unacknowledged on the bus and will be redelivered/,
      },
      'one line names the step cut short and what it leaves',
    );
    front.resume();
  });

  const third = await ingest(front.url);
  await waitFor(
    async () => ((await storedCount(front.url)) >= captured.length ? true : undefined),
    60_000,
    'every event to be stored once ClickHouse answers again',
  );
  await waitStreamDrained(nats.url, 30_000);
  const client = createClient({ url: front.url, database: DATABASE });
  clients.push(client);
  const rs = await client.query({
    query: 'SELECT toString(uuid) AS u, count() AS n FROM events GROUP BY u',
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ u: string; n: string }>();
  t.same(
    rows.filter((r) => Number(r.n) !== 1).map((r) => r.u),
    [],
    'no event is stored twice',
  );
  t.same(new Set(rows.map((r) => r.u)), new Set(captured), 'every event captured is stored');
  t.equal(rows.length, captured.length);

  const healthy = await terminate(third);
  t.equal(healthy.code, 0, `with ClickHouse and NATS answering, SIGTERM exits 0 (${healthy.ms} ms)`);
  t.equal(await cap.stop(), 0, 'capture exits 0');
  const admin = createClient({ url: front.url });
  await admin.command({ query: `DROP DATABASE IF EXISTS \`${DATABASE}\`` });
  await admin.close();
});

await t.test('weir start over JetStream whose nats-server is frozen', async (t) => {
  const nats = await startNatsServer();
  servers.push(nats);
  const dataDir = dir();
  const weir = await spawnWeir(dataDir, {
    WEIR_NATS_URL: nats.url,
    WEIR_SHUTDOWN_DEADLINE_SECONDS: String(DEADLINE_SECONDS),
    WEIR_LOG_LEVEL: 'info',
  });
  weirs.push(weir);
  const uuids = await capture(weir.url, 'nats-frozen', 30);
  // Consumed, committed and acknowledged: the stream is a work queue.
  await waitStreamDrained(nats.url, 30_000);
  await nats.pause();
  const { code, ms } = await terminate(weir);
  nats.resume();
  t.comment(`exited ${code} after ${ms} ms`);
  t.equal(code, 3, 'exit code 3: the shutdown was cut short');
  const last = errorLines(weir.output()).at(-1);
  t.match(
    last,
    { exitCode: 3, msg: /^shutdown not finished within 3 s \(WEIR_SHUTDOWN_DEADLINE_SECONDS\): exiting/ },
    'one line says the deadline passed and which step it cut short',
  );
  t.ok(last?.step, `the step is named (${last?.step})`);
  t.same(
    await storedCounts(dataDir, 'nats-frozen'),
    { rows: uuids.length, uuids: uuids.length, final: uuids.length },
    'what was committed before is stored, once',
  );
});

await t.test('a second SIGTERM during a shutdown that waits exits at once with code 3', async (t) => {
  const nats = await startNatsServer();
  servers.push(nats);
  const weir = await spawnWeir(dir(), {
    WEIR_NATS_URL: nats.url,
    // Long enough that only the second signal can explain a prompt exit.
    WEIR_SHUTDOWN_DEADLINE_SECONDS: '60',
    WEIR_LOG_LEVEL: 'info',
  });
  weirs.push(weir);
  await nats.pause();
  weir.child.kill('SIGTERM');
  await waitFor(
    () => Promise.resolve(weir.output().includes('"msg":"shutting down"') ? true : undefined),
    10_000,
    'the shutdown to begin',
  );
  const { code, ms } = await terminate(weir);
  nats.resume();
  t.equal(code, 3, `exit code 3 (${ms} ms after the second signal)`);
  t.match(
    errorLines(weir.output()).at(-1),
    { exitCode: 3, msg: /^SIGTERM again during the shutdown: exiting/ },
    'one line says so',
  );
});
