/**
 * Capture V1 fuzzed (docs/capture-v1.md): fast-check writes whole requests — headers right or wrong in one
 * way, the body in any coding V1 takes (or one it does not undo), the envelope and each event right or
 * wrong in one way (a field of the wrong type, a bad or repeated uuid, each per-event drop), strings with
 * lone surrogates, NUL, emoji and bidi characters, any JSON in the properties — and a model predicts the
 * answer: the status and tag of a refusal in PostHog's order, or each event's result. A real Weir must answer
 * each as predicted, never with a 5xx, and store every event answered `ok` or `warning` exactly once, its
 * name and distinct id well formed.
 *
 * A fixed seed, bounded in runs; `WEIR_FUZZ_RUNS` / `WEIR_FUZZ_SEED` run it longer or elsewhere.
 */
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import { wellFormed } from '../../src/core/well-formed.ts';
import { V1_ERRORS } from '../../src/capture/v1-errors.ts';
import { postV1, v1Headers, zstdRaw } from '../helpers/capture-v1.ts';
import { startTestWeir } from '../helpers/weir.ts';

const RUNS = Number(process.env['WEIR_FUZZ_RUNS'] ?? 150);
const SEED = Number(process.env['WEIR_FUZZ_SEED'] ?? 41);

const w = await startTestWeir();
t.teardown(() => w.close());

const DAY = 24 * 60 * 60 * 1000;

// ---- What one event is to be, and what the model expects of it ----

type Drop =
  | 'missing_event_name'
  | 'event_name_too_long'
  | 'dropped_performance_event'
  | 'missing_distinct_id'
  | 'distinct_id_too_large'
  | 'invalid_event_timestamp'
  | 'malformed_event_properties'
  | 'invalid_options';
type UuidFault = 'missing_event_uuid' | 'invalid_event_uuid' | 'duplicate_event_uuid';

type Kind =
  | { readonly kind: 'ok' }
  | { readonly kind: 'personless'; readonly id: string }
  | { readonly kind: 'future' }
  | { readonly kind: 'drop'; readonly drop: Drop; readonly pick: number }
  | { readonly kind: 'parse'; readonly pick: number }
  | { readonly kind: 'uuid'; readonly fault: UuidFault; readonly pick: number };

interface EventSpec {
  readonly kind: Kind;
  readonly name: string;
  readonly distinctId: string;
  readonly offsetMs: number;
  readonly timeFormat: number;
  readonly options: Record<string, unknown>;
  readonly properties: Record<string, unknown>;
  readonly sessionId: string | undefined;
}

/** Strings of any code units, lone surrogates and NUL included, as JSON.stringify escapes them. */
const oddString = (maxLength: number): fc.Arbitrary<string> =>
  fc
    .array(
      fc.oneof(
        { weight: 6, arbitrary: fc.string({ maxLength: 4 }) },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            '\uD800',
            '\uDFFF',
            '\u0000',
            '😀',
            'é',
            '\u202e',
            '\t',
            '"',
            '\\',
            '\u2028',
          ),
        },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 3 }) },
      ),
      { maxLength: 8 },
    )
    .map((parts) => parts.join('').slice(0, maxLength));

const ILLEGAL = ['anonymous', 'NULL', 'undefined', 'Guest', '0', '[object Object]', 'distinct_id', 'user'];

const kindArb: fc.Arbitrary<Kind> = fc.oneof(
  { weight: 30, arbitrary: fc.constant({ kind: 'ok' } as const) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...ILLEGAL), fc.constantFrom('', ' ', '\t'))
      .map(([id, pad]) => ({ kind: 'personless', id: `${pad}${id}${pad}` }) as const),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'future' } as const) },
  {
    weight: 10,
    arbitrary: fc
      .record({
        drop: fc.constantFrom<Drop>(
          'missing_event_name',
          'event_name_too_long',
          'dropped_performance_event',
          'missing_distinct_id',
          'distinct_id_too_large',
          'invalid_event_timestamp',
          'malformed_event_properties',
          'invalid_options',
        ),
        pick: fc.nat(20),
      })
      .map((r) => ({ kind: 'drop', ...r }) as const),
  },
  { weight: 1, arbitrary: fc.nat(20).map((pick) => ({ kind: 'parse', pick }) as const) },
  {
    weight: 1,
    arbitrary: fc
      .record({
        fault: fc.constantFrom<UuidFault>('missing_event_uuid', 'invalid_event_uuid', 'duplicate_event_uuid'),
        pick: fc.nat(20),
      })
      .map((r) => ({ kind: 'uuid', ...r }) as const),
  },
);

const boolValue = fc.constantFrom<unknown>(true, false, 'true', 'FALSE', ' 1 ', '0', 0, 1, 2.5, null);
const optionsArb = fc.record(
  {
    cookieless_mode: boolValue,
    disable_skew_correction: boolValue,
    process_person_profile: boolValue,
    product_tour_id: fc.oneof(fc.string({ maxLength: 8 }), fc.integer({ min: -1000, max: 1000 })),
    something_else: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: [] },
);

const eventSpecArb: fc.Arbitrary<EventSpec> = fc.record({
  kind: kindArb,
  // A prefix: never a special event ($identify, $groupidentify, surveys), never empty.
  name: oddString(30).map((s) => `fz ${s}`),
  distinctId: oddString(30).map((s) => `d${s}`),
  offsetMs: fc.integer({ min: -30 * DAY, max: 60 * 60 * 1000 }),
  timeFormat: fc.nat(6),
  options: optionsArb,
  properties: fc.dictionary(oddString(10), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
  sessionId: fc.option(oddString(20), { nil: undefined }),
});

// ---- Whole requests ----

type HeaderFault =
  | 'none'
  | 'no_auth'
  | 'unknown_key'
  | 'no_sdk_info'
  | 'bad_attempt'
  | 'bad_request_id'
  | 'bad_timestamp'
  | 'text_plain'
  | 'compress';
type BodyFault =
  | 'none'
  | 'empty'
  | 'truncated'
  | 'not_object'
  | 'no_created_at'
  | 'bad_created_at'
  | 'bad_historical'
  | 'no_batch';
type Coding = 'identity' | 'gzip' | 'deflate' | 'deflate-raw' | 'br' | 'zstd' | 'gzip-corrupt';

interface Case {
  readonly headerFault: HeaderFault;
  readonly bodyFault: BodyFault;
  readonly coding: Coding;
  readonly historical: boolean;
  readonly events: readonly EventSpec[];
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  headerFault: fc.oneof(
    { weight: 12, arbitrary: fc.constant<HeaderFault>('none') },
    {
      weight: 1,
      arbitrary: fc.constantFrom<HeaderFault>(
        'no_auth',
        'unknown_key',
        'no_sdk_info',
        'bad_attempt',
        'bad_request_id',
        'bad_timestamp',
        'text_plain',
        'compress',
      ),
    },
  ),
  bodyFault: fc.oneof(
    { weight: 12, arbitrary: fc.constant<BodyFault>('none') },
    {
      weight: 1,
      arbitrary: fc.constantFrom<BodyFault>(
        'empty',
        'truncated',
        'not_object',
        'no_created_at',
        'bad_created_at',
        'bad_historical',
        'no_batch',
      ),
    },
  ),
  coding: fc.constantFrom<Coding>(
    'identity',
    'identity',
    'identity',
    'gzip',
    'gzip',
    'deflate',
    'deflate-raw',
    'br',
    'zstd',
    'gzip-corrupt',
  ),
  historical: fc.boolean(),
  events: fc.array(eventSpecArb, { maxLength: 8 }),
});

let caseNo = 0;

/** A uuid no other case uses: the case and event numbers in its last group. */
function freshUuid(c: number, i: number): string {
  return `0190a1b2-c3d4-7e5f-8a9b-${c.toString(16).padStart(8, '0')}${i.toString(16).padStart(4, '0')}`;
}

/** RFC 3339 in the forms clients write: Z or an offset, `t`/`z` or a space, 0, 3 or 6 fraction digits. */
function rfc3339(ms: number, format: number): string {
  const iso = new Date(ms).toISOString();
  switch (format) {
    case 0:
      return iso;
    case 1:
      return iso.replace('T', 't').replace('Z', 'z');
    case 2:
      return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
    case 3:
      return iso.replace('Z', '123Z');
    case 4: {
      const local = new Date(ms + 330 * 60_000).toISOString();
      return local.replace('Z', '+05:30');
    }
    case 5: {
      const local = new Date(ms - 4 * 60 * 60_000).toISOString();
      return local.replace(/\.\d+Z$/, '-04:00');
    }
    default:
      return iso.replace('Z', '+00:00');
  }
}

const BAD_TIMES = [
  '',
  'now',
  '2026-01-01',
  '2026-13-01T00:00:00Z',
  '2026-01-01T00:00:00',
  '1700000000000',
  'Tue, 01 Jan 2026 00:00:00 GMT',
  '2026-02-29T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '0000-01-01T00:00:00Z',
];
const BAD_PROPERTIES: unknown[] = [[1], 'props', 3, null, true];
const BAD_OPTIONS: unknown[] = [
  'yes',
  [],
  3,
  true,
  { cookieless_mode: 'maybe' },
  { product_tour_id: 1.5 },
  { process_person_profile: [] },
];
const BAD_UUIDS = ['abc', 'g'.repeat(32), '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5', 'urn:uuid:abc'];

/** What the model expects of one event that passes the whole-batch checks. */
interface EventExpectation {
  readonly uuid: string;
  readonly result: { result: string; details?: string };
  /** Stored as, when it is to be stored. */
  readonly stored?: { readonly event: string; readonly distinctId: string };
}

type Expectation =
  | { readonly status: number; readonly tag: string }
  | { readonly status: 200; readonly events: readonly EventExpectation[] };

interface Built {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
  readonly expected: Expectation;
}

/** The wire request of a case and the answer the model predicts, in PostHog's order of checks. */
function build(c: Case, n: number): Built {
  const now = Date.now();
  const batch: unknown[] = [];
  const uuids: string[] = [];
  const perEvent: EventExpectation[] = [];
  let parseFault = false;
  let uuidFault: UuidFault | undefined;
  c.events.forEach((spec, i) => {
    const uuid = freshUuid(n, i);
    uuids.push(uuid);
    const item: Record<string, unknown> = {
      event: spec.name,
      uuid,
      distinct_id: spec.distinctId,
      timestamp: rfc3339(now + spec.offsetMs, spec.timeFormat),
      options: spec.options,
      properties: spec.properties,
    };
    if (spec.sessionId !== undefined) item['session_id'] = spec.sessionId;
    const k = spec.kind;
    let result: EventExpectation['result'] = { result: 'ok' };
    switch (k.kind) {
      case 'personless':
        item['distinct_id'] = k.id;
        result = { result: 'ok', details: 'person_processing_disabled' };
        break;
      case 'future':
        item['timestamp'] = rfc3339(now + 2 * DAY, spec.timeFormat);
        result = { result: 'warning', details: 'timestamp_clamped_to_now' };
        break;
      case 'drop':
        result = { result: 'drop', details: k.drop };
        switch (k.drop) {
          case 'missing_event_name':
            item['event'] = '';
            break;
          case 'event_name_too_long':
            item['event'] = k.pick % 2 ? 'n'.repeat(201) : 'é'.repeat(101);
            break;
          case 'dropped_performance_event':
            item['event'] = '$performance_event';
            break;
          case 'missing_distinct_id':
            item['distinct_id'] = [' ', '', '\t\n', '\u00a0'][k.pick % 4];
            break;
          case 'distinct_id_too_large':
            item['distinct_id'] = k.pick % 2 ? 'i'.repeat(201) : '😀'.repeat(51);
            break;
          case 'invalid_event_timestamp':
            item['timestamp'] = BAD_TIMES[k.pick % BAD_TIMES.length];
            break;
          case 'malformed_event_properties':
            item['properties'] = BAD_PROPERTIES[k.pick % BAD_PROPERTIES.length];
            break;
          case 'invalid_options':
            item['options'] = BAD_OPTIONS[k.pick % BAD_OPTIONS.length];
            break;
        }
        break;
      case 'parse': {
        parseFault = true;
        const faults: (() => void)[] = [
          () => (item['event'] = 7),
          () => delete item['uuid'],
          () => (item['distinct_id'] = null),
          () => (item['timestamp'] = Date.now()),
          () => (item['session_id'] = { id: 1 }),
          () => (item['window_id'] = 5),
        ];
        faults[k.pick % faults.length]!();
        break;
      }
      case 'uuid': {
        let fault = k.fault;
        if (fault === 'duplicate_event_uuid' && i === 0) fault = 'invalid_event_uuid';
        if (fault === 'missing_event_uuid') item['uuid'] = ['', '  '][k.pick % 2];
        else if (fault === 'invalid_event_uuid') item['uuid'] = BAD_UUIDS[k.pick % BAD_UUIDS.length];
        else {
          const earlier = uuids[k.pick % i]!;
          const forms = [
            earlier.toUpperCase(),
            `{${earlier}}`,
            earlier.replaceAll('-', ''),
            `urn:uuid:${earlier}`,
          ];
          item['uuid'] = forms[k.pick % forms.length];
        }
        uuidFault ??= fault;
        break;
      }
      case 'ok':
        break;
    }
    batch.push(item);
    // A batch with a parse or uuid fault is refused whole: its events' expectations are never read.
    const stores =
      (result.result === 'ok' || result.result === 'warning') && k.kind !== 'parse' && k.kind !== 'uuid';
    perEvent.push({
      uuid,
      result,
      stored: stores
        ? {
            event: wellFormed(item['event'] as string),
            distinctId: wellFormed(item['distinct_id'] as string).trim(),
          }
        : undefined,
    });
  });

  const envelope: Record<string, unknown> = { created_at: rfc3339(now - 1000, 0), batch };
  if (c.historical) envelope['historical_migration'] = true;
  let json: string;
  switch (c.bodyFault) {
    case 'not_object':
      json = JSON.stringify(batch);
      break;
    case 'no_created_at':
      delete envelope['created_at'];
      json = JSON.stringify(envelope);
      break;
    case 'bad_created_at':
      envelope['created_at'] = 'yesterday';
      json = JSON.stringify(envelope);
      break;
    case 'bad_historical':
      envelope['historical_migration'] = 'yes';
      json = JSON.stringify(envelope);
      break;
    case 'no_batch':
      delete envelope['batch'];
      json = JSON.stringify(envelope);
      break;
    case 'truncated':
      json = JSON.stringify(envelope).slice(0, -1);
      break;
    default:
      json = JSON.stringify(envelope);
  }
  const text = Buffer.from(c.bodyFault === 'empty' ? '' : json);
  const [body, encoding] = encode(text, c.coding);

  const overrides: Record<string, string | undefined> = { 'content-encoding': encoding };
  switch (c.headerFault) {
    case 'no_auth':
      overrides['authorization'] = undefined;
      break;
    case 'unknown_key':
      overrides['authorization'] = 'Bearer phc_fuzz_nobody';
      break;
    case 'no_sdk_info':
      overrides['posthog-sdk-info'] = undefined;
      break;
    case 'bad_attempt':
      overrides['posthog-attempt'] = '0';
      break;
    case 'bad_request_id':
      overrides['posthog-request-id'] = 'not-a-uuid';
      break;
    case 'bad_timestamp':
      overrides['posthog-request-timestamp'] = '12:00';
      break;
    case 'text_plain':
      overrides['content-type'] = 'text/plain';
      break;
    case 'compress':
      overrides['content-encoding'] = 'compress';
      break;
    case 'none':
      break;
  }
  const headers = v1Headers(overrides);

  const refuse = (tag: keyof typeof V1_ERRORS): Built => ({
    body,
    headers,
    expected: { status: V1_ERRORS[tag].status, tag },
  });
  const headerTags: Record<Exclude<HeaderFault, 'none'>, keyof typeof V1_ERRORS> = {
    no_auth: 'missing_authorization',
    unknown_key: 'invalid_api_token',
    no_sdk_info: 'missing_required_headers',
    bad_attempt: 'invalid_header_value',
    bad_request_id: 'invalid_header_value',
    bad_timestamp: 'invalid_header_value',
    text_plain: 'unsupported_content_type',
    compress: 'unsupported_encoding',
  };
  if (c.headerFault !== 'none') return refuse(headerTags[c.headerFault]);
  if (body.length === 0) return refuse('empty_body');
  if (c.coding === 'gzip-corrupt') return refuse('request_decoding_error');
  if (c.bodyFault === 'empty') return refuse('request_parsing_error');
  if (['truncated', 'not_object', 'no_created_at', 'bad_historical', 'no_batch'].includes(c.bodyFault))
    return refuse('request_parsing_error');
  if (parseFault) return refuse('request_parsing_error');
  if (batch.length === 0) return refuse('empty_batch');
  if (c.bodyFault === 'bad_created_at') return refuse('invalid_batch');
  // The first event with a bad uuid decides: its fault, in batch order.
  if (uuidFault !== undefined) {
    const first = c.events.findIndex((s) => s.kind.kind === 'uuid');
    const k = c.events[first]!.kind as Extract<Kind, { kind: 'uuid' }>;
    return refuse(k.fault === 'duplicate_event_uuid' && first === 0 ? 'invalid_event_uuid' : k.fault);
  }
  return { body, headers, expected: { status: 200, events: perEvent } };
}

function encode(text: Buffer, coding: Coding): [Buffer, string | undefined] {
  switch (coding) {
    case 'gzip':
      return [gzipSync(text), 'gzip'];
    case 'deflate':
      return [deflateSync(text), 'deflate'];
    case 'deflate-raw':
      return [deflateRawSync(text), 'deflate'];
    case 'br':
      return [brotliCompressSync(text), 'br'];
    case 'zstd':
      return [zstdRaw(text), 'zstd'];
    case 'gzip-corrupt': {
      const g = gzipSync(Buffer.concat([text, Buffer.from('  ')]));
      // A gzip stream cut short: no decoder reads it whole.
      return [text.length === 0 ? g.subarray(0, 0) : g.subarray(0, Math.max(10, g.length - 6)), 'gzip'];
    }
    default:
      return [text, undefined];
  }
}

// ---- The run ----

/** Every event answered ok or warning, with what it must be stored as. */
const mustStore = new Map<string, { event: string; distinctId: string }>();
/** Every uuid answered drop, or of a refused batch: never stored. */
const mustNotStore = new Set<string>();
const statuses: Record<string, number> = {};

const outcome = await fc.check(
  fc.asyncProperty(caseArb, async (c) => {
    const n = ++caseNo;
    const built = build(c, n);
    const res = await postV1(w.url, built.body, built.headers);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status >= 500) throw new Error(`a ${res.status}: ${res.text}`);
    const exp = built.expected;
    if ('tag' in exp) {
      const body = res.json as { error?: string } | undefined;
      if (res.status !== exp.status || body?.error !== exp.tag)
        throw new Error(`expected ${exp.status} ${exp.tag}, got ${res.status} ${res.text.slice(0, 300)}`);
      for (let i = 0; i < c.events.length; i++) mustNotStore.add(freshUuid(n, i));
      return;
    }
    if (res.status !== 200) throw new Error(`expected 200, got ${res.status} ${res.text.slice(0, 300)}`);
    if (res.headers.get('retry-after') !== null) throw new Error('Retry-After on a 200 without retries');
    const results = (res.json as { results: Record<string, unknown> }).results;
    const want = Object.fromEntries(exp.events.map((e) => [e.uuid, e.result]));
    if (JSON.stringify(Object.keys(results)) !== JSON.stringify(Object.keys(want)))
      throw new Error(
        `result keys ${JSON.stringify(Object.keys(results))} for ${JSON.stringify(Object.keys(want))}`,
      );
    for (const e of exp.events) {
      if (JSON.stringify(results[e.uuid]) !== JSON.stringify(e.result))
        throw new Error(
          `${e.uuid}: expected ${JSON.stringify(e.result)}, got ${JSON.stringify(results[e.uuid])}`,
        );
      if (e.stored) mustStore.set(e.uuid, e.stored);
      else mustNotStore.add(e.uuid);
    }
  }),
  { numRuns: RUNS, seed: SEED, endOnFailure: true },
);

t.comment(`capture V1 fuzz: ${caseNo} cases, seed ${SEED}, statuses ${JSON.stringify(statuses)}`);

t.test('every request is answered as the model predicts, never a 5xx', (t) => {
  t.equal(
    outcome.failed ? `${String(outcome.errorInstance)}\n${fc.defaultReportMessage(outcome)}` : undefined,
    undefined,
    `replay: WEIR_FUZZ_SEED=${SEED}`,
  );
  t.ok(caseNo >= Math.min(RUNS, 50), 'enough cases ran');
  t.ok((statuses['200'] ?? 0) > caseNo / 3, 'most cases reach the per-event answers');
  t.end();
});

t.test('every ok and warning stored exactly once, well formed; nothing else', async (t) => {
  const uuids = [...mustStore.keys(), ...mustNotStore];
  const rows = await w.rows<{ uuid: string; event: string; distinct_id: string; n: string }>(
    `SELECT toString(uuid) AS uuid, any(event) AS event, any(distinct_id) AS distinct_id, count() AS n
     FROM events WHERE toString(uuid) IN {uuids:Array(String)} GROUP BY uuid`,
    { uuids },
  );
  const byUuid = new Map(rows.map((r) => [r.uuid, r]));
  const problems: string[] = [];
  for (const [uuid, want] of mustStore) {
    const row = byUuid.get(uuid);
    if (!row) problems.push(`${uuid}: answered ok, not stored`);
    else if (Number(row.n) !== 1) problems.push(`${uuid}: stored ${row.n} times`);
    else if (row.event !== want.event || row.distinct_id !== want.distinctId)
      problems.push(
        `${uuid}: stored as ${JSON.stringify([row.event, row.distinct_id])}, not ${JSON.stringify(want)}`,
      );
  }
  for (const uuid of mustNotStore)
    if (byUuid.has(uuid)) problems.push(`${uuid}: refused or dropped, yet stored`);
  t.same(problems.slice(0, 20), [], `${mustStore.size} stored, ${mustNotStore.size} not`);
  t.ok(mustStore.size > 50, 'enough events were stored to mean something');
});
