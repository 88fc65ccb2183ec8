/**
 * Persons (SPEC §2 "Event semantics"): real HTTP in, real chDB rows out. After a 200 the events and the
 * person rows they caused are committed, so each test queries right away.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { CapturedEvent } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { Store } from '../../src/core/ports.ts';
import { BatchWriter } from '../../src/ingest/batch-writer.ts';
import { PersonState } from '../../src/ingest/persons/person-state.ts';
import { PROJECT_API_KEY, post, spawnWeir, startTestWeir, tempDir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

type Props = Record<string, unknown>;
interface EventIn {
  event: string;
  distinct_id: string;
  properties?: Props;
}

/** A unique distinct id, so tests sharing one Weir never see each other's persons. */
const uid = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

let clock = Date.parse('2025-03-01T00:00:00Z');
async function send(url: string, events: EventIn[]): Promise<void> {
  const batch = events.map((e) => ({
    ...e,
    properties: e.properties ?? {},
    timestamp: new Date((clock += 1000)).toISOString(),
  }));
  const res = await post(`${url}/batch/`, JSON.stringify({ api_key: PROJECT_API_KEY, batch }));
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
}

interface EventRow {
  event: string;
  person_id: string;
  person_mode: string;
  person_properties: string;
}
async function eventsOf(distinctId: string): Promise<(EventRow & { props: Props })[]> {
  const rows = await w.rows<EventRow>(
    `SELECT event, toString(person_id) AS person_id, person_mode, person_properties FROM events FINAL
     WHERE distinct_id = {d:String} ORDER BY timestamp`,
    { d: distinctId },
  );
  return rows.map((r) => ({ ...r, props: JSON.parse(r.person_properties) as Props }));
}
const lastPersonOf = async (distinctId: string): Promise<string | undefined> =>
  (await eventsOf(distinctId)).at(-1)?.person_id;

async function person(id: string): Promise<{ properties: Props; is_identified: number; is_deleted: number }> {
  const [row] = await w.rows<{ properties: string; is_identified: number; is_deleted: number }>(
    `SELECT properties, is_identified, is_deleted FROM persons FINAL WHERE id = {id:UUID}`,
    { id },
  );
  if (!row) throw new Error(`no persons row for ${id}`);
  return { ...row, properties: JSON.parse(row.properties) as Props };
}
async function mappedPerson(distinctId: string): Promise<string | undefined> {
  const [row] = await w.rows<{ person_id: string }>(
    `SELECT toString(person_id) AS person_id FROM person_distinct_ids FINAL WHERE distinct_id = {d:String}`,
    { d: distinctId },
  );
  return row?.person_id;
}
/** Runs SQL on a stopped Weir's data directory through `weir sql` (this process holds its own chDB). */
async function weirSql(dataDir: string, sql: string): Promise<unknown[]> {
  const bin = join(import.meta.dirname, '../../bin/weir.js');
  const { stdout } = await promisify(execFile)(process.execPath, [bin, 'sql', '--data-dir', dataDir, sql]);
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

async function warnings(type: string, needle: string): Promise<Props[]> {
  const rows = await w.rows<{ details: string }>(
    `SELECT details FROM ingestion_warnings WHERE type = {type:String} AND position(details, {needle:String}) > 0`,
    { type, needle },
  );
  return rows.map((r) => JSON.parse(r.details) as Props);
}

t.test('the first event of a distinct id makes a person with its $set', async (t) => {
  const d = uid('new');
  await send(w.url, [
    { event: 'signup', distinct_id: d, properties: { $set: { email: 'a@x.io', plan: 'free' } } },
  ]);
  const [e] = await eventsOf(d);
  t.equal(e?.person_mode, 'full');
  t.same(e?.props, { email: 'a@x.io', plan: 'free' }, 'the event row carries the person properties');
  const p = await person(e!.person_id);
  t.same(p.properties, { email: 'a@x.io', plan: 'free' });
  t.equal(p.is_identified, 0, 'a $set alone does not identify');
  t.equal(await mappedPerson(d), e!.person_id);
});

t.test('$set_once never overwrites, $set does, $unset removes', async (t) => {
  const d = uid('once');
  await send(w.url, [
    { event: 'a', distinct_id: d, properties: { $set_once: { first_seen: 'mon' }, $set: { plan: 'free' } } },
  ]);
  await send(w.url, [
    {
      event: 'b',
      distinct_id: d,
      properties: { $set_once: { first_seen: 'tue', referrer: 'ads' }, $set: { plan: 'paid' } },
    },
  ]);
  await send(w.url, [{ event: 'c', distinct_id: d, properties: { $unset: ['referrer'] } }]);
  const events = await eventsOf(d);
  t.same(
    events.map((e) => e.props),
    [
      { first_seen: 'mon', plan: 'free' },
      { first_seen: 'mon', plan: 'paid', referrer: 'ads' },
      { first_seen: 'mon', plan: 'paid' },
    ],
  );
  t.equal(new Set(events.map((e) => e.person_id)).size, 1, 'one person throughout');
  t.same((await person(events[0]!.person_id)).properties, { first_seen: 'mon', plan: 'paid' });
});

t.test('events of one person in one batch each carry the properties as of that event', async (t) => {
  const d = uid('batch');
  await send(
    w.url,
    [1, 2, 3].map((n) => ({ event: 'step', distinct_id: d, properties: { $set: { step: n } } })),
  );
  const events = await eventsOf(d);
  t.same(
    events.map((e) => e.props),
    [{ step: 1 }, { step: 2 }, { step: 3 }],
  );
  t.same((await person(events[0]!.person_id)).properties, { step: 3 }, 'the stored person is the last state');
});

t.test('$identify merges the anonymous person into the identified one', async (t) => {
  const anon = uid('anon');
  const user = uid('user');
  await send(w.url, [
    { event: '$pageview', distinct_id: anon, properties: { $set: { utm: 'ads', plan: 'trial' } } },
    { event: 'login', distinct_id: user, properties: { $set: { plan: 'pro' } } },
  ]);
  const anonPerson = await lastPersonOf(anon);
  const userPerson = await lastPersonOf(user);
  t.not(anonPerson, userPerson);

  await send(w.url, [
    {
      event: '$identify',
      distinct_id: user,
      properties: { $anon_distinct_id: anon, $set: { email: 'u@x.io' } },
    },
  ]);
  const [identify] = (await eventsOf(user)).filter((e) => e.event === '$identify');
  t.equal(identify?.person_id, userPerson, "the identified id's person is kept");
  t.same(
    identify?.props,
    { utm: 'ads', plan: 'pro', email: 'u@x.io' },
    "on a conflict the kept person's value wins",
  );

  await send(w.url, [
    { event: 'after', distinct_id: anon },
    { event: 'after', distinct_id: user },
  ]);
  t.equal(await lastPersonOf(anon), userPerson, 'new events of the anonymous id go to the merged person');
  t.equal(await lastPersonOf(user), userPerson);
  t.equal(await mappedPerson(anon), userPerson);
  const kept = await person(userPerson!);
  t.equal(kept.is_identified, 1);
  t.equal((await person(anonPerson!)).is_deleted, 1, 'the merged-away person is deleted');
});

t.test('$identify with only the anonymous person attaches the new id to it', async (t) => {
  const anon = uid('anon');
  const user = uid('user');
  await send(w.url, [{ event: '$pageview', distinct_id: anon, properties: { $set: { utm: 'mail' } } }]);
  const anonPerson = await lastPersonOf(anon);
  await send(w.url, [{ event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } }]);
  t.equal(await lastPersonOf(user), anonPerson);
  t.equal(await mappedPerson(user), anonPerson);
  const p = await person(anonPerson!);
  t.equal(p.is_identified, 1);
  t.same(p.properties, { utm: 'mail' });
});

t.test('two identified persons are not merged by $identify: warning instead', async (t) => {
  const [a, b, anonA, anonB] = [uid('ida'), uid('idb'), uid('anona'), uid('anonb')];
  await send(w.url, [
    { event: '$identify', distinct_id: a, properties: { $anon_distinct_id: anonA } },
    { event: '$identify', distinct_id: b, properties: { $anon_distinct_id: anonB } },
  ]);
  await send(w.url, [{ event: '$identify', distinct_id: a, properties: { $anon_distinct_id: b } }]);
  t.not(await mappedPerson(a), await mappedPerson(b));
  const found = await warnings('cannot_merge_already_identified', b);
  t.equal(found.length, 1);
  t.match(found[0], { sourcePersonDistinctId: b, targetPersonDistinctId: a });
});

t.test('$create_alias makes distinct_id and alias one person', async (t) => {
  const main = uid('main');
  const alias = uid('alias');
  await send(w.url, [{ event: 'x', distinct_id: main, properties: { $set: { role: 'admin' } } }]);
  await send(w.url, [{ event: 'y', distinct_id: alias, properties: { $set: { device: 'ios' } } }]);
  const mainPerson = await lastPersonOf(main);
  await send(w.url, [{ event: '$create_alias', distinct_id: main, properties: { alias } }]);
  await send(w.url, [{ event: 'z', distinct_id: alias }]);
  t.equal(await lastPersonOf(alias), mainPerson);
  t.equal(await mappedPerson(alias), mainPerson);
  t.same((await person(mainPerson!)).properties, { role: 'admin', device: 'ios' });

  // With no person on either side yet, one person is made for both.
  const [n1, n2] = [uid('fresh'), uid('fresh')];
  await send(w.url, [{ event: '$create_alias', distinct_id: n1, properties: { alias: n2 } }]);
  t.ok(await mappedPerson(n1));
  t.equal(await mappedPerson(n2), await mappedPerson(n1));
});

t.test('illegal ids are never merged, with a warning', async (t) => {
  const user = uid('legal');
  await send(w.url, [
    { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: 'anonymous' } },
    { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: 'NULL' } },
    { event: '$create_alias', distinct_id: user, properties: { alias: ' ' } },
    { event: '$create_alias', distinct_id: 'undefined', properties: { alias: user } },
  ]);
  const events = await eventsOf(user);
  t.equal(events.length, 3, 'the events are stored');
  t.equal(await mappedPerson('anonymous'), undefined, 'the illegal id joins no person');
  t.equal(await mappedPerson('NULL'), undefined, 'case does not matter');
  t.equal((await person(events[0]!.person_id)).is_identified, 0);
  const found = await warnings('cannot_merge_with_illegal_distinct_id', user);
  t.same(found.map((d) => d['illegalDistinctId']).sort(), [' ', 'NULL', 'anonymous', 'undefined']);
});

t.test('$process_person_profile: false makes no person and drops $identify with a warning', async (t) => {
  const d = uid('personless');
  const user = uid('personless-user');
  await send(w.url, [
    { event: 'view', distinct_id: d, properties: { $process_person_profile: false, $set: { a: 1 } } },
    {
      event: '$identify',
      distinct_id: user,
      properties: { $process_person_profile: false, $anon_distinct_id: d },
    },
    {
      event: '$groupidentify',
      distinct_id: user,
      properties: { $process_person_profile: false, $group_type: 'org', $group_key: 'o1' },
    },
  ]);
  const [e] = await eventsOf(d);
  t.equal(e?.person_mode, 'propertyless');
  t.same(e?.props, {});
  t.equal(await mappedPerson(d), undefined, 'no person for the anonymous id');
  t.same(await eventsOf(user), [], 'the $identify and $groupidentify are not stored');
  t.equal(await mappedPerson(user), undefined);
  const found = await warnings('invalid_event_when_process_person_profile_is_false', user);
  t.same(found.map((x) => x['event']).sort(), ['$groupidentify', '$identify']);
});

t.test('identities survive a restart', async (t) => {
  const dataDir = tempDir();
  const anon = uid('restart-anon');
  const user = uid('restart-user');
  let child = await spawnWeir(dataDir);
  try {
    await send(child.url, [
      { event: '$pageview', distinct_id: anon, properties: { $set: { seen: true } } },
      { event: 'login', distinct_id: user, properties: { $set: { email: 'r@x.io' } } },
    ]);
    await send(child.url, [
      { event: '$identify', distinct_id: user, properties: { $anon_distinct_id: anon } },
    ]);
  } finally {
    child.child.kill('SIGTERM');
    t.equal(await child.exited, 0, 'a clean stop');
  }
  child = await spawnWeir(dataDir);
  try {
    await send(child.url, [
      { event: 'back', distinct_id: anon, properties: { $set: { returned: 1 } } },
      { event: 'back', distinct_id: user },
    ]);
  } finally {
    child.child.kill('SIGTERM');
    await child.exited;
  }
  // The child has released the data directory: read what it stored with `weir sql`.
  const rows = (await weirSql(
    dataDir,
    `SELECT event, toString(person_id) AS person_id, person_properties FROM events FINAL ORDER BY timestamp`,
  )) as { event: string; person_id: string; person_properties: string }[];
  const login = rows.find((x) => x.event === 'login');
  const back = rows.filter((x) => x.event === 'back');
  t.equal(back.length, 2);
  t.ok(
    back.every((x) => x.person_id === login?.person_id),
    'both ids resolve to the merged person after the restart',
  );
  t.same(JSON.parse(back[0]!.person_properties), { seen: true, email: 'r@x.io', returned: 1 });
  rmSync(dataDir, { recursive: true, force: true });
});

// PersonState straight on the real store, for what HTTP cannot steer: interleaving and a failing insert.
function personState(store: Store, cacheSize: number): PersonState {
  const writer = new BatchWriter(
    { maxRows: 10_000 },
    { store, metrics: new Metrics({ defaultMetrics: false }), logger: createLogger('silent') },
  );
  return new PersonState({ cacheSize }, { store, writer });
}
let projectSeq = 900;
function captured(
  projectId: number,
  event: string,
  distinctId: string,
  properties: Props = {},
): CapturedEvent {
  return {
    projectId,
    uuid: randomUUID(),
    event,
    distinctId,
    timestamp: Date.now(),
    properties,
    receivedAt: Date.now(),
  };
}

t.test('concurrent merges through a one-entry cache stay consistent with the store', async (t) => {
  const project = projectSeq++;
  const persons = personState(w.weir.store, 1);
  const run = async (e: CapturedEvent) => {
    const out = await persons.process(e);
    await out.written;
    return out;
  };
  await Promise.all([
    run(captured(project, 'view', 'a', { $set: { a: 1 } })),
    run(captured(project, 'view', 'u', { $set: { u: 1 } })),
    run(captured(project, 'view', 'v', { $set: { v: 1 } })),
  ]);
  // Two identifies race for the same anonymous id while a third event changes it.
  const [first, second] = await Promise.all([
    run(captured(project, '$identify', 'u', { $anon_distinct_id: 'a' })),
    run(captured(project, '$identify', 'v', { $anon_distinct_id: 'a' })),
    run(captured(project, 'view', 'a', { $set: { late: 1 } })),
  ]);
  const warned = [first, second].filter((o) => o.warning?.type === 'cannot_merge_already_identified');
  t.equal(warned.length, 1, 'the second merge finds the anonymous id identified already');

  const again = await Promise.all(['a', 'u', 'v'].map((d) => run(captured(project, 'check', d))));
  // A second PersonState reads the store as one after a restart would: once what was written is visible.
  await w.weir.store.visible();
  const fresh = personState(w.weir.store, 100);
  const reloaded = await Promise.all(
    ['a', 'u', 'v'].map((d) => Promise.resolve(fresh.process(captured(project, 'check', d)))),
  );
  t.same(
    again.map((o) => o.person.id),
    reloaded.map((o) => o.person.id),
    'memory and store agree on every id',
  );
  t.equal(again[0]!.person.id, (warned[0] === first ? second : first).person.id, 'a joined the winner');
  t.not(again[1]!.person.id, again[2]!.person.id, 'two identified persons stay two');
  t.match(reloaded[0]!.person.properties, { a: 1, late: 1 }, 'no update was lost in the race');
});

t.test('after a failed write the next event does not build on what the store never got', async (t) => {
  const project = projectSeq++;
  let failNext = true;
  const real = w.weir.store;
  const failing = (table: string): boolean => {
    if (table !== 'persons' || !failNext) return false;
    failNext = false;
    return true;
  };
  const flaky: Store = {
    insert: (table, rows) =>
      failing(table) ? Promise.reject(new Error('disk full')) : real.insert(table, rows),
    insertValues: (table, columns, rows) => real.insertValues(table, columns, rows),
    encode: (rows) => real.encode(rows),
    insertEncoded: (table, count, chunks, columns) =>
      failing(table)
        ? Promise.reject(new Error('disk full'))
        : real.insertEncoded(table, count, chunks, columns),
    commitsInFlight: real.commitsInFlight,
    soleWriter: real.soleWriter,
    query: (sql, params) => real.query(sql, params),
    command: (sql) => real.command(sql),
    deleteRows: (table, where, params) => real.deleteRows(table, where, params),
    purgeDeleted: (table) => real.purgeDeleted(table),
    accepting: () => real.accepting(),
    visible: () => real.visible(),
    close: () => Promise.resolve(),
  };
  const persons = personState(flaky, 100);
  const failed = await persons.process(captured(project, 'view', 'f', { $set: { x: 1 } }));
  await t.rejects(failed.written!, /disk full/);
  const next = await persons.process(captured(project, 'view', 'f', { $set: { y: 2 } }));
  await next.written;
  t.same(next.person.properties, { y: 2 }, 'the failed change is not carried on');
  await real.visible();
  const reloaded = await personState(real, 100).process(captured(project, 'check', 'f'));
  t.equal(reloaded.person.id, next.person.id, 'the store agrees');
  t.same(reloaded.person.properties, { y: 2 });
});

t.test('what ingest wrote stays in memory until the store shows it', async (t) => {
  // State lookups do not make the store apply its commit log first, so a person committed but not yet
  // applied must not be evicted: through a one-entry cache, a second id would push it out otherwise.
  const project = projectSeq++;
  const persons = personState(w.weir.store, 1);
  const first = await persons.process(captured(project, 'view', 'p1', { $set: { n: 1 } }));
  await first.written;
  const other = await persons.process(captured(project, 'view', 'p2'));
  await other.written;
  const again = await persons.process(captured(project, 'view', 'p1'));
  t.equal(again.person.id, first.person.id, 'the same person, not a new one');
  t.same(again.person.properties, { n: 1 });
});
