/**
 * Ingest when its store refuses a commit (here: the embedded store past its pending bound, its tables out of
 * reach so nothing can be applied), on real chDB: the batch fails for its sender to retry, nothing else
 * breaks — also with the duplicate window turned off, where no one else listens to a job's claim — and a
 * retry once the store has caught up is stored once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { CapturedEvent } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import { StoreBusyError } from '../../src/store/store-errors.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'weir-ingest-refused-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const deps = { logger: createLogger('silent'), metrics: new Metrics({ defaultMetrics: false }) };
// 1 MiB of commit log may wait to be applied; the store applies it at half that, or when read.
const store = await openEmbeddedStore(
  { dataDir, storeFsync: false, storeMaxPendingMb: 1, storeApplyIntervalMs: 60_000 },
  deps,
);
t.teardown(() => store.close());

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
t.teardown(() => process.off('unhandledRejection', onUnhandled));

function events(n: number, tag: string): CapturedEvent[] {
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => ({
    projectId: 1,
    uuid: randomUUID(),
    event: tag,
    distinctId: `refused-${i % 5}`,
    timestamp: now,
    // ~2 KiB of properties an event: 300 of them fit under the 1 MiB bound, 600 do not.
    properties: { $process_person_profile: false, pad: 'x'.repeat(2000), i },
    receivedAt: now,
  }));
}

for (const window of [0, 1000]) {
  t.test(
    `duplicate window ${window}: a refused commit fails the batch, and its retry is stored once`,
    async (t) => {
      const ingest = new IngestService(
        { ingestPartitions: 4, commitMaxRows: 50_000, dedupWindow: window },
        { store, ...deps },
      );
      const tag = `refused-${window}`;
      // With the table away, the log cannot be applied and what waits stays (the applier retries later).
      await store.command('RENAME TABLE events TO events_away');
      const refused = events(300, tag);
      try {
        await ingest.handle({ lane: 'live', events: events(300, `${tag}-fill`), warnings: [] });
        await t.rejects(ingest.handle({ lane: 'live', events: refused, warnings: [] }), StoreBusyError);
        // Let any rejection nobody handled surface before looking.
        await new Promise((r) => setImmediate(r));
        t.same(unhandled, [], 'no unhandled rejection');
      } finally {
        await store.command('RENAME TABLE events_away TO events');
      }
      await store.query('SELECT 1'); // a read applies the log, so the store takes rows again
      await ingest.handle({ lane: 'live', events: refused, warnings: [] });
      const [row] = await store.query<{ n: string; u: string }>(
        'SELECT count() AS n, uniqExact(uuid) AS u FROM events FINAL WHERE event = {tag:String}',
        { tag },
      );
      t.same(row, { n: '300', u: '300' }, 'the retried batch is stored, once');
      await ingest.drain();
    },
  );
}
