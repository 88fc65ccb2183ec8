/**
 * A 100k-event historical migration (`historical_migration: true`, batches of 1000 to /batch/) through
 * separate capture and ingest processes keeps its order. "Order" as the store shows it: every event's
 * `person_properties` is the person after exactly the events before it (each event `$set`s its sequence
 * number, so a reordering shows as a mismatch), the persons end with their last event's value, and the
 * inserts commit the sequence in order. The timestamps run backwards, so none of this can come from sorting
 * by time.
 */
import t from 'tap';
import { startNatsServer } from '../helpers/nats-server.ts';
import {
  metricValue,
  spawnRole,
  sqlRows,
  storedCounts,
  waitStreamDrained,
  type RoleProcess,
} from '../helpers/roles.ts';
import { PROJECT_API_KEY, post, tempDir } from '../helpers/weir.ts';

const nats = await startNatsServer();
t.teardown(() => nats.close());
const dataDir = tempDir();
const env = { WEIR_NATS_URL: nats.url, WEIR_DATA_DIR: dataDir };
const ingest = await spawnRole('ingest', env);
const capture = await spawnRole('capture', env);
const running: RoleProcess[] = [ingest, capture];
t.teardown(async () => {
  await Promise.all(running.map((r) => r.kill9()));
});

const TOTAL = 100_000;
const BATCH = 1_000;
const PERSONS = 100;

t.test('a 100k-event historical migration keeps its order through JetStream', async (t) => {
  const newest = Date.UTC(2022, 0, 1);
  for (let b = 0; b < TOTAL / BATCH; b++) {
    const batch = Array.from({ length: BATCH }, (_, i) => {
      const seq = b * BATCH + i;
      return {
        event: 'migrated',
        timestamp: new Date(newest - seq * 1000).toISOString(),
        properties: { distinct_id: `m-${seq % PERSONS}`, seq, $set: { last_seq: seq } },
      };
    });
    const res = await post(
      `${capture.url}/batch/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, historical_migration: true, batch }),
    );
    if (res.status !== 200) t.fail(`batch ${b} answered ${res.status}: ${res.text}`);
  }
  t.equal(metricValue(await capture.metrics(), 'weir_capture_events_total', 'lane="historical"'), TOTAL);
  t.equal(
    metricValue(await capture.metrics(), 'weir_capture_events_total', 'lane="live"'),
    0,
    'none on live',
  );

  await waitStreamDrained(nats.url, 120_000);
  t.equal(await ingest.stop(), 0, 'ingest drains and exits 0');

  t.same(await storedCounts(dataDir, 'migrated'), { rows: TOTAL, uuids: TOTAL, final: TOTAL }, 'each once');

  const [mismatch] = await sqlRows<{ n: string; first: string | null }>(
    dataDir,
    `SELECT count() AS n, min(JSONExtractInt(properties, 'seq')) AS first FROM events
     WHERE event = 'migrated'
       AND JSONExtractInt(person_properties, 'last_seq') != JSONExtractInt(properties, 'seq')`,
  );
  t.equal(Number(mismatch?.n), 0, 'every event saw its person after exactly the events before it');

  const persons = await sqlRows<{ d: string; last: string }>(
    dataDir,
    `SELECT d.distinct_id AS d, JSONExtractInt(p.properties, 'last_seq') AS last
     FROM person_distinct_ids AS d FINAL JOIN persons AS p FINAL ON p.id = d.person_id
     WHERE d.distinct_id LIKE 'm-%'`,
  );
  t.equal(persons.length, PERSONS);
  t.ok(
    persons.every((p) => Number(p.last) === TOTAL - PERSONS + Number(p.d.slice(2))),
    "each person ends with its last event's $set",
  );

  // Each insert holds a contiguous run of the sequence, and the inserts follow it.
  const inserts = await sqlRows<{ lo: string; hi: string; n: string }>(
    dataDir,
    `SELECT min(JSONExtractInt(properties, 'seq')) AS lo, max(JSONExtractInt(properties, 'seq')) AS hi,
            count() AS n
     FROM events WHERE event = 'migrated' GROUP BY _inserted_at ORDER BY _inserted_at`,
  );
  const runs = inserts.map((r) => ({ lo: Number(r.lo), hi: Number(r.hi), n: Number(r.n) }));
  t.ok(runs.length > 1, `${runs.length} inserts`);
  t.ok(
    runs.every((r, i) => r.hi - r.lo + 1 === r.n && (i === 0 || runs[i - 1]!.hi + 1 === r.lo)),
    'inserted in sequence order, without gaps or overlaps',
  );
});
