/**
 * `weir start` with capture on threads of its own (WEIR_CAPTURE_THREADS): capture is served by the threads,
 * everything else is passed on to the main thread, and the contract seen from outside is the same.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, post, request, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir({ WEIR_CAPTURE_THREADS: '2' });
t.teardown(() => w.close());

const bearer = { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' };
const bearerRaw = { Authorization: `Bearer ${PERSONAL_API_KEY}` };

t.test(
  'events captured on the threads are stored before the 200, and readable through the API',
  async (t) => {
    const single = await post(
      `${w.url}/i/v0/e/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, event: 'threaded', distinct_id: 'thread-1' }),
    );
    t.equal(single.status, 200);
    t.same(single.json, { status: 'Ok' });
    const batch = await post(
      `${w.url}/batch/`,
      JSON.stringify({
        api_key: PROJECT_API_KEY,
        batch: Array.from({ length: 50 }, (_, i) => ({ event: 'threaded', distinct_id: `thread-b${i}` })),
      }),
    );
    t.equal(batch.status, 200);
    const rows = await w.rows<{ n: string }>(`SELECT count() AS n FROM events WHERE event = 'threaded'`);
    t.same(rows, [{ n: '51' }], 'every event answered 200 is in the store');

    const query = await request(`${w.url}/api/projects/1/query/`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({
        query: { kind: 'HogQLQuery', query: "select count() from events where event = 'threaded'" },
      }),
    });
    t.equal(query.status, 200, 'the query API answers through the thread');
    t.same((query.json as { results: unknown }).results, [[51]]);
  },
);

t.test('refusals keep their status, code and headers', async (t) => {
  const bad = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: 'phc_nobody', event: 'x', distinct_id: 'd' }),
  );
  t.equal(bad.status, 401);
  t.match(bad.json, { type: 'authentication_error', code: 'invalid_api_key' });
  const method = await request(`${w.url}/batch/`, { method: 'GET' });
  t.equal(method.status, 405);
  t.equal(method.headers.get('allow'), 'POST, OPTIONS');
  const missing = await request(`${w.url}/no/such/path`);
  t.equal(missing.status, 404, 'a path nobody serves is the main thread’s JSON 404');
  t.match(missing.json, { code: 'not_found' });
  const noKey = await request(`${w.url}/api/projects/`);
  t.equal(noKey.status, 401, 'the API’s own refusals come through as they are');
});

t.test('a project made through the API takes events at once', async (t) => {
  const made = await request(`${w.url}/api/projects/`, {
    method: 'POST',
    headers: bearer,
    body: JSON.stringify({ name: 'made while running' }),
  });
  t.equal(made.status, 201);
  const { id, api_token: token } = made.json as { id: number; api_token: string };
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: token, event: 'first', distinct_id: 'new-project-user' }),
  );
  t.equal(res.status, 200, 'the threads had the new key before its creator heard of it');
  const rows = await w.rows<{ project_id: string }>(
    `SELECT project_id FROM events WHERE distinct_id = 'new-project-user'`,
  );
  t.same(rows, [{ project_id: String(id) }]);
});

t.test('operations routes: ready, healthy, and metrics from every thread', async (t) => {
  t.equal((await request(`${w.url}/_ready`)).status, 200);
  t.equal((await request(`${w.url}/_health`)).status, 200);
  const metrics = await request(`${w.url}/metrics`);
  t.equal(metrics.status, 200);
  const accepted = /^weir_capture_requests_total\{route="i\/v0\/e",status="200"\} (\d+)$/m.exec(metrics.text);
  t.ok(accepted && Number(accepted[1]) >= 2, 'capture counters of the threads are in /metrics');
  t.match(
    metrics.text,
    /^weir_ingest_events_total\{lane="live"\} \d+$/m,
    'ingest counters of the main thread too',
  );
  t.match(metrics.text, /^weir_process_resident_memory_bytes \d+/m, 'process figures are counted once');
});

t.test('many clients at once: each event answered 200 is stored exactly once', async (t) => {
  const uuids = Array.from({ length: 300 }, () => randomUUID());
  const results = await Promise.all(
    uuids.map((uuid, i) =>
      post(
        `${w.url}/i/v0/e/`,
        JSON.stringify({ api_key: PROJECT_API_KEY, event: 'crowd', distinct_id: `crowd-${i % 7}`, uuid }),
      ),
    ),
  );
  t.same(
    results.map((r) => r.status),
    uuids.map(() => 200),
  );
  // The same requests again (a client retrying): nothing new is stored.
  await Promise.all(
    uuids
      .slice(0, 50)
      .map((uuid, i) =>
        post(
          `${w.url}/i/v0/e/`,
          JSON.stringify({ api_key: PROJECT_API_KEY, event: 'crowd', distinct_id: `crowd-${i % 7}`, uuid }),
        ),
      ),
  );
  const rows = await w.rows<{ n: string; u: string }>(
    `SELECT count() AS n, uniqExact(uuid) AS u FROM events FINAL WHERE event = 'crowd'`,
  );
  t.same(rows, [{ n: '300', u: '300' }]);
});

t.test('framing refusals are answered on the threads and through the proxy alike', async (t) => {
  for (const path of ['/i/v0/e/', '/api/projects/1/query/']) {
    for (const [length, status] of [
      ['-5', 400],
      ['1000000000000000', 413],
      [String(200 * 1024 * 1024), 413],
    ] as const) {
      const conn = await RawConnection.open(w.url);
      t.teardown(() => conn.destroy());
      await conn.write(rawRequest('POST', path, '{}', { ...bearerRaw, 'Content-Length': length }));
      t.equal((await conn.response(5_000))?.status, status, `${path}, Content-Length ${length}`);
    }
  }
});
