/**
 * Back-pressure: past WEIR_MAX_PENDING_EVENTS accepted-but-uncommitted events, capture answers 503 with
 * Retry-After and stores nothing of that request; everything answered 200 is stored.
 */
import t from 'tap';
import { PROJECT_API_KEY, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir({ WEIR_MAX_PENDING_EVENTS: '100' });
t.teardown(() => w.close());

t.test('a full pipeline answers 503 with Retry-After, and loses nothing it accepted', async (t) => {
  const outcomes: { status: number; retryAfter: string | null; code: unknown; ids: string[] }[] = [];
  // Concurrent batches of 100 against a bound of 100 pending events: while one commits, others must wait.
  for (let round = 0; round < 20 && !outcomes.some((o) => o.status === 503); round++) {
    const requests = Array.from({ length: 20 }, async (_, r) => {
      const ids = Array.from({ length: 100 }, (_, i) => `bp-${round}-${r}-${i}`);
      const res = await fetch(`${w.url}/batch/`, {
        method: 'POST',
        body: JSON.stringify({
          api_key: PROJECT_API_KEY,
          batch: ids.map((id) => ({ event: 'bp', properties: { distinct_id: `bp-${r}`, id } })),
        }),
      });
      const body = (await res.json()) as { code?: string };
      outcomes.push({ status: res.status, retryAfter: res.headers.get('retry-after'), code: body.code, ids });
    });
    await Promise.all(requests);
  }
  const refused = outcomes.filter((o) => o.status === 503);
  const accepted = outcomes.filter((o) => o.status === 200);
  t.ok(refused.length > 0, `some requests were refused (${refused.length} of ${outcomes.length})`);
  t.ok(accepted.length > 0, 'some requests were accepted');
  t.equal(refused.length + accepted.length, outcomes.length, 'every answer is 200 or 503');
  t.ok(
    refused.every((o) => o.retryAfter === '1' && o.code === 'unavailable'),
    '503s carry Retry-After and code unavailable',
  );

  const stored = new Set(
    (
      await w.rows<{ id: string }>(
        `SELECT JSONExtractString(properties, 'id') AS id FROM events WHERE event = 'bp'`,
      )
    ).map((r) => r.id),
  );
  t.ok(
    accepted.every((o) => o.ids.every((id) => stored.has(id))),
    'every event answered 200 is stored',
  );
  t.ok(
    refused.every((o) => o.ids.every((id) => !stored.has(id))),
    'nothing of a refused request is stored',
  );
});
