/**
 * nats-server stopped and started again under load, with `weir capture` and `weir ingest` as separate
 * processes: while it is down capture answers 503 with Retry-After (never 200) and neither role is ready;
 * both reconnect by themselves, and once clients have retried, every event is stored exactly once. Either role
 * stopped while NATS is down still shuts down cleanly.
 */
import t from 'tap';
import { startNatsServer } from '../helpers/nats-server.ts';
import {
  metricValue,
  runLoad,
  spawnRole,
  storedCounts,
  storedUuids,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { PROJECT_API_KEY, post, tempDir, waitFor } from '../helpers/weir.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const dataDir = tempDir();
const env = { WEIR_NATS_URL: nats.url, WEIR_DATA_DIR: dataDir, WEIR_PUBLISH_TIMEOUT_MS: '2000' };
// Batches a dying server had sent but the client had not read come back after the ack wait: keep it short.
const ingest = await spawnRole('ingest', { ...env, WEIR_BUS_ACK_WAIT_MS: '3000' });
const capture = await spawnRole('capture', env);
const running: RoleProcess[] = [ingest, capture];
t.teardown(async () => {
  await Promise.all(running.map((r) => r.kill9()));
});

/** What each test sent, checked against the store at the end. */
const sent: { outage?: Set<string> } = {};
const TOTAL = 4 * 60 * 50;
/** Waits until `/_ready` of every one of `roles` answers `status`. */
async function untilReady(
  roles: readonly RoleProcess[],
  status: number,
  timeoutMs: number,
  what: string,
): Promise<void> {
  await waitFor(
    async () => {
      for (const r of roles) if ((await fetch(`${r.url}/_ready`)).status !== status) return undefined;
      return true;
    },
    timeoutMs,
    what,
  );
}

t.test('NATS down and up again under load: 503s while down, both roles back by themselves', async (t) => {
  const total = TOTAL;
  let acked = 0;
  const load = runLoad({
    urls: [capture.url],
    event: 'outage',
    clients: 4,
    requests: 60,
    eventsPerRequest: 50,
    retry: true,
    onProgress: (n) => (acked = n),
  });
  await waitFor(() => Promise.resolve(acked >= 2_000 ? true : undefined), 60_000, 'load to be running');
  await nats.stop();
  const stoppedAt = acked;

  // While NATS is down: a request is refused with 503 + Retry-After, and neither role is ready.
  const refused = await post(
    `${capture.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'during outage', distinct_id: 'o' }),
  );
  t.equal(refused.status, 503, 'capture refuses while NATS is down');
  t.equal(refused.headers.get('retry-after'), '1');
  t.match(refused.json, { type: 'unavailable', code: 'unavailable' });
  await untilReady([capture, ingest], 503, 15_000, 'both roles to report not ready');
  t.pass('capture and ingest /_ready answer 503 while NATS is down');
  t.ok(
    acked - stoppedAt < 1_000,
    `hardly anything acknowledged while down (${acked - stoppedAt} events in flight)`,
  );

  await nats.restart();
  await untilReady([capture, ingest], 200, 30_000, 'both roles to reconnect and be ready');
  t.pass('both roles reconnected by themselves');

  const result = await load;
  t.equal(result.acked.size, total, 'with retries, every request was answered 200 in the end');
  t.ok(
    (result.statuses.get(503) ?? 0) > 0,
    `clients saw 503s during the outage (${result.statuses.get(503)})`,
  );
  t.equal(
    result.wellFormed503s,
    result.statuses.get(503),
    'every 503 carried Retry-After and code unavailable',
  );
  t.same(
    [...result.statuses.keys()].filter((s) => s !== 200 && s !== 503 && s !== 0),
    [],
    'no other status than 200 or 503',
  );

  sent.outage = result.acked;
});

t.test(
  'a publish JetStream does not acknowledge in time is a 503, and the retry is stored once',
  async (t) => {
    const body = JSON.stringify({
      api_key: PROJECT_API_KEY,
      event: 'frozen',
      distinct_id: 'f',
      uuid: '0190a1b2-c3d4-7e5f-8a9b-000000000f0f',
    });
    // A frozen server keeps its connections open: no disconnect, just no ack.
    await nats.pause();
    t.teardown(() => nats.resume());
    const started = Date.now();
    const res = await post(`${capture.url}/i/v0/e/`, body);
    const waited = Date.now() - started;
    nats.resume();
    t.equal(res.status, 503, 'refused, not acknowledged');
    t.equal(res.headers.get('retry-after'), '1');
    t.ok(waited >= 1_900, `after the publish timeout (${waited} ms, WEIR_PUBLISH_TIMEOUT_MS=2000)`);
    t.ok(
      metricValue(await capture.metrics(), 'weir_bus_publish_failures_total', 'reason="timeout"') >= 1,
      'counted as a publish timeout',
    );
    const retried = await waitFor(
      async () => {
        const r = await post(`${capture.url}/i/v0/e/`, body);
        return r.status === 200 ? r : undefined;
      },
      30_000,
      'the retry to be accepted',
    );
    t.equal(retried.status, 200);
  },
);

t.test('after ingest stops, every event is stored exactly once', async (t) => {
  const started = Date.now();
  await waitStreamDrained(nats.url, 90_000);
  const m = await ingest.metrics();
  t.comment(
    `drained in ${Date.now() - started} ms; ${metricValue(m, 'weir_bus_redelivered_messages_total')} batches ` +
      `redelivered, ${metricValue(m, 'weir_ingest_duplicate_events_total')} duplicate events dropped`,
  );
  t.equal(await ingest.stop(), 0, 'ingest drains and exits 0');
  t.same(
    await storedCounts(dataDir, 'outage'),
    { rows: TOTAL, uuids: TOTAL, final: TOTAL },
    'each stored once',
  );
  const stored = await storedUuids(dataDir, 'outage');
  t.ok(
    [...sent.outage!].every((u) => stored.has(u)),
    'every event answered 200 is stored',
  );
  t.same(await storedCounts(dataDir, 'frozen'), { rows: 1, uuids: 1, final: 1 }, 'the timed-out event once');
});

t.test('capture stopped while NATS is down still shuts down cleanly', async (t) => {
  await nats.stop();
  await untilReady([capture], 503, 15_000, 'capture to see NATS gone');
  t.equal(await capture.stop(), 0, 'exits 0: draining needs no server when there is none');
});

t.test('ingest stopped while NATS is down also exits 0, keeping what it stored', async (t) => {
  await nats.restart();
  const again = await spawnRole('ingest', env);
  running.push(again);
  await untilReady([again], 200, 30_000, 'the new ingest to be ready');
  await nats.stop();
  await untilReady([again], 503, 15_000, 'ingest to see NATS gone');
  t.equal(await again.stop(), 0, 'exits 0');
  t.same(await storedCounts(dataDir, 'frozen'), { rows: 1, uuids: 1, final: 1 }, 'its store intact');
});
