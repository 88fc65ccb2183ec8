/**
 * The lanes of SPEC §2: `historical_migration` batches keep their old timestamps and skip spike detection;
 * a live burst from one distinct_id beyond its token bucket moves to overflow and is still fully stored.
 * A tiny bucket (1/s, burst 5) makes the spike easy to reach; one Weir per file, hence a file of its own.
 */
import t from 'tap';
import { metricValue } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir({ WEIR_SPIKE_RATE: '1', WEIR_SPIKE_BURST: '5' });
t.teardown(() => w.close());

const KEY = PROJECT_API_KEY;

const lane = (name: string) => metricValue(w.url, 'weir_capture_events_total', { lane: name });
const lanes = async () => ({
  live: await lane('live'),
  overflow: await lane('overflow'),
  historical: await lane('historical'),
});

async function stored(event: string): Promise<{ distinct_id: string; n: number; ts: string }[]> {
  const rows = await w.rows<{ distinct_id: string; n: string; ts: string }>(
    `SELECT distinct_id, JSONExtractInt(properties, 'n') AS n, toString(timestamp) AS ts
     FROM events WHERE event = {event:String} ORDER BY n`,
    { event },
  );
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

t.test('a live burst beyond the bucket goes to overflow and is fully stored', async (t) => {
  const before = await lanes();
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({
      api_key: KEY,
      batch: [
        ...Array.from({ length: 20 }, (_, n) => ({
          event: 'ln_burst',
          distinct_id: 'ln-hot',
          properties: { n },
        })),
        // Another distinct_id has its own bucket.
        ...Array.from({ length: 3 }, (_, n) => ({
          event: 'ln_burst',
          distinct_id: 'ln-calm',
          properties: { n: 100 + n },
        })),
      ],
    }),
  );
  t.equal(res.status, 200, res.text);
  const rows = await stored('ln_burst');
  t.same(
    rows.map((r) => [r.distinct_id, r.n]),
    [
      ...Array.from({ length: 20 }, (_, n) => ['ln-hot', n]),
      ...Array.from({ length: 3 }, (_, n) => ['ln-calm', 100 + n]),
    ],
    'every event is stored, none dropped',
  );
  const after = await lanes();
  t.equal(after.overflow - before.overflow, 15, 'the 15 beyond the burst of 5 went to overflow');
  t.equal(after.live - before.live, 8, 'the first 5 of the hot id and the 3 of the calm one stayed live');
  t.equal(after.historical - before.historical, 0);
});

t.test('historical_migration batches keep old timestamps and skip spike detection', async (t) => {
  const before = await lanes();
  const batch = Array.from({ length: 50 }, (_, n) => ({
    event: 'ln_history',
    distinct_id: 'ln-hot',
    timestamp: new Date(Date.UTC(2020, 0, 1, 0, 0, n)).toISOString(),
    properties: { n },
  }));
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({ api_key: KEY, historical_migration: true, batch }),
  );
  t.equal(res.status, 200, res.text);
  const rows = await stored('ln_history');
  t.same(
    rows.map((r) => r.ts),
    batch.map((_, n) => `2020-01-01 00:00:${String(n).padStart(2, '0')}.000000`),
    'all 50 stored with their own timestamps',
  );
  const after = await lanes();
  t.equal(after.historical - before.historical, 50, 'all went the historical way');
  t.equal(after.overflow - before.overflow, 0, 'none was moved to overflow, though the id is hot');
  t.equal(after.live - before.live, 0);
});

t.test('historical_migration must be true, not truthy', async (t) => {
  const before = await lanes();
  await post(
    `${w.url}/batch/`,
    JSON.stringify({
      api_key: KEY,
      historical_migration: 'true',
      batch: [{ event: 'ln_truthy', distinct_id: 'ln-truthy' }],
    }),
  );
  const after = await lanes();
  t.equal(after.historical - before.historical, 0);
  t.equal(after.live - before.live, 1);
  t.equal((await stored('ln_truthy')).length, 1);
});
