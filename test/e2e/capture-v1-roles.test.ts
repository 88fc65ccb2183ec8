/**
 * Capture V1 wherever capture runs: `weir start` with capture on threads of its own (the threads serve it,
 * publishing through the main thread, whose refusals come back as `retry` results), and `weir capture`
 * publishing to JetStream for a `weir ingest`. The in-process main thread is covered by capture-v1.test.ts.
 */
import t from 'tap';
import {
  postV1,
  v1Body,
  v1Event,
  v1Headers,
  type V1Answer,
  fillUntilRefused,
} from '../helpers/capture-v1.ts';
import { captureOverJetStream } from '../helpers/roles.ts';
import { startTestWeir, waitFor, weirSql } from '../helpers/weir.ts';

t.test('weir start with capture threads', async (t) => {
  const w = await startTestWeir({ WEIR_CAPTURE_THREADS: '2', WEIR_STORE_MAX_PENDING_MB: '1' });
  t.teardown(() => w.close());
  const events = [v1Event({ event: 'v1 threads' }), v1Event({ event: 'v1 threads', distinct_id: 'null' })];
  const uuids = events.map((e) => e['uuid'] as string);
  const res = await postV1(w.url, v1Body(events));
  t.equal(res.status, 200);
  t.same((res.json as V1Answer).results, {
    [uuids[0]!]: { result: 'ok' },
    [uuids[1]!]: { result: 'ok', details: 'person_processing_disabled' },
  });
  const count = async (): Promise<number> => {
    const [r] = await w.rows<{ n: string }>(
      `SELECT count() AS n FROM events WHERE toString(uuid) IN {uuids:Array(String)}`,
      { uuids },
    );
    return Number(r?.n);
  };
  t.equal(await count(), 2, 'stored');

  // The main thread's refusal crosses back to the thread, which answers each event retry.
  await w.weir.store.command('RENAME TABLE events TO events_away');
  let renamedBack = false;
  t.teardown(async () => {
    if (!renamedBack) await w.weir.store.command('RENAME TABLE events_away TO events');
  });
  const full = await fillUntilRefused(w.url, 'v1 filler');
  t.ok(full, 'the store stopped taking events');
  const retried = [v1Event({ event: 'v1 threads retry' })];
  const refused = await postV1(w.url, v1Body(retried));
  t.equal(refused.status, 200);
  t.equal(refused.headers.get('retry-after'), '1');
  t.same((refused.json as V1Answer).results, {
    [retried[0]!['uuid'] as string]: { result: 'retry', details: 'not_persisted' },
  });
  await w.weir.store.command('RENAME TABLE events_away TO events');
  renamedBack = true;
  await waitFor(
    async () => {
      const again = await postV1(w.url, v1Body(retried));
      const r = (again.json as V1Answer | undefined)?.results?.[retried[0]!['uuid'] as string];
      return r?.result === 'ok' ? true : undefined;
    },
    30_000,
    'the retried event to be taken',
  );
});

t.test('weir capture, over JetStream', async (t) => {
  const { ingest, capture, dataDir } = await captureOverJetStream(t);

  const events = [v1Event({ event: 'v1 role' }), v1Event({ event: 'v1 role' }), v1Event({ event: '' })];
  const uuids = events.map((e) => e['uuid'] as string);
  const res = await postV1(capture.url, v1Body(events, { historical_migration: true }));
  t.equal(res.status, 200, 'acknowledged by JetStream');
  t.same(
    Object.values((res.json as V1Answer).results).map((r) => r.result),
    ['ok', 'ok', 'drop'],
  );
  const unknown = await postV1(
    capture.url,
    v1Body([v1Event()]),
    v1Headers({ authorization: 'Bearer phc_role_nobody' }),
  );
  t.equal(unknown.status, 401, 'keys come from the owner’s catalog');

  // Ingest takes them from the stream; its store is read once it has stopped.
  await waitFor(
    async () => {
      const text = await ingest.metrics();
      const m = /^weir_ingest_events_total\{lane="historical"\} (\d+)$/m.exec(text);
      return m && Number(m[1]) >= 2 ? true : undefined;
    },
    30_000,
    'ingest to take the events',
  );
  await Promise.all([capture.stop(), ingest.stop()]);
  const stored = await weirSql(
    dataDir,
    "SELECT toString(uuid) AS u FROM events WHERE event = 'v1 role' ORDER BY u",
  );
  t.equal(stored.code, 0, stored.stderr);
  t.same(
    stored.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { u: string }).u),
    uuids.slice(0, 2).sort(),
    'the two ok events, once each',
  );
});
