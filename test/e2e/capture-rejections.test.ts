/**
 * Every capture refusal of SPEC §2 "Rejected": its status and SPEC §1 error body, and that nothing of a
 * refused request is stored — not its good events, not the warnings of its dropped ones.
 */
import { gzipSync } from 'node:zlib';
import t from 'tap';
import LZString from 'lz-string';
import { assertError, base64, form, gzip } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const KEY = PROJECT_API_KEY;
const MiB = 1024 * 1024;

interface Case {
  readonly name: string;
  readonly path?: string;
  readonly headers?: Record<string, string>;
  /** A value is sent as its JSON text; a string or bytes as they are. */
  readonly body: unknown;
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly attr?: string | null;
}

/** A well-formed event whose distinct_id marks it as belonging to case `name`: it must never be stored. */
const good = (name: string, n = 0) => ({
  event: 'rj_good',
  distinct_id: `rj-${name}`,
  properties: { n },
});
const batchOf = (name: string, bad: Record<string, unknown>) => ({
  api_key: KEY,
  batch: [good(name, 0), bad, good(name, 2)],
});

async function send(c: Case) {
  const body = typeof c.body === 'string' || c.body instanceof Uint8Array ? c.body : JSON.stringify(c.body);
  return post(`${w.url}${c.path ?? '/i/v0/e/'}`, body, c.headers ?? { 'content-type': 'application/json' });
}

async function storedCount(name: string): Promise<number> {
  const [row] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM events WHERE distinct_id = {id:String}`,
    { id: `rj-${name}` },
  );
  return Number(row?.n);
}

/** The `rj-…` distinct_ids a body carries in readable form (none in compressed bodies). */
function markers(body: unknown): string[] {
  const text =
    typeof body === 'string'
      ? body
      : body instanceof Uint8Array
        ? Buffer.from(body).toString('latin1')
        : JSON.stringify(body);
  return [...new Set(Array.from(text.matchAll(/"rj-([^"]*)"/g), (m) => m[1]!))];
}

function check(cases: readonly Case[]) {
  for (const c of cases) {
    t.test(`${c.code}: ${c.name}`, async (t) => {
      const res = await send(c);
      assertError(t, res, c.status, c.type, c.code);
      if (c.attr !== undefined) t.equal((res.json as { attr: unknown }).attr, c.attr, 'attr');
      for (const id of markers(c.body)) t.equal(await storedCount(id), 0, `nothing stored for rj-${id}`);
    });
  }
}

const auth = { status: 401, type: 'authentication_error' } as const;
const invalid = { status: 400, type: 'validation_error' } as const;

t.test('the good events of the cases below are stored when nothing is wrong (control)', async (t) => {
  const res = await send({
    name: 'control',
    body: { api_key: KEY, batch: [good('control', 0), good('control', 1)] },
    ...invalid,
    code: '',
  });
  t.equal(res.status, 200);
  t.equal(await storedCount('control'), 2);
});

check([
  { name: 'single event without a key', body: good('mk-single'), ...auth, code: 'missing_api_key' },
  {
    name: 'batch without a key',
    body: { batch: [good('mk-batch')] },
    ...auth,
    code: 'missing_api_key',
    attr: 'api_key',
  },
  {
    name: 'empty and non-string keys count as none',
    body: { api_key: '', token: 42, batch: [{ ...good('mk-empty'), $token: '  ' }] },
    ...auth,
    code: 'missing_api_key',
  },
  {
    name: 'unknown key',
    body: { api_key: 'phc_no_such_project', ...good('ik-unknown') },
    ...auth,
    code: 'invalid_api_key',
    attr: 'api_key',
  },
  {
    name: 'unknown token in properties',
    body: { event: 'x', properties: { token: 'phc_nope', distinct_id: 'rj-ik-props' } },
    ...auth,
    code: 'invalid_api_key',
  },
  {
    name: 'batch key and a different key in one event',
    body: {
      api_key: KEY,
      batch: [good('ck-props'), { ...good('ck-props'), properties: { token: 'phc_other' } }],
    },
    ...auth,
    code: 'inconsistent_api_key',
    attr: 'api_key',
  },
  {
    name: 'two keys in an array',
    body: [
      { api_key: KEY, ...good('ck-array') },
      { api_key: 'phc_other', ...good('ck-array') },
    ],
    ...auth,
    code: 'inconsistent_api_key',
  },
  {
    name: 'api_key and token disagree',
    body: { api_key: KEY, token: 'phc_other', ...good('ck-alias') },
    ...auth,
    code: 'inconsistent_api_key',
  },
]);

const goodJson = (name: string) => JSON.stringify({ api_key: KEY, ...good(name) });
const deep = (levels: number) => {
  // The event object and its properties are two levels; `nest` adds the rest.
  const inner = levels - 2;
  return `{"api_key":"${KEY}","event":"rj_good","distinct_id":"rj-deep-${levels}","properties":{"nest":${'['.repeat(inner)}${']'.repeat(inner)}}}`;
};
const badUtf8 = Buffer.concat([
  Buffer.from(`{"api_key":"${KEY}","event":"rj_good","distinct_id":"rj-utf8","properties":{"s":"`),
  Buffer.from([0xc3, 0x28, 0xff]),
  Buffer.from('"}}'),
]);
const truncatedGzip = gzip(goodJson('gz-truncated')).subarray(0, -12);
const text = { 'content-type': 'text/plain' };
const formType = { 'content-type': 'application/x-www-form-urlencoded' };

check([
  { name: 'truncated JSON', body: goodJson('bad-json').slice(0, -5), ...invalid, code: 'invalid_payload' },
  { name: 'JSON with a trailing comma', body: '{"api_key":"x",}', ...invalid, code: 'invalid_payload' },
  { name: 'empty body', body: '', ...invalid, code: 'invalid_payload' },
  { name: 'a JSON string', body: '"hello"', headers: text, ...invalid, code: 'invalid_payload' },
  { name: 'a JSON number', body: '42', ...invalid, code: 'invalid_payload' },
  {
    name: 'truncated gzip (header)',
    body: truncatedGzip,
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'truncated gzip (magic bytes)',
    body: truncatedGzip,
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'plain JSON labelled ?compression=gzip',
    path: '/i/v0/e/?compression=gzip',
    body: goodJson('gz-not'),
    ...invalid,
    code: 'invalid_payload',
  },
  { name: 'bad base64 body', body: '%%%not base64%%%', headers: text, ...invalid, code: 'invalid_payload' },
  {
    name: 'base64 of something that is not JSON',
    body: base64('rj-b64-garbage, not json'),
    headers: text,
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'form data= with bad base64',
    body: form({ data: '!!!' }),
    headers: formType,
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'form without data',
    body: form({ other: goodJson('form-no-data') }),
    headers: formType,
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'lz64 body that is not lz-string',
    path: '/i/v0/e/?compression=lz64',
    body: '@@@@',
    headers: text,
    ...invalid,
    code: 'invalid_payload',
  },
  {
    name: 'lz64 of something that is not JSON',
    path: '/i/v0/e/?compression=lz64',
    body: LZString.compressToBase64('rj-lz-garbage'),
    headers: text,
    ...invalid,
    code: 'invalid_payload',
  },
  { name: 'invalid UTF-8', body: badUtf8, ...invalid, code: 'invalid_payload' },
  {
    name: 'invalid UTF-8 inside gzip',
    body: gzipSync(badUtf8),
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    ...invalid,
    code: 'invalid_payload',
  },
  { name: 'deep-129', body: deep(129), ...invalid, code: 'invalid_payload' },
  { name: 'deep-5000', body: deep(5000), ...invalid, code: 'invalid_payload' },
]);

t.test('JSON nested exactly 128 levels deep is accepted (the limit is > 128)', async (t) => {
  const res = await post(`${w.url}/i/v0/e/`, deep(128));
  t.equal(res.status, 200, res.text);
  const [row] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM events WHERE distinct_id = 'rj-deep-128'`,
  );
  t.equal(Number(row?.n), 1);
});

const item = (name: string) => good(name);
check([
  {
    name: 'batch object without batch on /batch/',
    path: '/batch/',
    body: { api_key: KEY, ...good('eb-missing') },
    ...invalid,
    code: 'empty_batch',
    attr: 'batch',
  },
  {
    name: 'batch that is a string',
    body: { api_key: KEY, batch: 'rj-eb-string', ...item('eb-string') },
    ...invalid,
    code: 'empty_batch',
  },
  {
    name: 'batch that is an object',
    path: '/batch/',
    body: { api_key: KEY, batch: good('eb-object') },
    ...invalid,
    code: 'empty_batch',
  },
  {
    name: 'empty batch',
    path: '/batch/',
    body: { api_key: KEY, batch: [] },
    ...invalid,
    code: 'empty_batch',
  },
  {
    name: 'empty batch on /i/v0/e/',
    body: { api_key: KEY, batch: [] },
    ...invalid,
    code: 'empty_batch',
  },
  { name: 'empty array', body: [], ...invalid, code: 'empty_batch' },
]);

check([
  {
    name: 'properties a string',
    body: batchOf('ie-props-string', { event: 'x', distinct_id: 'rj-ie-props-string', properties: 'a=b' }),
    ...invalid,
    code: 'invalid_event',
    attr: 'properties',
  },
  {
    name: 'properties an array',
    body: batchOf('ie-props-array', { event: 'x', distinct_id: 'rj-ie-props-array', properties: [1] }),
    ...invalid,
    code: 'invalid_event',
  },
  {
    name: 'timestamp a number',
    body: batchOf('ie-ts-number', { event: 'x', distinct_id: 'rj-ie-ts-number', timestamp: 1700000000000 }),
    ...invalid,
    code: 'invalid_event',
    attr: 'timestamp',
  },
  {
    name: 'timestamp an object',
    body: batchOf('ie-ts-object', { event: 'x', distinct_id: 'rj-ie-ts-object', timestamp: {} }),
    ...invalid,
    code: 'invalid_event',
  },
  {
    name: 'event name not a string',
    body: batchOf('ie-name', { event: 7, distinct_id: 'rj-ie-name' }),
    ...invalid,
    code: 'invalid_event',
  },
  {
    name: 'batch item not an object',
    body: { api_key: KEY, batch: [good('ie-item'), 'rj-ie-item'] },
    ...invalid,
    code: 'invalid_event',
  },
]);

const groupIdentify = (name: string, props: Record<string, unknown>) =>
  batchOf(name, { event: '$groupidentify', distinct_id: `rj-${name}`, properties: props });
const long = 'g'.repeat(401);
check([
  {
    name: 'no $group_type',
    body: groupIdentify('ig-no-type', { $group_key: 'acme' }),
    ...invalid,
    code: 'invalid_group',
    attr: 'properties.$group_type',
  },
  {
    name: 'no $group_key',
    body: groupIdentify('ig-no-key', { $group_type: 'company' }),
    ...invalid,
    code: 'invalid_group',
    attr: 'properties.$group_key',
  },
  {
    name: 'numeric $group_key',
    body: groupIdentify('ig-num-key', { $group_type: 'company', $group_key: 42 }),
    ...invalid,
    code: 'invalid_group',
  },
  {
    name: 'null $group_type',
    body: groupIdentify('ig-null-type', { $group_type: null, $group_key: 'acme' }),
    ...invalid,
    code: 'invalid_group',
  },
  {
    name: '$group_type over 400 characters',
    body: groupIdentify('ig-long-type', { $group_type: long, $group_key: 'acme' }),
    ...invalid,
    code: 'invalid_group',
  },
  {
    name: '$group_key over 400 characters',
    body: groupIdentify('ig-long-key', { $group_type: 'company', $group_key: long }),
    ...invalid,
    code: 'invalid_group',
  },
  {
    name: '$create_alias without alias',
    body: batchOf('ia-none', { event: '$create_alias', distinct_id: 'rj-ia-none', properties: {} }),
    ...invalid,
    code: 'invalid_alias',
    attr: 'properties.alias',
  },
  {
    name: '$create_alias with a numeric alias',
    body: batchOf('ia-num', { event: '$create_alias', distinct_id: 'rj-ia-num', properties: { alias: 5 } }),
    ...invalid,
    code: 'invalid_alias',
  },
  ...['survey sent', 'survey shown', 'survey dismissed'].map((event) => ({
    name: `${event} without $survey_id`,
    body: batchOf(`ms-${event}`, {
      event,
      distinct_id: `rj-ms-${event}`,
      properties: { $survey_response: 'yes' },
    }),
    ...invalid,
    code: 'missing_survey_id',
    attr: 'properties.$survey_id',
  })),
]);

t.test('the special events are accepted when well formed (controls for the refusals above)', async (t) => {
  const g400 = 'g'.repeat(400);
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({
      api_key: KEY,
      batch: [
        {
          event: '$groupidentify',
          distinct_id: 'rj-special-ok',
          properties: { $group_type: g400, $group_key: g400 },
        },
        { event: '$create_alias', distinct_id: 'rj-special-ok', properties: { alias: 'rj-special-alias' } },
        { event: 'survey sent', distinct_id: 'rj-special-ok', properties: { $survey_id: 's1' } },
        { event: 'survey shown', distinct_id: 'rj-special-ok', properties: { $survey_id: 's1' } },
        { event: 'survey dismissed', distinct_id: 'rj-special-ok', properties: { $survey_id: 's1' } },
      ],
    }),
  );
  t.equal(res.status, 200, res.text);
  const rows = await w.rows<{ event: string }>(
    `SELECT event FROM events WHERE distinct_id = 'rj-special-ok' ORDER BY event`,
  );
  t.same(
    rows.map((r) => r.event),
    ['$create_alias', '$groupidentify', 'survey dismissed', 'survey sent', 'survey shown'],
  );
});

t.test('a refused request stores neither its events nor the warnings of its dropped events', async (t) => {
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({
      api_key: KEY,
      batch: [
        good('drop-then-refuse'),
        { event: 'rj_dropped_marker' }, // no distinct_id: a silent drop, with a warning when accepted
        { event: 'survey sent', distinct_id: 'rj-drop-then-refuse' },
      ],
    }),
  );
  assertError(t, res, 400, 'validation_error', 'missing_survey_id');
  t.equal(await storedCount('drop-then-refuse'), 0);
  const warnings = await w.rows(
    `SELECT type FROM ingestion_warnings WHERE JSONExtractString(details, 'event') = 'rj_dropped_marker'`,
  );
  t.same(warnings, []);
});

t.test('payload_too_large', (t) => {
  const tooLarge = { status: 413, type: 'payload_too_large', code: 'payload_too_large' } as const;

  t.test('a body over 20 MiB on the wire', async (t) => {
    const body = JSON.stringify({
      api_key: KEY,
      ...good('tl-wire'),
      properties: { p: 'a'.repeat(21 * MiB) },
    });
    const res = await post(`${w.url}/i/v0/e/`, body);
    assertError(t, res, tooLarge.status, tooLarge.type, tooLarge.code);
    t.equal(await storedCount('tl-wire'), 0);
  });

  t.test('a body over 20 MiB without Content-Length (chunked)', async (t) => {
    const chunk = new Uint8Array(MiB).fill(0x61);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 21) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${w.url}/batch/`, {
      method: 'POST',
      body: stream,
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
    });
    t.equal(res.status, 413);
    t.match(await res.json(), { code: 'payload_too_large', type: 'payload_too_large' });
  });

  t.test('a gzip bomb inflating to over 100 MiB', async (t) => {
    const bomb = gzipSync(
      Buffer.concat([
        Buffer.from(`{"api_key":"${KEY}","event":"rj_good","distinct_id":"rj-tl-bomb","properties":{"p":"`),
        Buffer.alloc(101 * MiB, 0x61),
        Buffer.from('"}}'),
      ]),
    );
    t.ok(bomb.length < MiB, 'the bomb itself is small on the wire');
    const res = await post(`${w.url}/i/v0/e/?compression=gzip`, bomb, { 'content-type': 'text/plain' });
    assertError(t, res, tooLarge.status, tooLarge.type, tooLarge.code);
    t.equal(await storedCount('tl-bomb'), 0);
  });

  t.test('one event over 1 MiB in a bigger batch', async (t) => {
    const res = await post(
      `${w.url}/batch/`,
      JSON.stringify(
        batchOf('tl-event', {
          event: 'big',
          distinct_id: 'rj-tl-event',
          properties: { p: 'a'.repeat(MiB + 10) },
        }),
      ),
    );
    assertError(t, res, tooLarge.status, tooLarge.type, tooLarge.code);
    t.equal((res.json as { attr: unknown }).attr, 'batch[1]');
    t.equal(await storedCount('tl-event'), 0);
  });

  t.test('one event over 1 MiB of UTF-8 but under 1 Mi characters', async (t) => {
    // 400 Ki × '€' is 1.2 MiB of UTF-8 in 400 Ki characters.
    const body = JSON.stringify(
      batchOf('tl-utf8', {
        event: 'big',
        distinct_id: 'rj-tl-utf8',
        properties: { p: '€'.repeat(400 * 1024) },
      }),
    );
    const res = await post(`${w.url}/batch/`, body);
    assertError(t, res, tooLarge.status, tooLarge.type, tooLarge.code);
    t.equal(await storedCount('tl-utf8'), 0);
  });

  t.test('a single event over 1 MiB', async (t) => {
    const body = JSON.stringify({
      api_key: KEY,
      ...good('tl-single'),
      properties: { p: 'a'.repeat(MiB + 10) },
    });
    const res = await post(`${w.url}/i/v0/e/`, gzip(body), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    assertError(t, res, tooLarge.status, tooLarge.type, tooLarge.code);
    t.equal(await storedCount('tl-single'), 0);
  });

  t.test('a batch near 20 MiB of events each under 1 MiB is accepted (control)', async (t) => {
    const events = Array.from({ length: 19 }, (_, n) => ({
      ...good('tl-control', n),
      properties: { n, p: 'a'.repeat(MiB - 1024) },
    }));
    const body = JSON.stringify({ api_key: KEY, batch: events });
    t.ok(body.length > 18 * MiB && body.length < 20 * MiB);
    const res = await post(`${w.url}/batch/`, body);
    t.equal(res.status, 200, res.text.slice(0, 200));
    t.equal(await storedCount('tl-control'), 19);
  });
  t.end();
});
