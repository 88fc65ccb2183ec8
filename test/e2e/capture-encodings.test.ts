/**
 * Capture's Content-Encoding (SPEC §2 "Rejected"): gzip, deflate and br bodies are decoded (with the same
 * 100 MiB decoded limit), a body that does not decode with the coding named is a 400, any other coding is a
 * 415 naming the codings taken; and a body that decodes to JSON that is not events says so.
 */
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { assertError } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const JSON_TYPE = { 'content-type': 'application/json' };
const event = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ api_key: PROJECT_API_KEY, event: 'enc', distinct_id: `enc-${id}`, ...extra });

async function stored(id: string): Promise<number> {
  const [row] = await w.rows<{ n: string }>(
    'SELECT count() AS n FROM events WHERE distinct_id = {id:String}',
    {
      id: `enc-${id}`,
    },
  );
  return Number(row?.n);
}

t.test('br and deflate bodies are decoded and stored, as gzip ones are', async (t) => {
  const cases: [string, string, (b: Buffer) => Buffer][] = [
    ['br', 'br', (b) => brotliCompressSync(b)],
    ['deflate', 'deflate', (b) => deflateSync(b)],
    ['gzip', 'gzip', (b) => gzipSync(b)],
    ['br over gzip', 'gzip, br', (b) => brotliCompressSync(gzipSync(b))],
    ['identity', 'identity', (b) => b],
  ];
  for (const [name, header, encode] of cases) {
    const id = name.replaceAll(' ', '-');
    const res = await post(`${w.url}/i/v0/e/`, encode(Buffer.from(event(id))), {
      ...JSON_TYPE,
      'content-encoding': header,
    });
    t.equal(res.status, 200, `${name}: accepted`);
    t.equal(await stored(id), 1, `${name}: stored once`);
  }
});

t.test('a body that does not decode with the coding named is a 400, and nothing is stored', async (t) => {
  for (const coding of ['br', 'deflate', 'gzip']) {
    const res = await post(`${w.url}/i/v0/e/`, event(`plain-${coding}`), {
      ...JSON_TYPE,
      'content-encoding': coding,
    });
    assertError(t, res, 400, 'validation_error', 'invalid_payload', `plain JSON labelled ${coding}`);
    t.match((res.json as { detail: string }).detail, new RegExp(`not valid ${coding}`));
    t.equal(await stored(`plain-${coding}`), 0, `${coding}: nothing stored`);
  }
});

t.test('a coding capture does not take is a 415 naming the ones it takes', async (t) => {
  for (const coding of ['zstd', 'compress', 'gzip, zstd']) {
    const res = await post(`${w.url}/i/v0/e/`, event('zstd'), { ...JSON_TYPE, 'content-encoding': coding });
    assertError(t, res, 415, 'unsupported_media_type', 'unsupported_encoding', coding);
    t.match((res.json as { detail: string }).detail, /gzip, deflate and br/);
    t.equal((res.json as { attr: unknown }).attr, 'Content-Encoding');
  }
  t.equal(await stored('zstd'), 0, 'nothing stored');
});

t.test('a br body decoding past 100 MiB is a 413, as a gzip one is', async (t) => {
  // Spaces compress ~1000:1, so the bomb is small on the wire; the JSON around them is valid.
  const padding = ' '.repeat(101 * 1024 * 1024);
  const bomb = brotliCompressSync(Buffer.from(`${event('bomb').slice(0, -1)},"p":"${padding}"}`), {
    params: { [constants.BROTLI_PARAM_QUALITY]: 1 },
  });
  t.ok(bomb.length < 1024 * 1024, `the body is ${bomb.length} bytes on the wire`);
  const res = await post(`${w.url}/i/v0/e/`, bomb, { ...JSON_TYPE, 'content-encoding': 'br' });
  assertError(t, res, 413, 'payload_too_large', 'payload_too_large', 'br bomb');
  t.equal(await stored('bomb'), 0, 'nothing stored');
});

t.test('a body that is JSON but not events says so, rather than that it is not UTF-8', async (t) => {
  for (const body of ['12345', 'null', 'true', '"hello"', '-1.5e3']) {
    const res = await post(`${w.url}/i/v0/e/`, body, JSON_TYPE);
    assertError(t, res, 400, 'validation_error', 'invalid_payload', body);
    t.equal(
      (res.json as { detail: string }).detail,
      'The body is valid JSON, but not an event, a batch or an array of events.',
      `${body}: the detail`,
    );
  }
  const gzipped = await post(`${w.url}/i/v0/e/`, gzipSync('12345'), {
    ...JSON_TYPE,
    'content-encoding': 'gzip',
  });
  t.match(gzipped.json, { code: 'invalid_payload', detail: /not an event/ }, 'also once decoded');
});
