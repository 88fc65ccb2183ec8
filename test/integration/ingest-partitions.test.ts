/**
 * How ingest splits a batch by partition, on real chDB: the partitions whose events need nothing from the
 * store are processed at once as one job, while an event that waits for a person lookup holds up only its
 * own partition — and if the joint job itself must wait (a cached person evicted meanwhile), every partition
 * it took is held until it is done, so their later events still come after it. Person lookups are held at a
 * gate to see it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import t from 'tap';
import type { CapturedEvent } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { partitionOf } from '../../src/core/partition.ts';
import type { Store } from '../../src/core/ports.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';

const PARTITIONS = 16;
const dataDir = await mkdtemp(join(tmpdir(), 'weir-ingest-partitions-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const logLines: string[] = [];
const logger = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
);
const deps = { logger, metrics: new Metrics({ defaultMetrics: false }) };
const inner = await openEmbeddedStore(
  { dataDir, storeFsync: false, storeMaxPendingMb: 64, storeApplyIntervalMs: 60_000 },
  deps,
);
t.teardown(() => inner.close());

/** The store, with person lookups (by distinct id) held while the gate is closed. */
let gate: Promise<void> | undefined;
let openGate = (): void => undefined;
let lookups = 0;
const store: Store = {
  soleWriter: true,
  commitsInFlight: inner.commitsInFlight,
  insert: (table, rows) => inner.insert(table, rows),
  encode: (rows) => inner.encode(rows),
  insertValues: (table, columns, rows) => inner.insertValues(table, columns, rows),
  insertEncoded: (table, rows, chunks, columns) => inner.insertEncoded(table, rows, chunks, columns),
  async query(sql, params, options) {
    if (sql.includes('FROM person_distinct_ids FINAL')) {
      lookups++;
      if (gate) await gate;
    }
    return inner.query(sql, params, options);
  },
  command: (sql) => inner.command(sql),
  deleteRows: (table, where, params) => inner.deleteRows(table, where, params),
  purgeDeleted: (table) => inner.purgeDeleted(table),
  accepting: () => inner.accepting(),
  visible: () => inner.visible(),
  close: () => Promise.resolve(),
};
function closeGate(): void {
  gate = new Promise((resolve) => (openGate = resolve));
}
function release(): void {
  gate = undefined;
  openGate();
}

function event(distinctId: string, tag: string, personless = false): CapturedEvent {
  const now = Date.now();
  return {
    projectId: 1,
    uuid: randomUUID(),
    event: tag,
    distinctId,
    timestamp: now,
    properties: personless ? { $process_person_profile: false } : {},
    receivedAt: now,
  };
}

/** A distinct id starting with `prefix` whose partition is (or, with `not`, is not) `partition`. */
function idIn(prefix: string, partition: number, not = false): string {
  for (let i = 0; ; i++) {
    const id = `${prefix}-${i}`;
    if ((partitionOf(1, id, PARTITIONS) === partition) !== not) return id;
  }
}

/** Hands ingest a live batch of these events; resolves when they are committed. */
function send(ingest: IngestService, ...events: CapturedEvent[]): Promise<void> {
  return ingest.handle({ lane: 'live', events, warnings: [] });
}

/** Tracks whether a promise has settled. */
function watch(p: Promise<void>): { done: boolean; promise: Promise<void> } {
  const w = { done: false, promise: p };
  void p.then(
    () => (w.done = true),
    () => (w.done = true),
  );
  return w;
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function stored(tag: string): Promise<string[]> {
  const rows = await inner.query<{ distinct_id: string }>(
    'SELECT distinct_id FROM events FINAL WHERE event = {tag:String} ORDER BY distinct_id',
    { tag },
  );
  return rows.map((r) => r.distinct_id);
}

t.test('an event waiting for a lookup holds up its own partition only', async (t) => {
  // Not started: the known ids are not read, so every new id is looked up.
  const ingest = new IngestService(
    { ingestPartitions: PARTITIONS, commitMaxRows: 50_000, dedupWindow: 1000 },
    { store, ...deps },
  );
  const x = 'iso-x';
  const px = partitionOf(1, x, PARTITIONS);
  const y = idIn('iso-y', px, true);
  const z = idIn('iso-z', px);
  closeGate();
  const before = lookups;
  const waiting = watch(send(ingest, event(x, 'iso')));
  await until('the lookup of the new id', () => lookups > before);
  const behind = watch(send(ingest, event(z, 'iso', true)));
  await send(ingest, event(y, 'iso', true));
  t.pass('an event of another partition is committed meanwhile');
  t.notOk(waiting.done, 'the looked-up event still waits');
  t.notOk(behind.done, 'and so does the later event of its partition, although it needs no lookup');
  release();
  await Promise.all([waiting.promise, behind.promise]);
  t.same(await stored('iso'), [x, y, z].sort(), 'all three are stored');
  await ingest.drain();
});

t.test('a joint job that must wait after all holds every partition it took', async (t) => {
  // One person cached at most: a new person in the joint job evicts the cached one it also holds.
  const ingest = new IngestService(
    { ingestPartitions: PARTITIONS, commitMaxRows: 50_000, dedupWindow: 1000, personCacheSize: 1 },
    { store, ...deps },
  );
  await ingest.start(0);
  await until('the known ids to be read', () => logLines.some((l) => l.includes('known distinct ids read')));
  const a = 'joint-a';
  const pa = partitionOf(1, a, PARTITIONS);
  await send(ingest, event(a, 'joint-first'));
  // What ingest wrote stays pinned in its cache until the store shows it: a read applies the log.
  await inner.query('SELECT 1');
  await new Promise((r) => setImmediate(r));

  const b = idIn('joint-b', pa, true);
  const pb = partitionOf(1, b, PARTITIONS);
  const c = idIn('joint-c', pa); // personless, in a's partition
  let d = idIn('joint-d', pa, true); // personless, in neither partition
  for (let i = 0; partitionOf(1, d, PARTITIONS) === pb; i++) d = idIn(`joint-d${i}`, pa, true);

  closeGate();
  const before = lookups;
  // b is new (known ids rule it out) and a is cached: both ready, so one joint job takes both partitions.
  const joint = watch(send(ingest, event(b, 'joint'), event(a, 'joint')));
  await until("the lookup of a's evicted person", () => lookups > before);
  const held = watch(send(ingest, event(c, 'joint', true)));
  await send(ingest, event(d, 'joint', true));
  t.pass('a partition the joint job did not take goes on');
  t.notOk(joint.done, 'the joint job waits for the lookup');
  t.notOk(held.done, 'a later event of a partition it took waits behind it');
  release();
  await Promise.all([joint.promise, held.promise]);
  t.same(await stored('joint'), [a, b, c, d].sort(), 'every event is stored');
  await ingest.drain();
});
