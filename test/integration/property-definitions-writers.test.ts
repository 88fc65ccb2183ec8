/**
 * Several processes recording property definitions into one store (as many `weir ingest` on a ClickHouse
 * server do), on the real stores: the server store through ClickHouse's HTTP interface (the test-only front
 * over chDB, or WEIR_TEST_CLICKHOUSE_URL's server) and the embedded store. Each registry reloads and merges;
 * the reloads are called here rather than timed. They must end on one type per property (the one first seen),
 * the union of its events, a type set through the API kept against the others' older views, and no rows
 * written once they agree.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import t, { type Test } from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { Store } from '../../src/core/ports.ts';
import type { PipelineEvent } from '../../src/core/step.ts';
import { PropertyDefinitionRegistry } from '../../src/ingest/property-definitions.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import { ServerStore } from '../../src/store/server/server-store.ts';
import { clickHouseForTest } from '../clickhouse-front/start.ts';

const logger = createLogger('silent');
const metrics = (): Metrics => new Metrics({ defaultMetrics: false });

async function embeddedStore(t: Test): Promise<Store> {
  const dataDir = await mkdtemp(join(tmpdir(), 'weir-property-definitions-writers-'));
  const store = await openEmbeddedStore(
    { dataDir, storeFsync: false, storeMaxPendingMb: 64, storeApplyIntervalMs: 50 },
    { logger, metrics: metrics() },
  );
  t.teardown(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return store;
}

/** A database of its own on the front (or the real server), dropped at the end. */
async function serverStore(t: Test): Promise<Store> {
  const ch = await clickHouseForTest();
  const server = new URL(ch.url);
  const user = decodeURIComponent(server.username) || 'default';
  const password = decodeURIComponent(server.password) || ch.password;
  server.username = '';
  server.password = '';
  const url = server.toString().replace(/\/$/, '');
  const database = `weir_test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const store = await ServerStore.open(
    {
      url,
      user,
      password,
      database,
      cluster: undefined,
      maxPendingBytes: 64 << 20,
      requestTimeoutMs: 30_000,
    },
    { logger, metrics: metrics() },
  );
  t.teardown(async () => {
    await store.close();
    const admin = createClient({ url, username: user, password: password ?? '' });
    await admin.command({ query: `DROP DATABASE IF EXISTS \`${database}\`` });
    await admin.close();
    await ch.stop();
  });
  return store;
}

function event(name: string, properties: Record<string, unknown>): PipelineEvent {
  return {
    projectId: 1,
    uuid: '',
    event: name,
    distinctId: 'd',
    timestamp: 0,
    properties,
    receivedAt: 0,
    personId: '',
    personMode: 'full',
    personProperties: {},
    groups: ['', '', '', '', ''],
  };
}

/** Waits for the clock to pass `ms`, so that the next definition is first seen strictly later. */
function after(ms: number): void {
  const deadline = ms + 1000;
  while (Date.now() <= ms) if (Date.now() > deadline) throw new Error('the clock does not move');
}

async function processesOn(t: Test, store: Store): Promise<void> {
  // A reload interval this long never fires during the test; it makes each registry one of several writers.
  const registries = await Promise.all(
    ['a', 'b', 'c'].map(async () => {
      const r = new PropertyDefinitionRegistry(
        { reloadMs: 3_600_000, flushMs: 3_600_000 },
        { store, logger },
      );
      await r.start();
      return r;
    }),
  );
  t.teardown(() => Promise.all(registries.map((r) => r.close())));
  const [a, b, c] = registries as [
    PropertyDefinitionRegistry,
    PropertyDefinitionRegistry,
    PropertyDefinitionRegistry,
  ];

  interface StoredRow {
    property_type: string;
    events: string[];
    changed: number;
  }

  async function storedRow(type: string, name: string): Promise<StoredRow | undefined> {
    const [row] = await store.query<StoredRow>(
      `SELECT property_type, events, type_changed_at IS NOT NULL AS changed
     FROM property_definitions FINAL WHERE project_id = 1 AND type = {type:String} AND name = {name:String}`,
      { type, name },
    );
    return row;
  }

  async function maxVersion(): Promise<string> {
    const [row] = await store.query<{ v: string }>(
      'SELECT toString(max(version)) AS v FROM property_definitions',
    );
    return row!.v;
  }

  /** Each registry in turn reloads and writes what it queued, until a whole round writes nothing. */
  async function converge(max = 5): Promise<number> {
    for (let round = 1; round <= max; round++) {
      const before = await maxVersion();
      for (const r of registries) {
        await r.reload();
        await r.flush();
      }
      if ((await maxVersion()) === before) return round;
    }
    throw new Error(`still writing after ${max} rounds`);
  }

  t.test(
    'different types and events in three processes end as one type, the first seen, and the union',
    async (t) => {
      // `amount` is first seen as text by a, then as a number by b and a boolean by c; a person property too.
      a.observe([event('view', { amount: '12', $set: { plan: 'pro' } })]);
      after(Date.now());
      b.observe([event('buy', { amount: 12, $set: { plan: 3 } })]);
      after(Date.now());
      c.observe([event('open', { amount: true })]);
      // All three write at once, as processes do: each from its own view, read before the others' rows land.
      await Promise.all(registries.map((r) => r.flush()));

      const rounds = await converge();
      t.ok(rounds <= 3, `agreed within ${rounds} rounds`);
      for (const [i, r] of registries.entries()) {
        t.equal(r.forProject(1).event('amount'), 'String', `registry ${i}: the type first seen`);
        t.equal(r.forProject(1).person('plan'), 'String', `registry ${i}: the person property's too`);
        t.same([...r.get(1, 'event', 'amount')!.events].sort(), ['buy', 'open', 'view']);
      }
      const row = await storedRow('event', 'amount');
      t.equal(row?.property_type, 'String');
      t.same([...row!.events].sort(), ['buy', 'open', 'view'], 'no process lost its events');

      const version = await maxVersion();
      const types = registries.map((r) => r.forProject(1));
      for (const r of registries) {
        await r.reload();
        await r.flush();
      }
      t.equal(await maxVersion(), version, 'agreed: nothing is written again');
      t.same(
        registries.map((r) => r.forProject(1)),
        types,
        'nor does a type (or the version queries compiled against) move',
      );
    },
  );

  t.test("a type set through one process is kept against the others' later rewrites", async (t) => {
    const set = await c.setType(1, 'event', 'amount', 'Numeric');
    t.equal(set?.propertyType, 'Numeric');
    // a and b have not read it; each rewrites the definition from its own view (a new event for it).
    a.observe([event('refund', { amount: '3' })]);
    b.observe([event('share', { amount: 4 })]);
    await a.flush();
    await b.flush();
    let row = await storedRow('event', 'amount');
    t.equal(row?.property_type, 'Numeric', 'the type set on purpose survives their writes');
    t.equal(row?.changed, 1);
    t.same([...row!.events].sort(), ['buy', 'open', 'refund', 'share', 'view']);

    // A process whose write raced that change wrote its older view after it (a window the read before each
    // write narrows but cannot close): the next reloads restore what it overwrote.
    await store.insert('property_definitions', [
      {
        project_id: 1,
        type: 'event',
        name: 'amount',
        property_type: 'String',
        events: ['view'],
        first_seen_at: '2026-01-01 00:00:00.000',
        last_seen_at: '2026-01-01 00:00:00.000',
        type_changed_at: null,
        version: Number(await maxVersion()) + 1,
      },
    ]);
    t.ok((await converge()) <= 3);
    row = await storedRow('event', 'amount');
    t.equal(row?.property_type, 'Numeric', 'the type set on purpose is back');
    t.same([...row!.events].sort(), ['buy', 'open', 'refund', 'share', 'view'], 'and every event name');
    for (const [i, r] of registries.entries())
      t.equal(r.forProject(1).event('amount'), 'Numeric', `registry ${i} uses it`);

    const version = await maxVersion();
    await converge(1);
    t.equal(await maxVersion(), version, 'agreed: nothing is written again');
  });

  t.test('a process started later takes the agreed definitions and writes nothing', async (t) => {
    const version = await maxVersion();
    const late = new PropertyDefinitionRegistry({ reloadMs: 3_600_000 }, { store, logger });
    await late.start();
    t.teardown(() => late.close());
    late.observe([event('view', { amount: 1 })]);
    t.equal(late.forProject(1).event('amount'), 'Numeric');
    await late.reload();
    await late.flush();
    t.equal(await maxVersion(), version);
  });
}

t.test('the server store', async (t) => processesOn(t, await serverStore(t)));
t.test('the embedded store', async (t) => processesOn(t, await embeddedStore(t)));
