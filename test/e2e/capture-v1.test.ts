/**
 * Capture V1 (`POST /i/v1/analytics/events`, docs/capture-v1.md) with raw requests: every status of the
 * reference (200 with ok / warning / drop / retry results, each 400, 401, 405, 413, 415), CORS, encodings,
 * events stored exactly once by uuid, skew correction, `$lib` from `PostHog-Sdk-Info`, options mapped back
 * to their properties, the historical lane, and `retry` results while the store cannot take events.
 */
import { randomUUID } from 'node:crypto';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import {
  assertV1Error,
  postV1,
  v1Body,
  v1Event,
  v1Headers,
  V1_PATH,
  zstdRaw,
  type V1Answer,
  fillUntilRefused,
} from '../helpers/capture-v1.ts';
import { metricValue } from '../helpers/capture-bodies.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, request, startTestWeir, waitFor } from '../helpers/weir.ts';

// A small log bound, so that the last test can make the store refuse (as store-behind.test.ts does).
const w = await startTestWeir({ WEIR_STORE_MAX_PENDING_MB: '1' });
t.teardown(() => w.close());

const ORIGIN = 'https://app.example.com';

interface Row {
  uuid: string;
  event: string;
  distinct_id: string;
  ms: string;
  properties: string;
}

async function stored(uuids: readonly string[]): Promise<Row[]> {
  return w.rows<Row>(
    `SELECT toString(uuid) AS uuid, event, distinct_id, toUnixTimestamp64Milli(timestamp) AS ms, properties
     FROM events WHERE toString(uuid) IN {uuids:Array(String)} ORDER BY uuid`,
    { uuids },
  );
}

async function countOf(uuids: readonly string[]): Promise<number> {
  const [r] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM events WHERE toString(uuid) IN {uuids:Array(String)}`,
    { uuids },
  );
  return Number(r?.n);
}

function propsOf(row: Row | undefined): Record<string, unknown> {
  return JSON.parse(row?.properties ?? '{}') as Record<string, unknown>;
}

function results(res: { json: unknown }): V1Answer['results'] {
  return (res.json as V1Answer).results;
}

t.test('200: one result per event keyed by the canonical uuid; stored once; headers', async (t) => {
  const upper = randomUUID().toUpperCase();
  const events = [v1Event({ uuid: upper, event: 'v1 ok' }), v1Event({ event: 'v1 ok' })];
  const requestId = randomUUID();
  const res = await postV1(w.url, v1Body(events), v1Headers({ 'posthog-request-id': requestId }));
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.ok(res.headers.get('date'), 'a Date header');
  t.equal(res.headers.get('posthog-request-id'), requestId, 'the request id is echoed');
  t.equal(res.headers.get('retry-after'), null, 'no Retry-After without a retry');
  const keys = [upper.toLowerCase(), events[1]!['uuid'] as string];
  t.same(res.json, { results: { [keys[0]!]: { result: 'ok' }, [keys[1]!]: { result: 'ok' } } });
  t.same(Object.keys(results(res)), keys, 'in batch order');
  t.equal(await countOf(keys), 2, 'both stored');

  // A client resends the same batch (a timeout, a retry): still ok, still stored once.
  const again = await postV1(w.url, v1Body(events), v1Headers({ 'posthog-attempt': '2' }));
  t.same(results(again), results(res));
  t.equal(await countOf(keys), 2, 'a resend stores nothing twice');

  const slash = await postV1(w.url, v1Body([v1Event()]), v1Headers(), `${V1_PATH}/`);
  t.equal(slash.status, 200, 'the trailing-slash path too');
});

t.test('200 with drops, a warning and ok details; only ok and warning are stored', async (t) => {
  const day = 24 * 60 * 60 * 1000;
  const cases: [string, Record<string, unknown>, { result: string; details?: string }][] = [
    ['plain', {}, { result: 'ok' }],
    ['anonymous id', { distinct_id: ' Anonymous ' }, { result: 'ok', details: 'person_processing_disabled' }],
    [
      'two days ahead',
      { timestamp: new Date(Date.now() + 2 * day).toISOString() },
      { result: 'warning', details: 'timestamp_clamped_to_now' },
    ],
    ['no name', { event: '' }, { result: 'drop', details: 'missing_event_name' }],
    ['long name', { event: 'e'.repeat(201) }, { result: 'drop', details: 'event_name_too_long' }],
    [
      'performance',
      { event: '$performance_event' },
      { result: 'drop', details: 'dropped_performance_event' },
    ],
    ['blank id', { distinct_id: '   ' }, { result: 'drop', details: 'missing_distinct_id' }],
    ['long id', { distinct_id: 'é'.repeat(101) }, { result: 'drop', details: 'distinct_id_too_large' }],
    [
      'naive time',
      { timestamp: '2026-01-01T00:00:00' },
      { result: 'drop', details: 'invalid_event_timestamp' },
    ],
    [
      'no such day',
      { timestamp: '2026-02-30T00:00:00Z' },
      { result: 'drop', details: 'invalid_event_timestamp' },
    ],
    ['array props', { properties: [1, 2] }, { result: 'drop', details: 'malformed_event_properties' }],
    ['null props', { properties: null }, { result: 'drop', details: 'malformed_event_properties' }],
    ['string options', { options: 'yes' }, { result: 'drop', details: 'invalid_options' }],
    ['bad bool', { options: { cookieless_mode: 'maybe' } }, { result: 'drop', details: 'invalid_options' }],
    ['float tour', { options: { product_tour_id: 1.5 } }, { result: 'drop', details: 'invalid_options' }],
    [
      'group without key',
      { event: '$groupidentify', properties: { $group_type: 'company' } },
      { result: 'drop', details: 'invalid_group' },
    ],
    [
      'over 1 MiB',
      { properties: { big: 'x'.repeat(1024 * 1024 + 10) } },
      { result: 'drop', details: 'event_too_big' },
    ],
  ];
  const events = cases.map(([, fields]) => v1Event({ event: 'v1 mixed', ...fields }));
  const res = await postV1(w.url, v1Body(events));
  t.equal(res.status, 200);
  const got = results(res);
  cases.forEach(([label, , expected], i) => t.same(got[events[i]!['uuid'] as string], expected, label));
  t.equal(Object.keys(got).length, cases.length, 'one result per event');
  const kept = events.filter((_, i) => cases[i]![2].result !== 'drop').map((e) => e['uuid'] as string);
  const rows = await stored(events.map((e) => e['uuid'] as string));
  t.same(rows.map((r) => r.uuid).sort(), kept.sort(), 'only the ok and warning events are stored');
  const anon = rows.find((r) => r.uuid === events[1]!['uuid']);
  t.equal(anon?.distinct_id, 'Anonymous', 'the distinct id is stored trimmed');
  t.equal(propsOf(anon)['$process_person_profile'], false, 'person processing is off');
  const ahead = rows.find((r) => r.uuid === events[2]!['uuid']);
  t.ok(Math.abs(Number(ahead?.ms) - Date.now()) < 60_000, 'the future timestamp is clamped to now');

  const [warning] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM ingestion_warnings WHERE type = 'event_dropped_missing_event_name'
       AND JSONExtractString(details, 'uuid') = {uuid:String}`,
    { uuid: events[3]!['uuid'] as string },
  );
  t.equal(Number(warning?.n), 1, 'a drop is written as an ingestion warning');
  t.ok(
    (await metricValue(w.url, 'weir_capture_events_dropped_total', { reason: 'invalid_options' })) >= 3,
    'and counted by reason',
  );

  const allDropped = await postV1(w.url, v1Body([v1Event({ event: '' })]));
  t.equal(allDropped.status, 200, 'a batch of drops only is still a 200');
});

t.test('skew correction from PostHog-Request-Timestamp, and disable_skew_correction', async (t) => {
  const hour = 60 * 60 * 1000;
  // The client's clock is an hour behind: it stamps its events and the request from that clock.
  const clientNow = Date.now() - hour;
  const eventTime = new Date(clientNow - 10_000).toISOString();
  const skewed = v1Event({ event: 'v1 skew', timestamp: eventTime });
  const raw = v1Event({ event: 'v1 skew', timestamp: eventTime, options: { disable_skew_correction: true } });
  const res = await postV1(
    w.url,
    v1Body([skewed, raw], { created_at: '2020-01-01T00:00:00Z' }),
    v1Headers({ 'posthog-request-timestamp': new Date(clientNow).toISOString() }),
  );
  t.equal(res.status, 200);
  const rows = await stored([skewed['uuid'] as string, raw['uuid'] as string]);
  const byUuid = new Map(rows.map((r) => [r.uuid, r]));
  const corrected = Number(byUuid.get(skewed['uuid'] as string)?.ms);
  t.ok(
    Math.abs(corrected - (Date.now() - 10_000)) < 30_000,
    `corrected to ten seconds before the server's now (${new Date(corrected).toISOString()})`,
  );
  t.equal(Number(byUuid.get(raw['uuid'] as string)?.ms), Date.parse(eventTime), 'kept as sent');
  t.equal(
    propsOf(byUuid.get(raw['uuid'] as string))['$ignore_sent_at'],
    true,
    'the option is the $ignore_sent_at property',
  );
});

t.test('$lib from PostHog-Sdk-Info; options and session fields mapped back to $ properties', async (t) => {
  const mapped = v1Event({
    event: 'v1 mapped',
    session_id: 'sess-1',
    window_id: 'win-1',
    options: {
      cookieless_mode: 'TRUE',
      process_person_profile: 0,
      product_tour_id: 42,
      disable_skew_correction: null,
      unknown_option: { anything: true },
    },
    properties: { $lib: 'spoofed', $session_id: 'client', keep: 'me' },
  });
  const unparsed = v1Event({ event: 'v1 mapped', properties: { $lib: 'own-lib' } });
  const a = await postV1(w.url, v1Body([mapped]), v1Headers({ 'posthog-sdk-info': ' my-sdk / 1.2.3 ' }));
  const b = await postV1(w.url, v1Body([unparsed]), v1Headers({ 'posthog-sdk-info': 'no-version-here' }));
  t.equal(a.status, 200);
  t.equal(b.status, 200, 'an Sdk-Info that does not parse does not refuse the request');
  const rows = await stored([mapped['uuid'] as string, unparsed['uuid'] as string]);
  const props = (uuid: unknown): Record<string, unknown> =>
    JSON.parse(rows.find((r) => r.uuid === uuid)?.properties ?? '{}') as Record<string, unknown>;
  t.match(props(mapped['uuid']), {
    $lib: 'my-sdk',
    $lib_version: '1.2.3',
    $session_id: 'sess-1',
    $window_id: 'win-1',
    $cookieless_mode: true,
    $process_person_profile: false,
    $product_tour_id: '42',
    keep: 'me',
  });
  t.notOk('$ignore_sent_at' in props(mapped['uuid']), 'a null option is no option');
  t.equal(props(unparsed['uuid'])['$lib'], 'own-lib', 'nothing injected without a parsable Sdk-Info');
  t.notOk('$lib_version' in props(unparsed['uuid']));
});

t.test('historical_migration goes to the historical lane', async (t) => {
  const before = await metricValue(w.url, 'weir_capture_events_total', { lane: 'historical' });
  const events = [v1Event({ event: 'v1 historical' }), v1Event({ event: 'v1 historical' })];
  const res = await postV1(w.url, v1Body(events, { historical_migration: true }));
  t.equal(res.status, 200);
  t.equal(await countOf(events.map((e) => e['uuid'] as string)), 2);
  t.equal(await metricValue(w.url, 'weir_capture_events_total', { lane: 'historical' }), before + 2);
});

t.test('Content-Encoding: gzip, deflate (zlib and raw), br, zstd', async (t) => {
  const codings: [string, (b: Buffer) => Buffer][] = [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['deflate', deflateRawSync],
    ['br', brotliCompressSync],
    ['zstd', (b) => zstdRaw(b)],
    ['identity', (b) => b],
  ];
  for (const [coding, encode] of codings) {
    const event = v1Event({ event: `v1 ${coding}` });
    const res = await postV1(
      w.url,
      encode(Buffer.from(v1Body([event]))),
      v1Headers({ 'content-encoding': coding }),
    );
    t.equal(res.status, 200, `${coding}: 200`);
    t.same(results(res), { [event['uuid'] as string]: { result: 'ok' } }, `${coding}: ok`);
    t.equal(await countOf([event['uuid'] as string]), 1, `${coding}: stored`);
  }
  const big = v1Body(
    Array.from({ length: 300 }, () =>
      v1Event({ event: 'v1 gzip big', properties: { pad: 'p'.repeat(300) } }),
    ),
  );
  const res = await postV1(w.url, gzipSync(big), v1Headers({ 'content-encoding': 'gzip' }));
  t.equal(res.status, 200, 'a body inflated on the thread pool');
  t.equal(Object.keys(results(res)).length, 300);
});

t.test('400s: headers, decoding, parsing, the batch, its uuids; nothing stored', async (t) => {
  const marker = 'v1 refused';
  const body = (): string => v1Body([v1Event({ event: marker })]);
  const u = randomUUID();
  const cases: [string, string | Uint8Array, Record<string, string>, string][] = [
    ['no Sdk-Info', body(), v1Headers({ 'posthog-sdk-info': undefined }), 'missing_required_headers'],
    ['no User-Agent', body(), v1Headers({ 'user-agent': '' }), 'missing_required_headers'],
    // As bytes: fetch labels a string body text/plain.
    [
      'no Content-Type',
      Buffer.from(body()),
      v1Headers({ 'content-type': undefined }),
      'missing_required_headers',
    ],
    ['no token', body(), v1Headers({ authorization: 'Bearer' }), 'invalid_header_value'],
    ['Basic auth', body(), v1Headers({ authorization: `Basic ${PROJECT_API_KEY}` }), 'invalid_header_value'],
    ['attempt 0', body(), v1Headers({ 'posthog-attempt': '0' }), 'invalid_header_value'],
    ['attempt text', body(), v1Headers({ 'posthog-attempt': 'first' }), 'invalid_header_value'],
    ['request id', body(), v1Headers({ 'posthog-request-id': 'req-1' }), 'invalid_header_value'],
    ['request time', body(), v1Headers({ 'posthog-request-timestamp': 'yesterday' }), 'invalid_header_value'],
    [
      'bad gzip',
      Buffer.from('not gzip'),
      v1Headers({ 'content-encoding': 'gzip' }),
      'request_decoding_error',
    ],
    [
      'bad zstd',
      Buffer.from('not zstd'),
      v1Headers({ 'content-encoding': 'zstd' }),
      'request_decoding_error',
    ],
    ['not JSON', '{"created_at":', v1Headers(), 'request_parsing_error'],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), v1Headers(), 'request_parsing_error'],
    ['an array', JSON.stringify([v1Event()]), v1Headers(), 'request_parsing_error'],
    ['no created_at', JSON.stringify({ batch: [v1Event()] }), v1Headers(), 'request_parsing_error'],
    [
      'no batch',
      JSON.stringify({ created_at: new Date().toISOString() }),
      v1Headers(),
      'request_parsing_error',
    ],
    ['event a number', v1Body([v1Event({ event: 7 })]), v1Headers(), 'request_parsing_error'],
    ['no distinct_id', v1Body([v1Event({ distinct_id: undefined })]), v1Headers(), 'request_parsing_error'],
    ['no timestamp', v1Body([v1Event({ timestamp: undefined })]), v1Headers(), 'request_parsing_error'],
    ['session_id a number', v1Body([v1Event({ session_id: 5 })]), v1Headers(), 'request_parsing_error'],
    [
      'historical a string',
      v1Body([v1Event()], { historical_migration: 'yes' }),
      v1Headers(),
      'request_parsing_error',
    ],
    ['item a string', v1Body(['event']), v1Headers(), 'request_parsing_error'],
    ['empty body', '', v1Headers(), 'empty_body'],
    ['empty batch', v1Body([]), v1Headers(), 'empty_batch'],
    ['bad created_at', v1Body([v1Event()], { created_at: 'today' }), v1Headers(), 'invalid_batch'],
    [
      'empty uuid',
      v1Body([v1Event({ event: marker }), v1Event({ uuid: '  ' })]),
      v1Headers(),
      'missing_event_uuid',
    ],
    ['no uuid', v1Body([v1Event({ uuid: undefined })]), v1Headers(), 'request_parsing_error'],
    [
      'bad uuid',
      v1Body([v1Event({ event: marker }), v1Event({ uuid: 'abc' })]),
      v1Headers(),
      'invalid_event_uuid',
    ],
    [
      'duplicate uuid',
      v1Body([v1Event({ event: marker, uuid: u }), v1Event({ event: marker, uuid: u.toUpperCase() })]),
      v1Headers(),
      'duplicate_event_uuid',
    ],
  ];
  for (const [label, b, headers, tag] of cases) {
    const res = await postV1(w.url, b, headers);
    assertV1Error(t, res, 400, tag, label);
  }
  const missing = await postV1(
    w.url,
    body(),
    v1Headers({ 'posthog-attempt': undefined, 'posthog-request-id': undefined }),
  );
  t.match(
    (missing.json as { error_description: string }).error_description,
    /PostHog-Attempt, PostHog-Request-Id/,
    'every missing header is named in one refusal',
  );
  const [r] = await w.rows<{ n: string }>(`SELECT count() AS n FROM events WHERE event = {e:String}`, {
    e: marker,
  });
  t.equal(Number(r?.n), 0, 'nothing of a refused batch is stored');

  const simple = randomUUID();
  const forms = await postV1(
    w.url,
    v1Body([v1Event({ uuid: simple.replaceAll('-', '') }), v1Event({ uuid: `{${randomUUID()}}` })]),
  );
  t.equal(forms.status, 200, 'uuids in the other forms a UUID parser takes');
  t.ok(simple in results(forms), 'answered under the canonical form');
});

t.test('401: no Authorization, an unknown key, a personal key', async (t) => {
  const body = v1Body([v1Event({ event: 'v1 unauthorised' })]);
  assertV1Error(
    t,
    await postV1(w.url, body, v1Headers({ authorization: undefined })),
    401,
    'missing_authorization',
  );
  // No Authorization comes before the missing headers.
  assertV1Error(
    t,
    await postV1(w.url, body, { 'content-type': 'application/json' }),
    401,
    'missing_authorization',
    'before missing headers',
  );
  assertV1Error(
    t,
    await postV1(w.url, body, v1Headers({ authorization: 'Bearer phc_unknown' })),
    401,
    'invalid_api_token',
  );
  assertV1Error(
    t,
    await postV1(w.url, body, v1Headers({ authorization: `Bearer ${PERSONAL_API_KEY}` })),
    401,
    'invalid_api_token',
    'personal key',
  );
  const lower = await postV1(
    w.url,
    v1Body([v1Event()]),
    v1Headers({ authorization: `bearer ${PROJECT_API_KEY}` }),
  );
  t.equal(lower.status, 200, 'the scheme is read in any case');
  const [r] = await w.rows<{ n: string }>(`SELECT count() AS n FROM events WHERE event = 'v1 unauthorised'`);
  t.equal(Number(r?.n), 0);
});

t.test('413: over 10 MiB on the wire, over 50 MiB decoded, a zstd frame declaring more', async (t) => {
  const wire = await postV1(w.url, Buffer.alloc(10 * 1024 * 1024 + 1, 0x20));
  assertV1Error(t, wire, 413, 'payload_too_large', 'wire');
  const bomb = gzipSync(
    Buffer.concat([
      Buffer.from(v1Body([v1Event()]).slice(0, -1)),
      Buffer.alloc(51 * 1024 * 1024, 0x20),
      Buffer.from('}'),
    ]),
  );
  assertV1Error(
    t,
    await postV1(w.url, bomb, v1Headers({ 'content-encoding': 'gzip' })),
    413,
    'payload_too_large',
    'gzip bomb',
  );
  const declared = zstdRaw(Buffer.from(v1Body([v1Event()])), 1024 * 1024 * 1024);
  assertV1Error(
    t,
    await postV1(w.url, declared, v1Headers({ 'content-encoding': 'zstd' })),
    413,
    'payload_too_large',
    'zstd 1 GiB',
  );
});

t.test('415: Content-Type and Content-Encoding', async (t) => {
  const body = v1Body([v1Event({ event: 'v1 415' })]);
  assertV1Error(
    t,
    await postV1(w.url, body, v1Headers({ 'content-type': 'text/plain' })),
    415,
    'unsupported_content_type',
  );
  const charset = await postV1(w.url, body, v1Headers({ 'content-type': 'Application/JSON; charset=utf-8' }));
  t.equal(charset.status, 200, 'parameters and case are fine');
  assertV1Error(
    t,
    await postV1(w.url, body, v1Headers({ 'content-encoding': 'compress' })),
    415,
    'unsupported_encoding',
  );
});

t.test('405 for other methods, with Allow', async (t) => {
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
    const res = await request(`${w.url}${V1_PATH}`, { method, headers: { origin: ORIGIN } });
    assertV1Error(t, res, 405, 'method_not_allowed', method);
    t.equal(res.headers.get('allow'), 'POST, OPTIONS', `${method}: Allow`);
    t.equal(res.headers.get('access-control-allow-origin'), ORIGIN, `${method}: CORS`);
  }
});

t.test('CORS: the preflight, and POST answers read by a browser', async (t) => {
  const pre = await request(`${w.url}${V1_PATH}`, {
    method: 'OPTIONS',
    headers: {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, posthog-sdk-info',
    },
  });
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), ORIGIN);
  t.equal(pre.headers.get('access-control-allow-credentials'), 'true');
  t.equal(pre.headers.get('access-control-allow-methods'), 'POST, OPTIONS');
  t.equal(pre.headers.get('access-control-allow-headers'), 'authorization, content-type, posthog-sdk-info');
  const bare = await request(`${w.url}${V1_PATH}/`, { method: 'OPTIONS', headers: { origin: ORIGIN } });
  t.match(
    bare.headers.get('access-control-allow-headers'),
    /PostHog-Request-Timestamp/,
    'every V1 header by default',
  );

  const ok = await postV1(w.url, v1Body([v1Event()]), v1Headers({ origin: ORIGIN }));
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('access-control-allow-origin'), ORIGIN);
  t.match(ok.headers.get('access-control-expose-headers'), /Retry-After/);
  const refused = await postV1(
    w.url,
    v1Body([v1Event()]),
    v1Headers({ origin: ORIGIN, authorization: undefined }),
  );
  t.equal(refused.status, 401);
  t.equal(refused.headers.get('access-control-allow-origin'), ORIGIN, 'on refusals too');
  const server = await postV1(w.url, v1Body([v1Event()]));
  t.equal(
    server.headers.get('access-control-allow-origin'),
    null,
    'no Origin (a server SDK): no CORS headers',
  );
});

t.test('a refusal on the headers keeps the connection usable for the next request', async (t) => {
  // The refused body is never read: the next request on a new connection must work all the same.
  for (let i = 0; i < 3; i++) {
    const refused = await postV1(
      w.url,
      v1Body([v1Event()]),
      v1Headers({ authorization: 'Bearer phc_nobody' }),
    );
    t.equal(refused.status, 401);
    const ok = await postV1(w.url, v1Body([v1Event()]));
    t.equal(ok.status, 200);
  }
});

t.test('retry results, with Retry-After, while the store cannot take events; then stored once', async (t) => {
  await w.weir.store.command('RENAME TABLE events TO events_away');
  let renamedBack = false;
  t.teardown(async () => {
    if (!renamedBack) await w.weir.store.command('RENAME TABLE events_away TO events');
  });
  const full = await fillUntilRefused(w.url, 'v1 filler');
  t.ok(full, 'the store stopped taking events');

  const events = [v1Event({ event: 'v1 retry' }), v1Event({ event: 'v1 retry' }), v1Event({ event: '' })];
  const uuids = events.map((e) => e['uuid'] as string);
  const refused = await postV1(w.url, v1Body(events));
  t.equal(refused.status, 200, 'still a 200: the answer is per event');
  t.equal(refused.headers.get('retry-after'), '1');
  t.same(results(refused), {
    [uuids[0]!]: { result: 'retry', details: 'not_persisted' },
    [uuids[1]!]: { result: 'retry', details: 'not_persisted' },
    [uuids[2]!]: { result: 'drop', details: 'missing_event_name' },
  });

  await w.weir.store.command('RENAME TABLE events_away TO events');
  renamedBack = true;
  // The client resends the retried events until they are taken.
  const taken = await waitFor(
    async () => {
      const res = await postV1(w.url, v1Body(events.slice(0, 2)), v1Headers({ 'posthog-attempt': '2' }));
      return res.status === 200 && Object.values(results(res)).every((r) => r.result === 'ok')
        ? res
        : undefined;
    },
    30_000,
    'the store to take events again',
  );
  t.equal(taken.headers.get('retry-after'), null);
  t.equal(await countOf(uuids), 2, 'each retried event stored exactly once');
});
