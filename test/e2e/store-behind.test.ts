/**
 * When the store cannot apply its commit log (the events table renamed away) for long enough that the log
 * holds WEIR_STORE_MAX_PENDING_MB, capture answers 503 with Retry-After; after recovery, every event that
 * got a 200, and every refused batch sent again, is stored exactly once.
 */
import t from 'tap';
import { PROJECT_API_KEY, post, startTestWeir, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir({ WEIR_STORE_MAX_PENDING_MB: '1' });
t.teardown(() => w.close());

const padding = 'p'.repeat(2_000);

function body(round: number): string {
  return JSON.stringify({
    api_key: PROJECT_API_KEY,
    batch: Array.from({ length: 50 }, (_, i) => ({
      event: 'behind',
      // As SDKs do: a uuid per event, so a batch sent again is recognised.
      uuid: `0190a1b2-c3d4-7e5f-8a9b-${String(round * 50 + i).padStart(12, '0')}`,
      properties: { distinct_id: `behind-${i}`, key: `${round}-${i}`, padding },
    })),
  });
}

t.test('a store that falls behind makes capture answer 503, and loses nothing', async (t) => {
  await w.weir.store.command('RENAME TABLE events TO events_away');
  const refused: number[] = [];
  const accepted: number[] = [];
  for (let round = 0; round < 100 && refused.length === 0; round++) {
    const res = await post(`${w.url}/batch/`, body(round));
    if (res.status === 200) accepted.push(round);
    else {
      t.equal(res.status, 503);
      t.equal(res.headers.get('retry-after'), '1');
      t.match(res.json, { type: 'unavailable', code: 'unavailable' });
      refused.push(round);
    }
  }
  t.ok(accepted.length > 0, `some batches were taken (${accepted.length})`);
  t.equal(refused.length, 1, 'then the bound refused one');

  await w.weir.store.command('RENAME TABLE events_away TO events');
  // A client sends a refused batch again after Retry-After until it is taken.
  for (const round of refused) {
    await waitFor(async () =>
      (await post(`${w.url}/batch/`, body(round))).status === 200 ? true : undefined,
    );
  }

  const [r] = await w.rows<{ n: string; keys: string }>(
    `SELECT count() AS n, uniqExact(JSONExtractString(properties, 'key')) AS keys FROM events WHERE event = 'behind'`,
  );
  const expected = (accepted.length + refused.length) * 50;
  t.same(
    { n: Number(r!.n), keys: Number(r!.keys) },
    { n: expected, keys: expected },
    'every acknowledged event, exactly once',
  );
});
