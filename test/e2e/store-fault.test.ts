/**
 * When the store cannot commit, capture answers 503 (never 200) and a client retry after recovery stores
 * each event exactly once. The fault is real: the events table is renamed away under the running Weir.
 */
import t from 'tap';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

function body(ids: string[]): string {
  return JSON.stringify({
    api_key: PROJECT_API_KEY,
    batch: ids.map((id, i) => ({
      event: 'fault',
      uuid: `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
      properties: { distinct_id: 'fault-user', id },
    })),
  });
}

t.test('a store fault is a 503, and the retry after recovery stores each event once', async (t) => {
  const ids = Array.from({ length: 50 }, (_, i) => `fault-${i}`);
  await w.weir.store.command('RENAME TABLE events TO events_away');
  let renamedBack = false;
  t.teardown(async () => {
    if (!renamedBack) await w.weir.store.command('RENAME TABLE events_away TO events');
  });

  const during = await post(`${w.url}/batch/`, body(ids));
  t.equal(during.status, 503, 'not acknowledged while the store fails');
  t.equal(during.headers.get('retry-after'), '1');
  t.match(during.json, { type: 'unavailable', code: 'unavailable' });
  t.notMatch(during.text, /events_away|UNKNOWN_TABLE|Exception/, 'the store error is not leaked');

  await w.weir.store.command('RENAME TABLE events_away TO events');
  renamedBack = true;
  const retry = await post(`${w.url}/batch/`, body(ids));
  t.equal(retry.status, 200, 'the retry is accepted');
  const again = await post(`${w.url}/batch/`, body(ids));
  t.equal(again.status, 200, 'a second retry is accepted too');

  const rows = await w.rows<{ id: string; n: string }>(
    `SELECT JSONExtractString(properties, 'id') AS id, count() AS n FROM events WHERE event = 'fault' GROUP BY id`,
  );
  t.equal(rows.length, ids.length, 'every event is stored');
  t.ok(
    rows.every((r) => Number(r.n) === 1),
    'each exactly once',
  );
});
