/**
 * Persons and groups shared by several ingest processes (issue 28, docs/persons-across-processes.md), on a
 * real nats-server and real chDB. Each "process" is an IngestService with a NATS connection, a shared state
 * and caches of its own, over one store: for persons that is what separate processes are. Events go to the
 * instance that owns their partition (`partition mod instances`, as leases share them out), so a merge's two
 * ids usually meet two instances. Each run uses a project of its own.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import t from 'tap';
import type { CapturedEvent } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { partitionOf } from '../../src/core/partition.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { KvBucket } from '../../src/ingest/shared/kv-bucket.ts';
import { mergedAway, type PersonRecord } from '../../src/ingest/shared/person-records.ts';
import { SharedState } from '../../src/ingest/shared/shared-state.ts';
import { linkKey, personKey } from '../../src/ingest/shared/state-keys.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { canonical, personStream, type StoredState, type StreamEvent } from '../helpers/person-stream.ts';

const PARTITIONS = 16;
const BUCKET = 'weir_persons_test';
const nats = await startNatsServer();
t.teardown(() => nats.close());
const dataDir = await mkdtemp(join(tmpdir(), 'weir-shared-persons-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const deps = { logger: createLogger('warn'), metrics: new Metrics({ defaultMetrics: false }) };
const store = await openEmbeddedStore(
  { dataDir, storeFsync: false, storeMaxPendingMb: 64, storeApplyIntervalMs: 50 },
  deps,
);
t.teardown(() => store.close());

const connections: NatsConnection[] = [];
const states: SharedState[] = [];
t.teardown(async () => {
  for (const s of states) s.close();
  for (const nc of connections) await nc.close();
});
async function natsConnection(): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  return nc;
}
const bucket = await KvBucket.open(await natsConnection(), { bucket: BUCKET });

interface Instance {
  readonly ingest: IngestService;
  readonly state: SharedState | undefined;
  readonly metrics: Metrics;
}

/** An ingest "process": its own connection, shared state and caches (none: today's single-process state). */
async function instance(shared: boolean): Promise<Instance> {
  const state = shared ? await SharedState.open(await natsConnection(), { bucket: BUCKET }) : undefined;
  if (state) states.push(state);
  const metrics = new Metrics({ defaultMetrics: false });
  const ingest = new IngestService(
    { ingestPartitions: PARTITIONS, commitMaxRows: 50_000, dedupWindow: 10_000 },
    { store, metrics, logger: deps.logger, sharedState: state },
  );
  return { ingest, state, metrics };
}

let nextProject = 100;
/** A run: a project of its own and its instances. */
async function run(instances: number, shared = true): Promise<{ project: number; all: Instance[] }> {
  const all = await Promise.all(Array.from({ length: instances }, () => instance(shared)));
  return { project: nextProject++, all };
}

function captured(project: number, e: StreamEvent): CapturedEvent {
  const timestamp = Date.parse(e.timestamp);
  return {
    projectId: project,
    uuid: e.uuid,
    event: e.event,
    distinctId: e.distinct_id,
    timestamp,
    properties: e.properties,
    receivedAt: timestamp,
  };
}

function ownerOf(project: number, distinctId: string, instances: number): number {
  return partitionOf(project, distinctId, PARTITIONS) % instances;
}

/**
 * Sends events to the instances owning their partitions, in batches of `batch` in stream order, every instance
 * at once; resolves when all are committed and every instance's caches have seen every change.
 */
async function feed(
  r: { project: number; all: Instance[] },
  events: readonly StreamEvent[],
  batch = 25,
): Promise<void> {
  const per = r.all.map(() => [] as CapturedEvent[]);
  for (const e of events) per[ownerOf(r.project, e.distinct_id, r.all.length)]!.push(captured(r.project, e));
  await Promise.all(
    per.map(async (evs, i) => {
      for (let at = 0; at < evs.length; at += batch)
        await r.all[i]!.ingest.handle({ lane: 'live', events: evs.slice(at, at + batch), warnings: [] });
    }),
  );
  await Promise.all(r.all.map((x) => x.state?.fence() ?? Promise.resolve()));
}

const STATE_SQL: Record<keyof StoredState, string> = {
  persons:
    'SELECT toString(id) AS id, properties, is_identified FROM persons FINAL WHERE project_id = {p:UInt64} AND is_deleted = 0',
  links:
    'SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids FINAL WHERE project_id = {p:UInt64} AND is_deleted = 0',
  events:
    'SELECT toString(uuid) AS uuid, distinct_id, toString(person_id) AS person_id, `$group_0` AS g0 FROM events WHERE project_id = {p:UInt64}',
  groups: 'SELECT group_type_index, group_key, properties FROM groups FINAL WHERE project_id = {p:UInt64}',
  types: 'SELECT group_type, group_type_index FROM group_type_mapping FINAL WHERE project_id = {p:UInt64}',
  warnings: 'SELECT type, count() AS n FROM ingestion_warnings WHERE project_id = {p:UInt64} GROUP BY type',
};

async function stateOf(project: number): Promise<StoredState> {
  const out: Record<string, unknown> = {};
  for (const [k, sql] of Object.entries(STATE_SQL)) out[k] = await store.query(sql, { p: project });
  return out as unknown as StoredState;
}

/** The lead's phased stream, with a merge chain across phases: B into A, then A (identified now) refused into C. */
function stream(): StreamEvent[][] {
  const phases = personStream(40);
  let n = 0;
  const ev = (event: string, distinctId: string, properties: Record<string, unknown> = {}): StreamEvent => ({
    event,
    uuid: randomUUID(),
    timestamp: new Date(Date.parse('2026-11-21T00:00:00Z') + ++n * 1000).toISOString(),
    distinct_id: distinctId,
    properties,
  });
  phases[0]!.push(
    ev('$pageview', 'chain-b', { $set: { b: 1, who: 'b' } }),
    ev('x', 'chain-c', { $set: { c: 1 } }),
  );
  phases[1]!.push(ev('$identify', 'chain-a', { $anon_distinct_id: 'chain-b', $set: { who: 'a' } }));
  phases[2]!.push(ev('$identify', 'chain-c', { $anon_distinct_id: 'chain-a', $set: { c: 2 } }));
  phases[3]!.push(ev('$pageview', 'chain-b'), ev('$pageview', 'chain-a'), ev('$pageview', 'chain-c'));
  return phases;
}

t.test('one, and three instances sharing persons, give what one process gives', async (t) => {
  const phases = stream();
  const reference = await run(1, false);
  const one = await run(1);
  const three = await run(3);
  for (const phase of phases)
    await Promise.all([feed(reference, phase), feed(one, phase), feed(three, phase)]);
  const expected = canonical(await stateOf(reference.project));
  t.same(canonical(await stateOf(one.project)), expected, 'one instance with shared state');
  t.same(canonical(await stateOf(three.project)), expected, 'three instances');
  const merged = (await stateOf(three.project)).links.filter((l) => l.distinct_id.startsWith('chain-'));
  t.equal(new Set(merged.filter((l) => l.distinct_id !== 'chain-c').map((l) => l.person_id)).size, 1);
});

/** A distinct id starting with `prefix` that the run's instance `owner` owns. */
function ownedBy(r: { project: number; all: Instance[] }, prefix: string, owner: number): string {
  for (let i = 0; ; i++) {
    const id = `${prefix}-${i}`;
    if (ownerOf(r.project, id, r.all.length) === owner) return id;
  }
}

let clock = Date.parse('2026-11-22T00:00:00Z');
function ev(event: string, distinctId: string, properties: Record<string, unknown> = {}): StreamEvent {
  return {
    event,
    uuid: randomUUID(),
    timestamp: new Date((clock += 1000)).toISOString(),
    distinct_id: distinctId,
    properties,
  };
}

/** Hands each event to instance `to` as a batch of its own, all at once; resolves when all are committed. */
async function race(r: { project: number; all: Instance[] }, sends: [number, StreamEvent][]): Promise<void> {
  await Promise.all(
    sends.map(([to, e]) =>
      r.all[to]!.ingest.handle({ lane: 'live', events: [captured(r.project, e)], warnings: [] }),
    ),
  );
  await Promise.all(r.all.map((x) => x.state?.fence() ?? Promise.resolve()));
}

async function personIdOf(project: number, distinctId: string): Promise<string | undefined> {
  const [row] = await store.query<{ person_id: string }>(
    `SELECT toString(person_id) AS person_id FROM person_distinct_ids FINAL
     WHERE project_id = {p:UInt64} AND distinct_id = {d:String}`,
    { p: project, d: distinctId },
  );
  return row?.person_id;
}

interface PersonRow {
  properties: Record<string, unknown>;
  is_identified: number;
  is_deleted: number;
}
async function personRow(project: number, id: string): Promise<PersonRow | undefined> {
  const [row] = await store.query<{ properties: string; is_identified: number; is_deleted: number }>(
    `SELECT properties, is_identified, is_deleted FROM persons FINAL WHERE project_id = {p:UInt64} AND id = {id:UUID}`,
    { p: project, id },
  );
  return row && { ...row, properties: JSON.parse(row.properties) as Record<string, unknown> };
}

async function mergeWarnings(project: number): Promise<Record<string, unknown>[]> {
  const rows = await store.query<{ details: string }>(
    `SELECT details FROM ingestion_warnings WHERE project_id = {p:UInt64} AND type = 'cannot_merge_already_identified'`,
    { p: project },
  );
  return rows.map((r) => JSON.parse(r.details) as Record<string, unknown>);
}

t.test('two instances merging one id into two persons at once: exactly one wins', async (t) => {
  const r = await run(2);
  const rounds = 10;
  const pairs = Array.from({ length: rounds }, (_, i) => ({
    left: ownedBy(r, `left${i}`, 0),
    right: ownedBy(r, `right${i}`, 1),
    anon: `anon${i}`,
    fresh: `fresh${i}`,
  }));
  await feed(
    r,
    pairs.flatMap((p) => [
      ev('$pageview', p.left, { $set: { side: 'left' } }),
      ev('$pageview', p.right, { $set: { side: 'right' } }),
      ev('$pageview', p.anon, { $set: { anon: true } }),
    ]),
  );
  // Each anonymous id (existing, or never seen) is claimed by two identifies on two instances at once.
  await race(
    r,
    pairs.flatMap((p): [number, StreamEvent][] => [
      [0, ev('$identify', p.left, { $anon_distinct_id: p.anon })],
      [1, ev('$identify', p.right, { $anon_distinct_id: p.anon })],
      [0, ev('$identify', p.left, { $anon_distinct_id: p.fresh })],
      [1, ev('$identify', p.right, { $anon_distinct_id: p.fresh })],
    ]),
  );
  const warnings = await mergeWarnings(r.project);
  t.equal(warnings.length, 2 * rounds, 'one identify of each two is refused');
  for (const p of pairs) {
    const left = await personIdOf(r.project, p.left);
    const right = await personIdOf(r.project, p.right);
    t.not(left, right, 'the two identified persons stay apart');
    for (const claimed of [p.anon, p.fresh]) {
      const owner = await personIdOf(r.project, claimed);
      t.ok(owner === left || owner === right, `${claimed} went to one of them`);
      const loser = owner === left ? p.right : p.left;
      t.equal(
        warnings.filter(
          (w) => w['sourcePersonDistinctId'] === claimed && w['targetPersonDistinctId'] === loser,
        ).length,
        1,
        'the other was refused',
      );
    }
    const anonOwner = await personRow(r.project, (await personIdOf(r.project, p.anon))!);
    t.equal(anonOwner?.properties['anon'], true, "the winner took the anonymous person's properties");
  }
});

t.test('$set through two ids of one person on two instances at once: no update lost', async (t) => {
  const r = await run(2);
  const one = ownedBy(r, 'set-one', 0);
  const two = ownedBy(r, 'set-two', 1);
  await feed(r, [ev('$identify', one, { $anon_distinct_id: two })]);
  const n = 25;
  await race(
    r,
    Array.from({ length: n }, (_, i): [number, StreamEvent][] => [
      [0, ev('e', one, { $set: { [`one${i}`]: i, last: 'one' } })],
      [1, ev('e', two, { $set: { [`two${i}`]: i, last: 'two' }, $set_once: { first: 'two' } })],
    ]).flat(),
  );
  const id = await personIdOf(r.project, one);
  t.equal(await personIdOf(r.project, two), id);
  const props = (await personRow(r.project, id!))!.properties;
  for (let i = 0; i < n; i++) {
    t.equal(props[`one${i}`], i);
    t.equal(props[`two${i}`], i);
  }
  t.equal(props['first'], 'two');
  t.ok(props['last'] === 'one' || props['last'] === 'two');
});

async function recordOf(
  project: number,
  distinctId: string,
): Promise<{ id: string; record: PersonRecord; revision: number }> {
  const link = await bucket.get<{ person: string }>(linkKey(project, distinctId));
  const id = link!.value.person;
  const e = await bucket.get<PersonRecord>(personKey(project, id));
  return { id, record: e!.value, revision: e!.revision };
}

t.test('a merge cut between its two writes is completed by whoever reaches it next', async (t) => {
  const r = await run(2);
  const [u1, a1, u2, a2] = [
    ownedBy(r, 'cut-u1', 0),
    ownedBy(r, 'cut-a1', 1),
    ownedBy(r, 'cut-u2', 0),
    ownedBy(r, 'cut-a2', 1),
  ];
  await feed(r, [
    ev('p', u1, { $set: { plan: 'free', who: 'u' } }),
    ev('p', a1, { $set: { utm: 'ads', who: 'a' } }),
    ev('p', u2, { $set: { who: 'u' } }),
    ev('p', a2, { $set: { utm: 'mail' } }),
  ]);
  /** The merge's first write as `identify` would make it, and then the process dies. */
  const cut = async (into: string, other: string, identify: StreamEvent): Promise<string> => {
    const kept = await recordOf(r.project, into);
    const gone = await recordOf(r.project, other);
    await bucket.update(
      personKey(r.project, gone.id),
      mergedAway(gone.record, kept.id, { $set: { plan: 'pro' } }, identify.uuid),
      gone.revision,
    );
    return kept.id;
  };
  const identify1 = ev('$identify', u1, { $anon_distinct_id: a1, $set: { plan: 'pro' } });
  const kept1 = await cut(u1, a1, identify1);
  // Redelivered, the event itself completes it.
  await feed(r, [identify1]);
  t.equal(await personIdOf(r.project, a1), kept1, 'the merged-away id points at the kept person');
  const p1 = (await personRow(r.project, kept1))!;
  t.same(p1.properties, { utm: 'ads', who: 'u', plan: 'pro' });
  t.equal(p1.is_identified, 1);

  const identify2 = ev('$identify', u2, { $anon_distinct_id: a2, $set: { plan: 'pro' } });
  const gone2 = (await recordOf(r.project, a2)).id;
  const kept2 = await cut(u2, a2, identify2);
  // Another event reaching the merged-away person first completes it; the redelivery then adds nothing.
  await feed(r, [ev('p', a2, { $set: { seen: 1 } })]);
  t.equal(await personIdOf(r.project, a2), kept2);
  await feed(r, [ev('p', u2, { $set: { plan: 'team' } })]);
  await feed(r, [identify2]);
  const p2 = (await personRow(r.project, kept2))!;
  t.same(p2.properties, { utm: 'mail', who: 'u', plan: 'team', seen: 1 }, "the merge's $set applied once");
  t.equal((await personRow(r.project, gone2))?.is_deleted, 1, 'the merged-away person is deleted');
  const [row] = await store.query<{ person_id: string }>(
    'SELECT toString(person_id) AS person_id FROM events WHERE project_id = {p:UInt64} AND uuid = {u:UUID}',
    { p: r.project, u: identify2.uuid },
  );
  t.equal(row?.person_id, kept2, 'the redelivered event names the kept person');
});

t.test('a link cut before its person was changed is completed by whoever reaches it', async (t) => {
  const r = await run(2);
  const user = ownedBy(r, 'link-u', 0);
  const joined = ownedBy(r, 'link-n', 1);
  await feed(r, [ev('p', user, { $set: { a: 1 } })]);
  const identify = ev('$identify', user, { $anon_distinct_id: joined, $set: { j: 1 } });
  const kept = await recordOf(r.project, user);
  await bucket.create(linkKey(r.project, joined), {
    person: kept.id,
    event: identify.uuid,
    identify: true,
    change: { $set: { j: 1 } },
  });
  await feed(r, [ev('p', joined)]);
  t.equal(await personIdOf(r.project, joined), kept.id);
  const p = (await personRow(r.project, kept.id))!;
  t.same(p.properties, { a: 1, j: 1 });
  t.equal(p.is_identified, 1);
  await feed(r, [ev('p', user, { $set: { j: 2 } }), identify]);
  t.same((await personRow(r.project, kept.id))!.properties, { a: 1, j: 2 }, 'the redelivery adds nothing');
});
