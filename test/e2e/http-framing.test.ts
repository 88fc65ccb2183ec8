/**
 * Requests whose HTTP framing is wrong (docs/http.md). A Content-Length uWS refuses (negative, not digits,
 * 10^9 bytes or more) reaches Weir's handler first: Weir answers it, 400 or 413, before uWS closes the
 * connection. Framing uWS refuses before any handler runs (a bad chunk size, a head over 4 KiB) cannot be
 * answered: the connection is closed at once, never left open. On Node's http the parser refuses a bad
 * Content-Length itself, and Weir answers it with the same body; its head limit is 16 KiB.
 */
import t from 'tap';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, startTestWeir, testTransport } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const EVENT = JSON.stringify({ api_key: PROJECT_API_KEY, event: 'framing', distinct_id: 'framing' });
const ROUTES = [
  { path: '/i/v0/e/', headers: { Origin: 'https://app.example.com' } },
  { path: '/api/projects/1/query/', headers: { Authorization: `Bearer ${PERSONAL_API_KEY}` } },
] as const;

/** Sends `raw` on a new connection: the first answer (if any), and the connection closed after it. */
async function exchange(raw: string): Promise<{ status?: number; body: Record<string, unknown> }> {
  const conn = await RawConnection.open(w.url);
  try {
    await conn.write(raw);
    const res = await conn.response(5_000);
    // Closed by the server, not by the test: a refusal of the framing ends the connection.
    await conn.serverClosed(5_000);
    return { status: res?.status, body: res ? (JSON.parse(res.body) as Record<string, unknown>) : {} };
  } finally {
    conn.destroy();
  }
}

t.test('a Content-Length that is not a length is answered 400 invalid_request', async (t) => {
  for (const { path, headers } of ROUTES) {
    for (const length of ['-5', '1e3', '+3', '12abc']) {
      const res = await exchange(rawRequest('POST', path, EVENT, { ...headers, 'Content-Length': length }));
      t.equal(res.status, 400, `${path}, Content-Length ${length}: status`);
      t.match(res.body, { type: 'validation_error', code: 'invalid_request', attr: 'Content-Length' });
      t.match(res.body['detail'], new RegExp(`'${length.replace('+', '\\+')}'`), 'the detail names it');
    }
  }
});

t.test('a Content-Length of 10^9 bytes or more is answered 413', async (t) => {
  for (const { path, headers } of ROUTES) {
    for (const length of ['1000000000', '1000000000000000']) {
      const res = await exchange(rawRequest('POST', path, EVENT, { ...headers, 'Content-Length': length }));
      t.equal(res.status, 413, `${path}, Content-Length ${length}: status`);
      t.match(res.body, { type: 'payload_too_large', code: 'payload_too_large' });
    }
  }
});

t.test('capture answers a framing refusal with its CORS headers, as any refusal', async (t) => {
  const conn = await RawConnection.open(w.url);
  t.teardown(() => conn.destroy());
  await conn.write(
    rawRequest('POST', '/e/', EVENT, { Origin: 'https://app.example.com', 'Content-Length': '-1' }),
  );
  const res = await conn.response(5_000);
  t.equal(res?.headers['access-control-allow-origin'], 'https://app.example.com');
});

t.test('framing the server refuses before any handler is closed at once, never left open', async (t) => {
  const uws = testTransport() === 'uws';
  const cases: Record<string, { raw: string; status: number | undefined }> = {
    'a bad chunk size': {
      raw: rawRequest('POST', '/i/v0/e/', `zz\r\n${EVENT}\r\n0\r\n\r\n`, { 'Transfer-Encoding': 'chunked' }),
      status: undefined,
    },
    'a head over 16 KiB': {
      raw: rawRequest(
        'GET',
        '/_health',
        '',
        Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`X-Header-${i}`, 'v'.repeat(16)])),
      ),
      // uWS gives no answer; Node's parser refuses it, and Weir answers that as any bad request.
      status: uws ? undefined : 400,
    },
  };
  for (const [name, { raw, status }] of Object.entries(cases)) {
    const started = Date.now();
    const res = await exchange(raw);
    t.equal(res.status, status, `${name}: ${status ?? 'no answer'}`);
    t.ok(Date.now() - started < 5_000, `${name}: closed at once, not at an idle timeout`);
  }
});

t.test('Transfer-Encoding beside Content-Length is refused', async (t) => {
  const raw = rawRequest('POST', '/i/v0/e/', EVENT, {
    'Transfer-Encoding': 'chunked',
    'Content-Length': '5',
  });
  const res = await exchange(raw);
  if (testTransport() === 'uws') t.equal(res.status, undefined, 'uWS closes it, unanswered');
  else t.match(res, { status: 400, body: { code: 'invalid_request', attr: 'Content-Length' } });
});

t.test('a request with a good Content-Length on the same routes is taken as before', async (t) => {
  const conn = await RawConnection.open(w.url);
  t.teardown(() => conn.destroy());
  await conn.write(rawRequest('POST', '/i/v0/e/', EVENT, { 'Content-Length': `00${EVENT.length}` }));
  t.equal((await conn.response(5_000))?.status, 200, 'leading zeros are digits too');
});
