import { randomBytes } from 'node:crypto';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import LZString from 'lz-string';
import {
  decodeBody,
  jsonDepth,
  jsonShape,
  MAX_JSON_DEPTH,
  type EncodedBody,
} from '../../src/capture/decode.ts';
import { MAX_BATCH_ITEMS } from '../../src/capture/limits.ts';
import { AppError } from '../../src/errors/app-error.ts';

const EVENT = { api_key: 'k', event: 'e', distinct_id: 'd', properties: { text: 'Grüße 😀 +/=' } };
const JSON_TEXT = JSON.stringify(EVENT);

function body(b: string | Buffer, extra: Partial<EncodedBody> = {}): EncodedBody {
  return {
    body: typeof b === 'string' ? Buffer.from(b) : b,
    contentType: 'application/json',
    contentEncoding: '',
    compression: '',
    ...extra,
  };
}

async function refusal(input: EncodedBody): Promise<{ code: string; status: number }> {
  try {
    await decodeBody(input);
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, status: err.status };
    throw err;
  }
  throw new Error('decodeBody accepted the body');
}

const FORM = 'application/x-www-form-urlencoded';
const lz = LZString.compressToBase64(JSON_TEXT);
const b64 = Buffer.from(JSON_TEXT).toString('base64');

t.test('every SDK encoding decodes to the same value', async (t) => {
  const cases: [string, EncodedBody][] = [
    ['json', body(JSON_TEXT)],
    ['text/plain', body(JSON_TEXT, { contentType: 'text/plain' })],
    ['leading whitespace', body(`\n\t ${JSON_TEXT}`)],
    ['UTF-8 BOM', body(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON_TEXT)]))],
    ['gzip header', body(gzipSync(JSON_TEXT), { contentEncoding: 'gzip' })],
    ['gzip header, other case', body(gzipSync(JSON_TEXT), { contentEncoding: 'GZIP' })],
    ['compression=gzip', body(gzipSync(JSON_TEXT), { compression: 'gzip' })],
    ['compression=gzip-js', body(gzipSync(JSON_TEXT), { compression: 'gzip-js' })],
    ['gzip magic bytes', body(gzipSync(JSON_TEXT), { contentType: '' })],
    ['compression=lz64', body(lz, { compression: 'lz64', contentType: 'text/plain' })],
    ['compression=lz-string', body(lz, { compression: 'lz-string' })],
    ['lz64 with + turned to spaces', body(lz.replaceAll('+', ' '), { compression: 'lz64' })],
    ['base64 text/plain', body(b64, { contentType: 'text/plain' })],
    ['form data=json', body(new URLSearchParams({ data: JSON_TEXT }).toString(), { contentType: FORM })],
    ['form data=base64', body(new URLSearchParams({ data: b64 }).toString(), { contentType: FORM })],
    // Hand-built forms that leave '+' unescaped: the form decoder turns it into a space.
    ['form data=base64, + unescaped', body(`data=${b64}`, { contentType: `${FORM}; charset=UTF-8` })],
    [
      'form data=lz64&compression=lz64',
      body(new URLSearchParams({ data: lz, compression: 'lz64' }).toString(), { contentType: FORM }),
    ],
    [
      'form data=lz64, compression in the query',
      body(new URLSearchParams({ data: lz }).toString(), { contentType: FORM, compression: 'lz64' }),
    ],
    ['form data=lz64, + unescaped', body(`compression=lz64&data=${lz}`, { contentType: FORM })],
    ['JSON labelled as a form (curl -d)', body(JSON_TEXT, { contentType: FORM })],
  ];
  t.ok(b64.includes('+') || lz.includes('+'), 'the fixtures exercise the + handling');
  for (const [name, input] of cases) {
    const { value } = await decodeBody(input);
    t.same(value, EVENT, name);
  }
});

t.test('a gzip body past the inline threshold inflates on the thread pool', async (t) => {
  const big = { ...EVENT, properties: { p: 'x'.repeat(200_000), r: Math.random().toString(36) } };
  const gz = gzipSync(JSON.stringify(big));
  const noise = Buffer.from(Array.from({ length: 70_000 }, () => Math.floor(Math.random() * 256)));
  // Random bytes do not compress, so this body is over 64 KiB on the wire.
  const withNoise = gzipSync(JSON.stringify({ ...big, n: noise.toString('base64') }));
  t.ok(withNoise.length > 64 * 1024);
  t.same((await decodeBody(body(gz, { contentEncoding: 'gzip' }))).value, big);
  t.match((await decodeBody(body(withNoise, { contentEncoding: 'gzip' }))).value, {
    n: noise.toString('base64'),
  });
});

t.test('decodedLength is the length of the JSON text', async (t) => {
  t.equal((await decodeBody(body(JSON_TEXT))).decodedLength, JSON_TEXT.length);
  t.equal(
    (await decodeBody(body(gzipSync(JSON_TEXT), { compression: 'gzip' }))).decodedLength,
    JSON_TEXT.length,
  );
});

t.test('undecodable bodies are invalid_payload', async (t) => {
  const cases: [string, EncodedBody][] = [
    ['empty', body('')],
    ['only spaces', body('   ')],
    ['bad JSON', body('{"a":')],
    ['JSON then garbage', body(`${JSON_TEXT}x`)],
    ['not base64', body('%%%', { contentType: 'text/plain' })],
    ['base64 of not-JSON', body(Buffer.from('hello').toString('base64'), { contentType: 'text/plain' })],
    ['truncated gzip', body(gzipSync(JSON_TEXT).subarray(0, -8), { contentEncoding: 'gzip' })],
    ['not gzip, labelled gzip', body(JSON_TEXT, { compression: 'gzip' })],
    ['invalid UTF-8', body(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]))],
    ['overlong UTF-8', body(Buffer.from([0x22, 0xc0, 0xaf, 0x22]))],
    ['UTF-16 surrogate encoded in UTF-8', body(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]))],
    ['lz64 garbage', body('@@@', { compression: 'lz64' })],
    ['lz64 empty', body('', { compression: 'lz64' })],
    ['form without data', body('x=1', { contentType: FORM })],
    ['form with empty data', body('data=', { contentType: FORM })],
    ['form data not JSON', body('data=%7Bnope', { contentType: FORM })],
    ['too deep', body(`${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`)],
    ['far too deep', body(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)],
  ];
  for (const [name, input] of cases)
    t.same(await refusal(input), { code: 'invalid_payload', status: 400 }, name);
});

t.test('Content-Encoding: the codings named are undone, last applied first', async (t) => {
  const cases: [string, Buffer][] = [
    ['br', brotliCompressSync(JSON_TEXT)],
    ['deflate', deflateSync(JSON_TEXT)],
    ['x-gzip', gzipSync(JSON_TEXT)],
    ['BR', brotliCompressSync(JSON_TEXT)],
    ['deflate, br', brotliCompressSync(deflateSync(JSON_TEXT))],
    ['identity, gzip', gzipSync(JSON_TEXT)],
    ['identity', Buffer.from(JSON_TEXT)],
  ];
  for (const [header, bytes] of cases) {
    const { value } = await decodeBody(body(bytes, { contentEncoding: header }));
    t.same(value, EVENT, header);
  }
  // posthog-js names gzip in the query; a client naming it in both compressed once.
  const once = body(gzipSync(JSON_TEXT), { contentEncoding: 'gzip', compression: 'gzip-js' });
  t.same((await decodeBody(once)).value, EVENT, 'gzip in the header and the query');
  const form = new URLSearchParams({ data: JSON_TEXT }).toString();
  t.same(
    (await decodeBody(body(brotliCompressSync(form), { contentType: FORM, contentEncoding: 'br' }))).value,
    EVENT,
    'a br form body: the coding is undone before the form is read',
  );
});

t.test('Content-Encoding refusals: 415 for a coding not taken, 400 for a body that is not one', async (t) => {
  for (const header of ['zstd', 'compress', 'br, zstd'])
    t.same(
      await refusal(body(JSON_TEXT, { contentEncoding: header })),
      { code: 'unsupported_encoding', status: 415 },
      header,
    );
  for (const header of ['br', 'deflate', 'gzip, br'])
    t.same(
      await refusal(body(JSON_TEXT, { contentEncoding: header })),
      { code: 'invalid_payload', status: 400 },
      header,
    );
  // Over 64 KiB on the wire: undone on the thread pool, refused the same way.
  const noise = randomBytes(100_000);
  t.same(
    await refusal(body(noise, { contentEncoding: 'br' })),
    { code: 'invalid_payload', status: 400 },
    'large',
  );
});

t.test('JSON that is not an object or an array is refused as such', (t) => {
  for (const text of ['12345', 'null', 'false', '"x"', ' 7 ']) {
    try {
      decodeBody(body(text));
      t.fail(`${text} accepted`);
    } catch (err) {
      t.match(err, { code: 'invalid_payload', message: /valid JSON, but not an event/ }, text);
    }
  }
  t.end();
});

t.test('JSON exactly MAX_JSON_DEPTH deep is accepted', (t) => {
  const text = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`;
  t.equal(jsonDepth(text), MAX_JSON_DEPTH);
  t.doesNotThrow(() => decodeBody(body(text)));
  t.end();
});

t.test('decoding is synchronous but for a gzip body over 64 KiB, inflated on the thread pool', async (t) => {
  t.notOk(decodeBody(body(JSON_TEXT)) instanceof Promise, 'plain JSON');
  t.notOk(
    decodeBody(body(gzipSync(JSON_TEXT), { contentEncoding: 'gzip' })) instanceof Promise,
    'small gzip',
  );
  // Random hex barely compresses, so the gzip body itself is over 64 KiB.
  const big = { batch: [{ event: 'e', properties: { noise: randomBytes(100_000).toString('hex') } }] };
  const gz = gzipSync(JSON.stringify(big));
  t.ok(gz.length > 64 * 1024);
  const decoding = decodeBody(body(gz, { contentEncoding: 'gzip' }));
  t.ok(decoding instanceof Promise, 'large gzip');
  t.same((await decoding).value, big);
});

t.test('jsonShape counts the items of the batch, not the members of anything else', (t) => {
  const items = (text: string): number => jsonShape(text).items;
  t.equal(items('[{},{},{}]'), 3, 'a top-level array');
  t.equal(items(' [ ] '), 0);
  t.equal(items('[ {"a":[1,2,3],"b":{"c":[4,5]}} , {} ]'), 2, 'arrays inside items do not count');
  t.equal(items('{"api_key":"k","batch":[{},{"x":"a,b,c"},{}]}'), 3, "a batch object's batch");
  t.equal(items('{"batch":[]}'), 0);
  t.equal(items('{"x":"batch","tags":[1,2,3,4],"batch":[{}]}'), 1, 'only the array keyed batch');
  t.equal(items('{"x":[1,2],"y":{"batch":[1,2,3]}}'), 0, 'a batch key deeper down is not the batch');
  t.equal(items('{"event":"e","properties":{"list":[1,2,3]}}'), 0, 'a single event');
  t.equal(items('["a\\\\",",",1]'), 3, 'commas in strings do not count');
  t.equal(jsonShape('[[[]]]').depth, 3);
  t.end();
});

t.test('a batch of more than MAX_BATCH_ITEMS items is refused before it is parsed', (t) => {
  const items = (n: number): string => Array.from({ length: n }, () => '{}').join(',');
  const shapes = {
    array: (i: string): string => `[${i}]`,
    batch: (i: string): string => `{"api_key":"k","batch":[${i}]}`,
  };
  for (const [name, shape] of Object.entries(shapes)) {
    t.throws(
      () => decodeBody(body(shape(items(MAX_BATCH_ITEMS + 1)))),
      { code: 'payload_too_large', attr: 'batch' },
      name,
    );
    const ok = decodeBody(body(shape(items(MAX_BATCH_ITEMS)))) as { value: unknown };
    const value = ok.value as unknown[] | { batch: unknown[] };
    t.equal(
      Array.isArray(value) ? value.length : value.batch.length,
      MAX_BATCH_ITEMS,
      `${name}: at the limit`,
    );
  }
  t.end();
});

t.test('jsonDepth', (t) => {
  t.equal(jsonDepth('1'), 0);
  t.equal(jsonDepth('"[[["'), 0, 'brackets in strings do not count');
  t.equal(jsonDepth('{"a":"\\"[[[","b":[]}'), 2, 'escaped quotes do not end a string');
  t.equal(jsonDepth('{"a":"\\\\","b":[[1]]}'), 3, 'an escaped backslash does not escape the quote after it');
  t.equal(jsonDepth('[{},[{}],[[]]]'), 3);
  t.equal(jsonDepth('["\\\\\\"]]", [[]]]'), 3, 'three backslashes: the last escapes the quote');
  t.equal(jsonDepth('["\\\\\\\\", [[]]]'), 3, 'four backslashes: the quote ends the string');
  t.equal(jsonDepth('[{"a":"x"},{"b":"y\\u005d"},[["[\\"{"]]]'), 3);
  // Against a plain character-by-character count, over texts with strings full of escapes and brackets.
  const slow = (text: string): number => {
    let depth = 0;
    let max = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '"') {
        for (i++; text[i] !== '"'; i++) {
          if (text[i] === '\\') i++;
        }
      } else if (c === '{' || c === '[') {
        max = Math.max(max, ++depth);
      } else if (c === '}' || c === ']') {
        depth--;
      }
    }
    return max;
  };
  const pieces = ['"', '\\', '[', ']', '{', '}', 'a', ' '];
  for (let n = 0; n < 300; n++) {
    const value = (d: number): unknown => {
      const s = Array.from({ length: n % 7 }, (_, i) => pieces[(n * 31 + i * 7 + d) % pieces.length]).join(
        '',
      );
      return d > 3 ? s : n % 2 ? [s, value(d + 1)] : { [s]: value(d + 1), k: [s] };
    };
    const text = JSON.stringify(value(0));
    t.equal(jsonDepth(text), slow(text), text);
  }
  t.end();
});
