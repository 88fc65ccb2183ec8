/**
 * Capture's HTTP surface (SPEC §2 "Routes", "Success"): CORS preflight, 405 on other methods, beacons,
 * the JSON 404, and many clients at once each getting every event stored exactly once.
 */
import t from 'tap';
import { assertError } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, request, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const KEY = PROJECT_API_KEY;
const PATHS = [
  '/i/v0/e/',
  '/i/v0/e',
  '/batch/',
  '/batch',
  '/e/',
  '/e',
  '/capture/',
  '/capture',
  '/track/',
  '/track',
  '/engage/',
  '/engage',
];
const ORIGIN = 'https://app.example.com';

async function count(sql: string, params: Record<string, unknown> = {}): Promise<number> {
  const [row] = await w.rows<{ n: string }>(sql, params);
  return Number(row?.n);
}

t.test('OPTIONS is a CORS preflight echoing the Origin', async (t) => {
  for (const path of PATHS) {
    const res = await request(`${w.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-custom',
      },
    });
    t.equal(res.status, 204, `${path}: status`);
    t.equal(res.text, '', `${path}: no body`);
    t.equal(res.headers.get('access-control-allow-origin'), ORIGIN, `${path}: origin`);
    t.equal(res.headers.get('access-control-allow-methods'), 'POST, OPTIONS', `${path}: methods`);
    t.match(res.headers.get('access-control-allow-headers') ?? '', /content-type/i, `${path}: headers`);
  }
});

t.test('POST answers carry the CORS origin too (a browser reads them)', async (t) => {
  const res = await post(
    `${w.url}/e/`,
    JSON.stringify({ api_key: KEY, event: 'http_cors', distinct_id: 'http-cors' }),
    { 'content-type': 'text/plain', origin: ORIGIN },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
  const refused = await post(`${w.url}/e/`, '{', { 'content-type': 'text/plain', origin: ORIGIN });
  t.equal(refused.status, 400);
  t.equal(refused.headers.get('access-control-allow-origin'), ORIGIN, 'on errors as well');
  const server = await post(
    `${w.url}/e/`,
    JSON.stringify({ api_key: KEY, event: 'http_cors', distinct_id: 'http-cors-server' }),
  );
  t.equal(server.status, 200);
  t.equal(
    server.headers.get('access-control-allow-origin'),
    null,
    'no Origin (a server SDK): no CORS headers',
  );
  t.equal(server.headers.get('content-type'), 'application/json');
});

t.test('other methods are 405 with Allow: POST, OPTIONS', async (t) => {
  for (const path of PATHS) {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await request(`${w.url}${path}?api_key=${KEY}&event=x&distinct_id=http-405`, { method });
      assertError(t, res, 405, 'method_not_allowed', 'method_not_allowed', `${method} ${path}`);
      t.equal(res.headers.get('allow'), 'POST, OPTIONS', `${method} ${path}: Allow`);
    }
  }
  t.equal(await count(`SELECT count() AS n FROM events WHERE distinct_id = 'http-405'`), 0, 'nothing stored');
});

t.test('?beacon=1 answers 204 with no body, and the event is stored', async (t) => {
  const res = await post(
    `${w.url}/e/?beacon=1`,
    JSON.stringify({ api_key: KEY, event: 'http_beacon', distinct_id: 'http-beacon' }),
    { 'content-type': 'text/plain' },
  );
  t.equal(res.status, 204);
  t.equal(res.text, '');
  t.equal(await count(`SELECT count() AS n FROM events WHERE event = 'http_beacon'`), 1);
});

t.test('a refused beacon still gets its error', async (t) => {
  const res = await post(`${w.url}/e/?beacon=1`, JSON.stringify({ event: 'x', distinct_id: 'y' }), {
    'content-type': 'text/plain',
  });
  assertError(t, res, 401, 'authentication_error', 'missing_api_key');
});

t.test('an unknown path is a JSON 404', async (t) => {
  for (const [method, path] of [
    ['POST', '/i/v0/x/'],
    ['POST', '/batches/'],
    ['GET', '/nothing-here'],
  ] as const) {
    const res = await request(`${w.url}${path}`, {
      method,
      body:
        method === 'POST' ? JSON.stringify({ api_key: KEY, event: 'x', distinct_id: 'http-404' }) : undefined,
    });
    assertError(t, res, 404, 'not_found', 'not_found', `${method} ${path}`);
  }
  t.equal(await count(`SELECT count() AS n FROM events WHERE distinct_id = 'http-404'`), 0);
});

t.test('no Authorization header is needed or read', async (t) => {
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: KEY, event: 'http_auth', distinct_id: 'http-auth' }),
    { 'content-type': 'application/json', authorization: 'Bearer phx_not_a_real_key' },
  );
  t.equal(res.status, 200);
  t.equal(await count(`SELECT count() AS n FROM events WHERE event = 'http_auth'`), 1);
});

t.test('20 clients × 50 requests in parallel: every event stored exactly once', async (t) => {
  const CLIENTS = 20;
  const REQUESTS = 50;
  const uuid = (c: number, r: number, i: number) =>
    `0190c0de-${String(c).padStart(4, '0')}-7000-8000-${String(r * 10 + i).padStart(12, '0')}`;
  const statuses = new Map<number, number>();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let r = 0; r < REQUESTS; r++) {
        // Alternate single events and two-event batches, to cover both shapes under load.
        const body =
          r % 2 === 0
            ? { api_key: KEY, event: 'http_load', distinct_id: `http-load-${c}`, uuid: uuid(c, r, 0) }
            : {
                api_key: KEY,
                batch: [0, 1].map((i) => ({
                  event: 'http_load',
                  distinct_id: `http-load-${c}`,
                  uuid: uuid(c, r, i),
                })),
              };
        const res = await post(`${w.url}${r % 2 === 0 ? '/i/v0/e/' : '/batch/'}`, JSON.stringify(body));
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  t.same([...statuses], [[200, CLIENTS * REQUESTS]], 'every request answered 200');
  const expected = CLIENTS * (REQUESTS / 2) * 3;
  const [row] = await w.rows<{ n: string; uuids: string; ids: string }>(
    `SELECT count() AS n, uniqExact(uuid) AS uuids, uniqExact(distinct_id) AS ids FROM events WHERE event = 'http_load'`,
  );
  t.same(row, { n: String(expected), uuids: String(expected), ids: String(CLIENTS) });
  // Per client, every uuid it sent is there.
  const perClient = await w.rows<{ distinct_id: string; n: string }>(
    `SELECT distinct_id, count() AS n FROM events WHERE event = 'http_load' GROUP BY distinct_id`,
  );
  t.same(
    perClient.map((r) => r.n),
    Array.from({ length: CLIENTS }, () => String((REQUESTS / 2) * 3)),
    'each client has all of its events',
  );
});
