/**
 * A store fault, for real: the events table is renamed away under the running Weir. Capture keeps
 * acknowledging — a 200 means the events are committed to the store's commit log — and once the table is
 * back, the applier's retry puts every acknowledged event in it exactly once, however often clients retried.
 */
import t from 'tap';
import { PROJECT_API_KEY, post, startTestWeir, waitFor } from '../helpers/weir.ts';

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

t.test('events acknowledged while the store fails are all stored, once, after it recovers', async (t) => {
  const ids = Array.from({ length: 50 }, (_, i) => `fault-${i}`);
  await w.weir.store.command('RENAME TABLE events TO events_away');
  let renamedBack = false;
  t.teardown(async () => {
    if (!renamedBack) await w.weir.store.command('RENAME TABLE events_away TO events');
  });

  const during = await post(`${w.url}/batch/`, body(ids));
  t.equal(during.status, 200, 'committed to the commit log while the table is away');
  const retried = await post(`${w.url}/batch/`, body(ids));
  t.equal(retried.status, 200, 'a client retry is acknowledged too');
  await t.rejects(w.rows('SELECT count() FROM events'), 'a read fails rather than miss acknowledged events');
  const errors = await w.weir.metrics.registry.getSingleMetricAsString('weir_store_apply_errors_total');
  t.match(errors, /weir_store_apply_errors_total [1-9]/, 'the failed applies are counted');

  await w.weir.store.command('RENAME TABLE events_away TO events');
  renamedBack = true;
  const again = await post(`${w.url}/batch/`, body(ids));
  t.equal(again.status, 200, 'a retry after recovery is accepted');

  const rows = await waitFor(async () => {
    const r = await w.rows<{ id: string; n: string }>(
      `SELECT JSONExtractString(properties, 'id') AS id, count() AS n FROM events WHERE event = 'fault' GROUP BY id`,
    );
    return r.length === ids.length ? r : undefined;
  });
  t.equal(rows.length, ids.length, 'every event is stored');
  t.ok(
    rows.every((r) => Number(r.n) === 1),
    'each exactly once',
  );
});
