/**
 * On a store with other writers (the ClickHouse server), an event's row is committed only after its person
 * rows: an ingest process that takes over a dead one's batches drops the events the store holds already
 * (BatchOrigin.maybeStored), so an event row stored without its person rows would leave those never written.
 * Through the test-only ClickHouse front (or the server of WEIR_TEST_CLICKHOUSE_URL).
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { CapturedEvent } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { ServerStore } from '../../src/store/server/server-store.ts';
import { clickHouseForTest, serverAccess } from '../clickhouse-front/start.ts';

const ch = await clickHouseForTest();
const { url, user, password } = serverAccess(ch);
const database = `weir_partial_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const deps = { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) };
const store = await ServerStore.open(
  {
    url,
    user,
    password,
    database,
    cluster: undefined,
    maxPendingBytes: 64 * 1024 * 1024,
    requestTimeoutMs: 30_000,
  },
  deps,
);
t.teardown(async () => {
  await store.command(`DROP DATABASE IF EXISTS \`${database}\``);
  await store.close();
  await ch.stop();
});

const ingest = new IngestService(
  { ingestPartitions: 4, commitMaxRows: 50_000, dedupWindow: 1000 },
  { store, ...deps },
);

function events(n: number, tag: string): CapturedEvent[] {
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => ({
    projectId: 1,
    uuid: randomUUID(),
    event: tag,
    distinctId: `${tag}-${i}`,
    timestamp: now,
    properties: { $set: { n: i } },
    receivedAt: now,
  }));
}

const count = async (sql: string): Promise<number> => Number((await store.query<{ n: string }>(sql))[0]!.n);

t.test('an event whose person rows fail is not stored, and its redelivery stores both', async (t) => {
  const batch = events(5, 'partial');
  // Its lookups still work; only its inserts fail, as a store that cannot write fails them (a table the insert
  // needs is missing: the target of a view on it), not as rows the engine refuses, which would be set aside.
  await store.command('CREATE TABLE pdi_sink AS person_distinct_ids');
  await store.command('CREATE MATERIALIZED VIEW pdi_fault TO pdi_sink AS SELECT * FROM person_distinct_ids');
  await store.command('DROP TABLE pdi_sink');
  try {
    await t.rejects(ingest.handle({ lane: 'live', events: batch, warnings: [] }), 'the batch fails');
  } finally {
    await store.command('DROP VIEW pdi_fault');
  }
  t.equal(
    await count("SELECT count() AS n FROM events WHERE event = 'partial'"),
    0,
    'no event row without its person',
  );

  // Given again as a takeover gives it: looked up in the store first, then processed whole.
  await ingest.handle({ lane: 'live', events: batch, warnings: [] }, { maybeStored: true });
  t.equal(
    await count("SELECT count() AS n FROM events WHERE event = 'partial'"),
    5,
    'the events are stored once',
  );
  t.equal(
    await count(
      "SELECT count() AS n FROM person_distinct_ids FINAL WHERE distinct_id LIKE 'partial-%' AND is_deleted = 0",
    ),
    5,
    'each with its distinct id linked',
  );
  t.equal(
    await count(
      `SELECT count() AS n FROM events AS e INNER JOIN (SELECT distinct_id, person_id FROM person_distinct_ids FINAL) AS l
       ON e.distinct_id = l.distinct_id WHERE e.event = 'partial' AND e.person_id = l.person_id`,
    ),
    5,
    "each naming its distinct id's person",
  );
});
