/**
 * kill -9 of the ingest process in the middle of a stream of events, then a restart: every event capture
 * answered 200 is stored exactly once. Batches the dead process had taken but not acknowledged are delivered
 * again after the ack wait; those it had already committed are recognised by the duplicate window, which the
 * new process warms from the store.
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
import { tempDir, waitFor } from '../helpers/weir.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const dataDir = tempDir();
// A short ack wait so the dead process's batches come back within the test, not after 30 s.
const ingestEnv = { WEIR_NATS_URL: nats.url, WEIR_DATA_DIR: dataDir, WEIR_BUS_ACK_WAIT_MS: '2000' };
const running: RoleProcess[] = [];
t.teardown(async () => {
  await Promise.all(running.map((r) => r.kill9()));
});

t.test('kill -9 of ingest mid-stream, then a restart: exact counts', async (t) => {
  const first = await spawnRole('ingest', ingestEnv);
  running.push(first);
  const capture = await spawnRole('capture', { WEIR_NATS_URL: nats.url, WEIR_DATA_DIR: dataDir });
  running.push(capture);

  const total = 4 * 100 * 100;
  let acked = 0;
  const load = runLoad({
    urls: [capture.url],
    event: 'crash',
    clients: 4,
    requests: 100,
    eventsPerRequest: 100,
    retry: true,
    onProgress: (n) => (acked = n),
  });
  // Kill once ingest has committed a good part, while capture is still taking events.
  await waitFor(
    async () => (metricValue(await first.metrics(), 'weir_ingest_events_total') >= 8_000 ? true : undefined),
    60_000,
    'ingest to commit 8000 events',
  );
  const killedAt = acked;
  await first.kill9();
  const second = await spawnRole('ingest', ingestEnv);
  running.push(second);

  const result = await load;
  t.ok(killedAt < total, `ingest was killed mid-stream (${killedAt} of ${total} events acknowledged then)`);
  t.equal(result.acked.size, total, 'capture answered 200 to every request (NATS kept them)');

  await waitStreamDrained(nats.url, 90_000);
  const redelivered = metricValue(await second.metrics(), 'weir_bus_redelivered_messages_total');
  const duplicates = metricValue(await second.metrics(), 'weir_ingest_duplicate_events_total');
  t.comment(`after the restart: ${redelivered} batches redelivered, ${duplicates} duplicate events dropped`);
  t.equal(await second.stop(), 0, 'the restarted ingest drains and exits 0');

  t.same(
    await storedCounts(dataDir, 'crash'),
    { rows: total, uuids: total, final: total },
    'each stored once',
  );
  const stored = await storedUuids(dataDir, 'crash');
  t.ok(
    [...result.acked].every((u) => stored.has(u)),
    'every event answered 200 is stored',
  );
});
