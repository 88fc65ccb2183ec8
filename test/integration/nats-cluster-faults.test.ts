/**
 * Faults of the kind Jepsen found in NATS (issue 44), on a real three-node nats-server cluster on loopback
 * under a steady load through `weir capture` and `weir ingest`: every node killed -9 at once, then
 * restarted; and one node's stream files cut short while it is down. Each time every event capture answered
 * 200 is stored, and stored once. A kill -9 keeps what the servers wrote in the page cache, so this checks
 * Weir and the servers' recovery, not what an OS crash or a power cut would lose (docs/operations.md,
 * "Durability of an acknowledgement").
 */
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startNatsCluster } from '../helpers/nats-server.ts';
import {
  spawnRole,
  startLoad,
  storedCounts,
  storedUuids,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { tempDir, waitFor } from '../helpers/weir.ts';

const cluster = await startNatsCluster(3);
t.teardown(() => cluster.close());

async function roles(t: Test, dataDir: string): Promise<{ ingest: RoleProcess; capture: RoleProcess }> {
  const env = { WEIR_NATS_URL: cluster.url, WEIR_DATA_DIR: dataDir, WEIR_BUS_ACK_WAIT_MS: '2000' };
  const ingest = await spawnRole('ingest', env);
  t.teardown(() => ingest.kill9());
  const capture = await spawnRole('capture', { WEIR_NATS_URL: cluster.url, WEIR_DATA_DIR: dataDir });
  t.teardown(() => capture.kill9());
  return { ingest, capture };
}

/** A steady load through capture (retrying each refusal, as an SDK does), once 5,000 events are in. */
async function loadUnderWay(capture: RoleProcess, event: string): Promise<ReturnType<typeof startLoad>> {
  const load = startLoad({
    urls: [capture.url],
    event,
    clients: 4,
    requests: 100,
    eventsPerRequest: 50,
    retry: true,
  });
  await waitFor(
    () => Promise.resolve(load.acked.size >= 5_000 ? true : undefined),
    60_000,
    '5000 events acknowledged',
  );
  return load;
}

/** Waits for the load, the stream to drain and ingest to stop, then checks each acknowledged event once. */
async function everyAckStoredOnce(
  t: Test,
  load: ReturnType<typeof startLoad>,
  parts: { ingest: RoleProcess; capture: RoleProcess },
  dataDir: string,
  event: string,
): Promise<void> {
  await load.done;
  t.comment(`answers: ${JSON.stringify(Object.fromEntries(load.statuses))}`);
  await waitStreamDrained(cluster.url, 120_000);
  t.equal(await parts.ingest.stop(), 0, 'ingest drains and exits 0');
  await parts.capture.stop();
  const counts = await storedCounts(dataDir, event);
  t.equal(counts.rows, counts.uuids, 'none stored twice');
  const stored = await storedUuids(dataDir, event);
  const lost = [...load.acked].filter((u) => !stored.has(u));
  t.equal(lost.length, 0, `every one of the ${load.acked.size} events answered 200 is stored`);
}

t.test(
  'every node killed -9 at once under load, then restarted: nothing acknowledged lost, none twice',
  async (t) => {
    const dataDir = tempDir();
    const parts = await roles(t, dataDir);
    const load = await loadUnderWay(parts.capture, 'all-killed');
    const before = load.acked.size;
    await Promise.all(cluster.nodes.map((n) => n.kill9()));
    t.comment(`killed all three with ${before} events acknowledged`);
    await Promise.all(cluster.nodes.map((n) => n.restart()));
    await everyAckStoredOnce(t, load, parts, dataDir, 'all-killed');
    t.ok(load.acked.size > before, 'capture took events again after the restart');
  },
);

t.test("one node's stream files cut short while it is down: nothing acknowledged lost", async (t) => {
  const dataDir = tempDir();
  const parts = await roles(t, dataDir);
  const load = await loadUnderWay(parts.capture, 'truncated');
  const node = cluster.nodes[2]!;
  await node.kill9();
  const cut = cutStreamFiles(node.storeDir, 'EVENTS');
  t.ok(cut.length > 0, `cut ${cut.length} message block(s) of EVENTS to half`);
  await node.restart();
  await everyAckStoredOnce(t, load, parts, dataDir, 'truncated');
});

/** Cuts every message block of a stream in a node's store to half its length; the paths cut. */
function cutStreamFiles(storeDir: string, stream: string): string[] {
  const cut: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.blk') && path.includes(`/streams/${stream}/`)) {
        truncateSync(path, Math.floor(statSync(path).size / 2));
        cut.push(path);
      }
    }
  };
  walk(storeDir);
  return cut;
}
