/**
 * A body over a route's limit is answered 413 while the client is still sending it, and the client reads
 * that answer (SPEC §5): the connection is not reset under a client still writing. A declared body up to
 * 64 MiB is read on and thrown away, so that even a client that reads only once it has sent everything
 * gets the answer; past that, or still growing (chunked), reading stops and uWS's idle timeout closes the
 * connection.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { assertError } from '../helpers/capture-bodies.ts';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import { PERSONAL_API_KEY, request, startTestWeir, type HttpResult } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const MiB = 1024 * 1024;
const BIG = Buffer.alloc(25 * MiB, 0x20); // spaces: what it holds does not matter, only its size
const QUERY_PATH = '/api/projects/1/query/';
const AUTH = { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' };
/** Some tries of each: before the fix, a try failed with EPIPE more often than not, but not always. */
const TRIES = 3;

function chunkedBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < BIG.length; at += MiB) controller.enqueue(BIG.subarray(at, at + MiB));
      controller.close();
    },
  });
}

/** Node's http client, which writes the whole body and reads the answer as it comes. */
function httpPost(url: string, body: Buffer): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: new Headers(res.headers as Record<string, string>),
          text,
          json: JSON.parse(text) as unknown,
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('a 25 MiB body is answered 413 to fetch and to Node http, every time', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const fixed = await request(`${w.url}/i/v0/e/`, { method: 'POST', body: BIG });
    assertError(t, fixed, 413, 'payload_too_large', 'payload_too_large', `capture, fetch ${i}`);
    t.equal(fixed.headers.get('connection'), 'close', 'the connection is not kept');
    const chunked = await request(`${w.url}/i/v0/e/`, {
      method: 'POST',
      body: chunkedBody(),
      duplex: 'half',
    });
    assertError(t, chunked, 413, 'payload_too_large', 'payload_too_large', `capture, chunked ${i}`);
    const node = await httpPost(`${w.url}/batch/`, BIG);
    assertError(t, node, 413, 'payload_too_large', 'payload_too_large', `capture, node http ${i}`);
    const api = await request(`${w.url}${QUERY_PATH}`, { method: 'POST', headers: AUTH, body: BIG });
    assertError(t, api, 413, 'payload_too_large', 'payload_too_large', `query API, fetch ${i}`);
    t.match((api.json as { detail: string }).detail, /1 MiB/);
  }
});

t.test('a client that reads only once it has sent the whole body still gets the 413', async (t) => {
  for (const [path, headers] of [
    ['/i/v0/e/', {}],
    [QUERY_PATH, { Authorization: `Bearer ${PERSONAL_API_KEY}` }],
  ] as const) {
    const conn = await RawConnection.open(w.url);
    t.teardown(() => conn.destroy());
    const head = rawRequest('POST', path, '', { ...headers, 'Content-Length': String(BIG.length) });
    // Every byte is taken (read and thrown away): the write completes instead of failing on a reset.
    await conn.write(Buffer.concat([Buffer.from(head), BIG]));
    const res = await conn.response();
    t.equal(res?.status, 413, `${path}: answered after the body was sent`);
    t.match(JSON.parse(res?.body ?? '{}'), { code: 'payload_too_large' }, `${path}: the SPEC §1 body`);
    t.equal(res?.headers['connection'], 'close', `${path}: Connection: close`);
  }
});

t.test('past 64 MiB declared, reading stops: the answer is read, then the connection ends', async (t) => {
  const conn = await RawConnection.open(w.url);
  t.teardown(() => conn.destroy());
  const declared = 200 * MiB;
  await conn.write(rawRequest('POST', '/i/v0/e/', '', { 'Content-Length': String(declared) }));
  // Send the body without waiting for each write: the kernel takes what fits, and no more once the server
  // stops reading.
  let taken = 0;
  const chunk = Buffer.alloc(MiB, 0x20);
  for (let sent = 0; sent < declared; sent += MiB) {
    conn.socket.write(chunk, (err) => {
      if (!err) taken += MiB;
    });
  }
  const res = await conn.response();
  t.equal(res?.status, 413, 'answered while the client is still sending');
  t.equal(res?.headers['connection'], 'close');
  // uWS's idle timeout (10 s, checked every 4 s) ends the connection: bounded in time as well as in size.
  await conn.serverClosed(30_000);
  t.ok(taken < 64 * MiB, `the server read little of the body (${taken / MiB} MiB of 200 were taken)`);
});
