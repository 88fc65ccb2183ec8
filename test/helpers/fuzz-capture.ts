/**
 * Whole capture requests for the capture fuzz (issue 39, item 5), and the model of what each must become.
 *
 * A `FuzzCase` is a request as data: method, route, query, one of the body encodings SDKs use, the JSON text
 * before encoding, and a fault of the bytes if any. It is small, prints as a literal that can be pasted into
 * a regression test, and `encodeCase` turns it into the bytes sent. `expectCase` is the model: from the
 * contract (SPEC §2, docs/capture.md where Weir decides) alone, what the answer must be and, for a 200, which
 * events must be stored under which uuid with which event name, distinct id and properties. Where neither
 * document decides (an order between two refusals, say), the model answers `ambiguous` and the case is
 * skipped: the generators make such cases rare by putting at most one fault in a request.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import LZString from 'lz-string';
import {
  arr,
  isWellFormed,
  itemKey,
  jsLiteral,
  jsonValue,
  lit,
  longString,
  nested,
  num,
  numberText,
  obj,
  oddString,
  pairRun,
  propertyEntries,
  propertyKey,
  repeatTo,
  str,
  wellFormed,
  withDuplicates,
  writeJson,
  writeStyle,
  type Json,
  type WriteStyle,
} from './fuzz-json.ts';
import { PROJECT_API_KEY } from './weir.ts';

const MiB = 1024 * 1024;

/** SPEC §2's limits (and docs/capture.md's depth and item count), written out: the model must not borrow them. */
export const LIMITS = {
  wireBytes: 20 * MiB,
  decodedBytes: 100 * MiB,
  eventBytes: MiB,
  depth: 128,
  items: 100_000,
  distinctIdChars: 200,
  groupFieldChars: 400,
} as const;

export const WRONG_KEY = 'phc_fuzz_no_such_project_00000000000000000000';
export const OTHER_KEY = 'phc_fuzz_other_project_000000000000000000000';

export const ROUTES = [
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
] as const;

// ---------------------------------------------------------------------------------------------------------
// Encodings

export type BodyFault = 'bad-utf8' | 'bad-compression' | 'bad-base64' | 'bad-lz' | 'unsupported-coding';

interface EncodingDef {
  /** Query parameters the encoding needs ('' or `a=b`). */
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The body from the JSON text's UTF-8 bytes (corrupted for `bad-utf8`) or from the text itself. */
  encode(bytes: Buffer, text: string): Buffer | string;
  /** The byte faults this encoding can carry. */
  readonly faults: readonly BodyFault[];
}

const JSON_TYPE = { 'content-type': 'application/json' };
const TEXT_TYPE = { 'content-type': 'text/plain' };
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
const lz = (text: string): string => LZString.compressToBase64(text);
const PLAIN_FAULTS: readonly BodyFault[] = ['bad-utf8', 'unsupported-coding'];
const ZIP_FAULTS: readonly BodyFault[] = ['bad-utf8', 'bad-compression'];
const LZ_FAULTS: readonly BodyFault[] = ['bad-lz'];

/** Every body encoding of SPEC §2 and docs/capture.md ("curl -d bodies", Content-Encoding). */
export const ENCODINGS = {
  json: { query: '', headers: JSON_TYPE, encode: (b) => b, faults: PLAIN_FAULTS },
  'json-charset': {
    query: '',
    headers: { 'content-type': 'application/json; charset=utf-8' },
    encode: (b) => b,
    faults: PLAIN_FAULTS,
  },
  'text-plain': { query: '', headers: TEXT_TYPE, encode: (b) => b, faults: PLAIN_FAULTS },
  'gzip-header': {
    query: '',
    headers: { ...JSON_TYPE, 'content-encoding': 'gzip' },
    encode: (b) => gzipSync(b),
    faults: ZIP_FAULTS,
  },
  'x-gzip-header': {
    query: '',
    headers: { ...JSON_TYPE, 'content-encoding': 'x-gzip' },
    encode: (b) => gzipSync(b),
    faults: ZIP_FAULTS,
  },
  'gzip-query': {
    query: 'compression=gzip',
    headers: TEXT_TYPE,
    encode: (b) => gzipSync(b),
    faults: ZIP_FAULTS,
  },
  'gzip-js-query': {
    query: 'compression=gzip-js',
    headers: TEXT_TYPE,
    encode: (b) => gzipSync(b),
    faults: ZIP_FAULTS,
  },
  'gzip-magic': { query: '', headers: JSON_TYPE, encode: (b) => gzipSync(b), faults: ZIP_FAULTS },
  'gzip-header-and-query': {
    query: 'compression=gzip-js',
    headers: { ...TEXT_TYPE, 'content-encoding': 'gzip' },
    encode: (b) => gzipSync(b),
    faults: ZIP_FAULTS,
  },
  'deflate-header': {
    query: '',
    headers: { ...JSON_TYPE, 'content-encoding': 'deflate' },
    encode: (b) => deflateSync(b),
    faults: ZIP_FAULTS,
  },
  'br-header': {
    query: '',
    headers: { ...JSON_TYPE, 'content-encoding': 'br' },
    encode: (b) => brotliCompressSync(b),
    faults: ZIP_FAULTS,
  },
  'base64-text': {
    query: '',
    headers: TEXT_TYPE,
    encode: (b) => b.toString('base64'),
    faults: ['bad-utf8', 'bad-base64'],
  },
  'lz64-query': {
    query: 'compression=lz64',
    headers: TEXT_TYPE,
    encode: (_b, t) => lz(t),
    faults: LZ_FAULTS,
  },
  'lz-string-query': {
    query: 'compression=lz-string',
    headers: TEXT_TYPE,
    encode: (_b, t) => lz(t),
    faults: LZ_FAULTS,
  },
  'form-json': { query: '', headers: FORM_TYPE, encode: (_b, t) => form({ data: t }), faults: [] },
  // `curl -d '{…}'`: JSON labelled as a form (docs/capture.md).
  'form-raw-json': { query: '', headers: FORM_TYPE, encode: (b) => b, faults: [] },
  'form-base64': {
    query: '',
    headers: FORM_TYPE,
    encode: (b) => form({ data: b.toString('base64') }),
    faults: ['bad-utf8', 'bad-base64'],
  },
  'form-lz64': {
    query: '',
    headers: FORM_TYPE,
    encode: (_b, t) => form({ data: lz(t), compression: 'lz64' }),
    faults: LZ_FAULTS,
  },
  'form-lz64-query': {
    query: 'compression=lz64',
    headers: FORM_TYPE,
    encode: (_b, t) => form({ data: lz(t) }),
    faults: LZ_FAULTS,
  },
} satisfies Record<string, EncodingDef>;

export type EncodingName = keyof typeof ENCODINGS;
export const ENCODING_NAMES = Object.keys(ENCODINGS) as EncodingName[];

/** Byte sequences no UTF-8 decoder may take: a stray byte, a bad continuation, an encoded surrogate, overlong NUL, past U+10FFFF, a cut sequence. */
const BAD_UTF8: readonly (readonly number[])[] = [
  [0xff],
  [0xc3, 0x28],
  [0xed, 0xa0, 0x80],
  [0xc0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
];

// ---------------------------------------------------------------------------------------------------------
// Cases

export interface FuzzCase {
  readonly method: 'POST' | 'GET' | 'OPTIONS';
  /** One of ROUTES. */
  readonly route: string;
  /** Query parameters besides the encoding's ('' or `a=b&c=d`). */
  readonly query: string;
  readonly encoding: EncodingName;
  /** The JSON text before encoding (may hold raw lone surrogates: UTF-8 carries them as U+FFFD). */
  readonly text: string;
  readonly bodyFault?: BodyFault;
  /** Where in the body a byte fault goes (a fraction of its length, 0..1). */
  readonly faultAt?: number;
  /** Bodies too large to keep in a case: over 20 MiB on the wire, or a gzip bomb past 100 MiB. */
  readonly big?: 'wire' | 'bomb';
  readonly origin?: string;
  /** Sent twice, as a client retries a request whose answer it did not get: each event is still stored once. */
  readonly retry?: boolean;
  /** What the generator meant (for reading a failure; the model never looks at it). */
  readonly note?: string;
}

export interface EncodedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | string | undefined;
}

let wireBody: Buffer | undefined;
let bombBody: Buffer | undefined;

/** The bytes of a case, as they go on the wire. */
export function encodeCase(c: FuzzCase): EncodedRequest {
  const enc: EncodingDef = ENCODINGS[c.encoding];
  const query = [enc.query, c.query].filter((q) => q !== '').join('&');
  const path = query === '' ? c.route : `${c.route}?${query}`;
  const headers: Record<string, string> = { ...enc.headers };
  if (c.origin !== undefined) headers['origin'] = c.origin;
  if (c.method !== 'POST') return { method: c.method, path: c.route, headers: {}, body: undefined };
  if (c.big === 'wire') {
    wireBody ??= Buffer.concat([
      Buffer.from(
        `{"api_key":"${PROJECT_API_KEY}","event":"fuzz big","distinct_id":"big","properties":{"p":"`,
      ),
      Buffer.alloc(21 * MiB, 0x61),
      Buffer.from('"}}'),
    ]);
    return { method: 'POST', path: c.route, headers: { ...headers, ...JSON_TYPE }, body: wireBody };
  }
  if (c.big === 'bomb') {
    bombBody ??= gzipSync(
      Buffer.concat([
        Buffer.from(
          `{"api_key":"${PROJECT_API_KEY}","event":"fuzz bomb","distinct_id":"b","properties":{"p":"`,
        ),
        Buffer.alloc(101 * MiB, 0x61),
        Buffer.from('"}}'),
      ]),
    );
    return {
      method: 'POST',
      path: `${c.route}?compression=gzip`,
      headers: { ...headers, ...TEXT_TYPE },
      body: bombBody,
    };
  }
  const at = c.faultAt ?? 0.5;
  let bytes = Buffer.from(c.text, 'utf8');
  if (c.bodyFault === 'bad-utf8') {
    // At a character boundary, so that the sequence is wrong whatever surrounds it.
    let p = Math.floor(bytes.length * at);
    while (p < bytes.length && (bytes[p]! & 0xc0) === 0x80) p++;
    const bad = Buffer.from(BAD_UTF8[Math.floor(at * 1000) % BAD_UTF8.length]!);
    bytes = Buffer.concat([bytes.subarray(0, p), bad, bytes.subarray(p)]);
  }
  let body = enc.encode(bytes, c.text);
  if (c.bodyFault === 'bad-compression') {
    const b = Buffer.from(body);
    body = b.subarray(0, Math.max(3, Math.floor(b.length * Math.min(at, 0.9))));
  } else if (c.bodyFault === 'bad-base64' || c.bodyFault === 'bad-lz') {
    // `!` and `@` are in no base64 alphabet; a form's data field carries them as %21 / %40.
    const s = typeof body === 'string' ? body : body.toString('latin1');
    if (c.encoding.startsWith('form-')) {
      const fields = new URLSearchParams(s);
      const data = fields.get('data') ?? '';
      fields.set('data', c.bodyFault === 'bad-lz' ? '@@@@' : `${data.slice(0, 4)}!!${data.slice(4)}`);
      body = fields.toString();
    } else {
      body = c.bodyFault === 'bad-lz' ? '@@@@' : `${s.slice(0, 4)}!!${s.slice(4)}`;
    }
  } else if (c.bodyFault === 'unsupported-coding') {
    headers['content-encoding'] = 'compress';
  }
  return { method: 'POST', path, headers, body };
}

/** A case as text a person can read and paste: the request, and the case as a literal for a regression test. */
export function describeCase(c: FuzzCase, maxLiteral = 20_000): string {
  const req = encodeCase(c);
  const size = req.body === undefined ? 0 : Buffer.byteLength(req.body);
  const fields = [
    `method: '${c.method}'`,
    `route: '${c.route}'`,
    `query: ${jsLiteral(c.query)}`,
    `encoding: '${c.encoding}'`,
    c.bodyFault === undefined ? '' : `bodyFault: '${c.bodyFault}'`,
    c.faultAt === undefined ? '' : `faultAt: ${c.faultAt}`,
    c.big === undefined ? '' : `big: '${c.big}'`,
    c.origin === undefined ? '' : `origin: ${jsLiteral(c.origin)}`,
    c.retry === true ? 'retry: true' : '',
    c.text.length <= maxLiteral
      ? `text: ${jsLiteral(c.text)}`
      : `text: /* ${c.text.length} characters, starting */ ${jsLiteral(c.text.slice(0, 2000))}`,
  ].filter((f) => f !== '');
  return [
    `${req.method} ${req.path}  (${c.note ?? ''})`,
    `headers: ${JSON.stringify(req.headers)}; body: ${size} bytes`,
    `case: { ${fields.join(', ')} }`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Expectations of stored values

export type Exp =
  | { readonly t: 'any' }
  | { readonly t: 'eq'; readonly v: string | number | boolean | null }
  | { readonly t: 'arr'; readonly items: readonly Exp[] }
  | { readonly t: 'obj'; readonly fields: ReadonlyMap<string, Exp>; readonly partial: boolean }
  /** Some string, well formed (no lone surrogate, no NUL). */
  | { readonly t: 'text' };

const ANY: Exp = { t: 'any' };

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: JsonObject, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const get = (o: JsonObject, k: string): unknown => (has(o, k) ? o[k] : undefined);

/** What a value sent becomes once stored (SPEC §2: every string well formed; a number as a double). */
export function expOf(v: unknown): Exp {
  if (typeof v === 'string') return { t: 'eq', v: wellFormed(v) };
  // Past a double (`1e400`) there is no number to keep: whatever is stored is as good as the rest.
  if (typeof v === 'number') return Number.isFinite(v) ? { t: 'eq', v } : ANY;
  if (typeof v === 'boolean' || v === null) return { t: 'eq', v };
  if (Array.isArray(v)) return { t: 'arr', items: v.map(expOf) };
  if (isObject(v)) return { t: 'obj', fields: fieldsOf(v), partial: false };
  return ANY;
}

/**
 * The fields of an object once its keys are well formed. Two keys that become the same one (`a\uD800` and
 * `a\u0000`) leave one field whose value the contract does not pick.
 */
function fieldsOf(o: JsonObject): Map<string, Exp> {
  const fields = new Map<string, Exp>();
  const clashes = new Set<string>();
  for (const k of Object.keys(o)) {
    const wk = wellFormed(k);
    if (fields.has(wk)) clashes.add(wk);
    fields.set(wk, expOf(o[k]));
  }
  for (const k of clashes) fields.set(k, ANY);
  return fields;
}

/** How a stored value differs from the expectation, or undefined. */
export function mismatch(exp: Exp, actual: unknown, path = ''): string | undefined {
  switch (exp.t) {
    case 'any':
      return undefined;
    case 'text':
      if (typeof actual !== 'string') return `${path}: expected a string, got ${show(actual)}`;
      return isWellFormed(actual) ? undefined : `${path}: not well formed: ${show(actual)}`;
    case 'eq':
      return actual === exp.v ? undefined : `${path}: expected ${show(exp.v)}, got ${show(actual)}`;
    case 'arr': {
      if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`;
      if (actual.length !== exp.items.length)
        return `${path}: expected ${exp.items.length} items, got ${actual.length}: ${show(actual)}`;
      for (let i = 0; i < exp.items.length; i++) {
        const m = mismatch(exp.items[i]!, actual[i], `${path}[${i}]`);
        if (m !== undefined) return m;
      }
      return undefined;
    }
    case 'obj': {
      if (!isObject(actual)) return `${path}: expected an object, got ${show(actual)}`;
      for (const [k, e] of exp.fields) {
        const p = `${path}[${jsLiteral(k)}]`;
        if (!has(actual, k)) return `${p}: missing (keys: ${show(Object.keys(actual))})`;
        const m = mismatch(e, actual[k], p);
        if (m !== undefined) return m;
      }
      if (!exp.partial) {
        for (const k of Object.keys(actual))
          if (!exp.fields.has(k)) return `${path}: unexpected key ${jsLiteral(k)}`;
      }
      return undefined;
    }
  }
}

/** The first string or key of a value that is not well formed, as a path, or undefined. */
export function illFormed(v: unknown, path = ''): string | undefined {
  if (typeof v === 'string') return isWellFormed(v) ? undefined : `${path}: ${show(v)}`;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const m = illFormed(v[i], `${path}[${i}]`);
      if (m !== undefined) return m;
    }
  } else if (isObject(v)) {
    for (const k of Object.keys(v)) {
      if (!isWellFormed(k)) return `${path}: key ${jsLiteral(k)}`;
      const m = illFormed(v[k], `${path}[${jsLiteral(k)}]`);
      if (m !== undefined) return m;
    }
  }
  return undefined;
}

function show(v: unknown): string {
  const s = v === undefined ? 'undefined' : jsLiteral(JSON.stringify(v));
  return s.length > 300 ? `${s.slice(0, 300)}…(${s.length} chars)` : s;
}

// ---------------------------------------------------------------------------------------------------------
// The model

export interface StoredEvent {
  readonly uuid: string;
  readonly event: Exp;
  readonly distinctId: Exp;
  readonly properties: Exp;
  /** Index in the request, for messages. */
  readonly index: number;
}

export type Outcome =
  | { readonly kind: 'answer'; readonly status: number }
  | { readonly kind: 'refused'; readonly status: number; readonly codes: readonly string[] }
  | {
      readonly kind: 'accepted';
      readonly status: 200 | 204;
      readonly stored: readonly StoredEvent[];
      readonly dropped: number;
      /** A number past a double (`1e400`) may be refused as undecodable instead. */
      readonly mayRefuse: boolean;
    }
  | { readonly kind: 'ambiguous'; readonly why: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SURVEY_EVENTS = new Set(['survey sent', 'survey shown', 'survey dismissed']);
const PERSON_EVENTS = new Set(['$identify', '$create_alias', '$groupidentify']);
/** Properties capture reads as the request's key or the event's id: not asserted as stored. */
const UNCHECKED_PROPERTIES = ['token', '$token', 'distinct_id', '$distinct_id'];

interface Fault {
  readonly status: number;
  readonly code: string;
}

function valueDepth(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((m: number, x) => Math.max(m, valueDepth(x)), 0);
  if (isObject(v)) return 1 + Object.values(v).reduce((m: number, x) => Math.max(m, valueDepth(x)), 0);
  return 0;
}

function hasNonFinite(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (Array.isArray(v)) return v.some(hasNonFinite);
  if (isObject(v)) return Object.values(v).some(hasNonFinite);
  return false;
}

/** Whether a value holds a string or key that normalisation changes. */
function needsMending(v: unknown): boolean {
  if (typeof v === 'string') return !isWellFormed(v);
  if (Array.isArray(v)) return v.some(needsMending);
  if (isObject(v)) return Object.keys(v).some((k) => !isWellFormed(k) || needsMending(v[k]));
  return false;
}

/** A copy with every string and key well formed (for the size an event has once normalised). */
function mended(v: unknown): unknown {
  if (typeof v === 'string') return wellFormed(v);
  if (Array.isArray(v)) return v.map(mended);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const k of Object.keys(v))
      Object.defineProperty(out, wellFormed(k), {
        value: mended(v[k]),
        enumerable: true,
        configurable: true,
        writable: true,
      });
    return out;
  }
  return v;
}

function cutChars(s: string, n: number): string {
  const chars = Array.from(s);
  return chars.length > n ? chars.slice(0, n).join('') : s;
}

/** SPEC §2: a string distinct id is kept (well formed, cut to 200 characters); a non-string is its JSON text. */
function expectDistinctId(raw: unknown): Exp {
  if (typeof raw === 'string') return { t: 'eq', v: cutChars(wellFormed(raw), LIMITS.distinctIdChars) };
  // Whether strings inside are mended before or after the value becomes text, and what text a number past
  // 2^53 or past a double has, the contract does not say: a well-formed text, then.
  if (
    needsMending(raw) ||
    hasNonFinite(raw) ||
    (typeof raw === 'number' && !Number.isSafeInteger(raw) && Number.isInteger(raw))
  )
    return { t: 'text' };
  return { t: 'eq', v: cutChars(JSON.stringify(raw), LIMITS.distinctIdChars) };
}

/** What the stored properties must hold: every property sent, well formed; a top-level `$set` winning. */
function expectProperties(properties: JsonObject, item: JsonObject): Exp {
  const fields = fieldsOf(properties);
  for (const k of UNCHECKED_PROPERTIES) fields.delete(k);
  for (const k of ['$set', '$set_once']) {
    const top = get(item, k);
    // SPEC §2: beside one in properties, the top-level value wins; what else of the inner one is kept, it
    // does not say.
    if (isObject(top)) fields.set(k, { t: 'obj', fields: fieldsOf(top), partial: true });
  }
  return { t: 'obj', fields, partial: true };
}

/** The raw text of each event of a body, as JSON.parse reads the body (a repeated `batch` key: the last). */
export function itemTexts(text: string): string[] | undefined {
  try {
    let i = skipWs(text, 0);
    if (text[i] === '[') return elements(text, i).map(([a, b]) => text.slice(a, b));
    if (text[i] !== '{') return undefined;
    const ms = members(text, i);
    let batch: [number, number] | undefined;
    for (const m of ms) if (m.key === 'batch') batch = [m.start, m.end];
    if (batch === undefined) return [text.slice(i, skipValue(text, i))];
    i = skipWs(text, batch[0]);
    if (text[i] !== '[') return undefined;
    return elements(text, i).map(([a, b]) => text.slice(a, b));
  } catch {
    return undefined;
  }
}

function skipWs(s: string, i: number): number {
  while (i < s.length && (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r')) i++;
  return i;
}

function skipString(s: string, i: number): number {
  for (i++; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i + 1;
  }
  throw new Error('unterminated string');
}

function skipValue(s: string, i: number): number {
  i = skipWs(s, i);
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === '[') {
    const es = elements(s, i);
    return skipWs(s, es.length > 0 ? es[es.length - 1]![1] : i + 1) + 1;
  }
  if (c === '{') {
    const ms = members(s, i);
    return skipWs(s, ms.length > 0 ? ms[ms.length - 1]!.end : i + 1) + 1;
  }
  while (i < s.length && !',]} \t\n\r'.includes(s[i]!)) i++;
  return i;
}

/** The [start, end) of each element of the array at `i` (whitespace trimmed). */
function elements(s: string, i: number): [number, number][] {
  const out: [number, number][] = [];
  i = skipWs(s, i + 1);
  if (s[i] === ']') return out;
  for (;;) {
    const start = skipWs(s, i);
    const end = skipValue(s, start);
    out.push([start, end]);
    i = skipWs(s, end);
    if (s[i] === ',') i++;
    else if (s[i] === ']') return out;
    else throw new Error('bad array');
  }
}

/** Each member of the object at `i`: its key (decoded) and the [start, end) of its value. */
function members(s: string, i: number): { key: string; start: number; end: number }[] {
  const out: { key: string; start: number; end: number }[] = [];
  i = skipWs(s, i + 1);
  if (s[i] === '}') return out;
  for (;;) {
    const ks = skipWs(s, i);
    const ke = skipString(s, ks);
    const key = JSON.parse(s.slice(ks, ke)) as string;
    i = skipWs(s, ke);
    if (s[i] !== ':') throw new Error('bad object');
    const start = skipWs(s, i + 1);
    const end = skipValue(s, start);
    out.push({ key, start, end });
    i = skipWs(s, end);
    if (s[i] === ',') i++;
    else if (s[i] === '}') return out;
    else throw new Error('bad object');
  }
}

type SizeClass = 'under' | 'over' | 'unclear';

/**
 * Whether an event is over 1 MiB. The contract does not say measured how (the text as sent, with its
 * escapes; or the value written again, before or after its strings are mended): over means over by all of
 * them, under means under by all of them.
 */
function eventSize(item: unknown, text: string | undefined): SizeClass {
  const sizes = [Buffer.byteLength(JSON.stringify(item)), Buffer.byteLength(JSON.stringify(mended(item)))];
  if (text !== undefined) sizes.push(Buffer.byteLength(text));
  if (Math.min(...sizes) > LIMITS.eventBytes) return 'over';
  if (Math.max(...sizes) <= LIMITS.eventBytes && text !== undefined) return 'under';
  return 'unclear';
}

/** The contract's answer to a case (see the file's comment). */
export function expectCase(c: FuzzCase): Outcome {
  if (c.method === 'OPTIONS') return { kind: 'answer', status: 204 };
  if (c.method === 'GET') return { kind: 'answer', status: 405 };
  if (c.big !== undefined) return refused([{ status: 413, code: 'payload_too_large' }]);
  if (c.bodyFault === 'unsupported-coding') return refused([{ status: 415, code: 'unsupported_encoding' }]);
  if (c.bodyFault !== undefined) return refused([{ status: 400, code: 'invalid_payload' }]);
  let value: unknown;
  try {
    value = JSON.parse(c.text);
  } catch {
    return refused([{ status: 400, code: 'invalid_payload' }]);
  }
  if (!isObject(value) && !Array.isArray(value)) return refused([{ status: 400, code: 'invalid_payload' }]);

  const faults: Fault[] = [];
  if (valueDepth(value) > LIMITS.depth) faults.push({ status: 400, code: 'invalid_payload' });
  const batchRoute = c.route.replace(/\/$/, '') === '/batch';
  let items: unknown[] = [];
  let top: JsonObject | undefined;
  if (Array.isArray(value)) {
    if (batchRoute)
      return { kind: 'ambiguous', why: 'an array on /batch/ (docs/capture.md: 400; the code takes it)' };
    items = value;
    if (items.length === 0) faults.push({ status: 400, code: 'empty_batch' });
  } else {
    top = value;
    if (has(value, 'batch') || batchRoute) {
      const batch = get(value, 'batch');
      if (!Array.isArray(batch) || batch.length === 0) faults.push({ status: 400, code: 'empty_batch' });
      else items = batch;
    } else {
      items = [value];
    }
  }
  if (items.length > LIMITS.items) return refused([...faults, { status: 413, code: 'payload_too_large' }]);
  if (items.some((i) => !isObject(i))) return { kind: 'ambiguous', why: 'an event that is not an object' };
  const events = items as JsonObject[];

  // The key: api_key / token / $token at the top, in each event, and token / $token in its properties.
  const tokens = new Set<string>();
  const addTokens = (o: JsonObject, names: readonly string[]): void => {
    for (const n of names) {
      const v = get(o, n);
      if (typeof v === 'string' && v.trim() !== '') tokens.add(v.trim());
    }
  };
  if (top) addTokens(top, ['api_key', 'token', '$token']);
  for (const e of events) {
    addTokens(e, ['api_key', 'token', '$token']);
    const p = get(e, 'properties');
    if (isObject(p)) addTokens(p, ['token', '$token']);
  }
  if (tokens.size === 0) faults.push({ status: 401, code: 'missing_api_key' });
  else if (tokens.size > 1) faults.push({ status: 401, code: 'inconsistent_api_key' });
  else if (!tokens.has(PROJECT_API_KEY)) faults.push({ status: 401, code: 'invalid_api_key' });

  const texts = c.text.length * 3 > LIMITS.eventBytes ? itemTexts(c.text) : undefined;
  const small = c.text.length * 3 <= LIMITS.eventBytes;
  const stored: StoredEvent[] = [];
  const uuids = new Set<string>();
  let dropped = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const own: Fault[] = [];
    const props = get(e, 'properties');
    if (props !== undefined && props !== null && !isObject(props))
      own.push({ status: 400, code: 'invalid_event' });
    const ts = get(e, 'timestamp');
    if (ts === null) return { kind: 'ambiguous', why: 'a null timestamp (SPEC: "not a string")' };
    if (ts !== undefined && typeof ts !== 'string') own.push({ status: 400, code: 'invalid_event' });
    const name = get(e, 'event');
    if (name !== undefined && name !== null && typeof name !== 'string')
      own.push({ status: 400, code: 'invalid_event' });
    const properties = isObject(props) ? props : {};

    // Silently dropped (SPEC §2): no name, or no / null / empty distinct id.
    const ids = [
      get(e, 'distinct_id'),
      get(properties, 'distinct_id'),
      get(properties, '$distinct_id'),
    ].filter((v) => v !== undefined);
    if (ids.some((v) => JSON.stringify(v) !== JSON.stringify(ids[0])))
      return { kind: 'ambiguous', why: 'two different distinct ids in one event' };
    const rawId = ids[0];
    const drop =
      name === undefined ||
      name === null ||
      name === '' ||
      rawId === undefined ||
      rawId === null ||
      rawId === '';
    const eventName = typeof name === 'string' ? wellFormed(name) : '';

    if (!drop) {
      if (eventName === '$groupidentify') {
        for (const f of ['$group_type', '$group_key']) {
          const v = get(properties, f);
          if (typeof v !== 'string') own.push({ status: 400, code: 'invalid_group' });
          else if (v === '') return { kind: 'ambiguous', why: `an empty ${f}` };
          else {
            const over = [v.length, Array.from(v).length].map((n) => n > LIMITS.groupFieldChars);
            if (over[0] !== over[1])
              return { kind: 'ambiguous', why: `${f} over 400 UTF-16 units, not characters` };
            if (over[0]) own.push({ status: 400, code: 'invalid_group' });
          }
        }
      } else if (eventName === '$create_alias') {
        const alias = get(properties, 'alias');
        if (typeof alias !== 'string') own.push({ status: 400, code: 'invalid_alias' });
        else if (alias === '') return { kind: 'ambiguous', why: 'an empty alias' };
      } else if (SURVEY_EVENTS.has(eventName)) {
        const id = get(properties, '$survey_id');
        if (id === undefined || id === null) own.push({ status: 400, code: 'missing_survey_id' });
        else if (id === '') return { kind: 'ambiguous', why: 'an empty $survey_id' };
      }
      const size = small ? 'under' : eventSize(e, texts?.[i]);
      if (size === 'unclear') return { kind: 'ambiguous', why: `event ${i} is near 1 MiB by one measure` };
      if (size === 'over') own.push({ status: 413, code: 'payload_too_large' });
    }
    if (drop && own.length > 0) return { kind: 'ambiguous', why: 'a dropped event that is also malformed' };
    faults.push(...own);
    if (drop) {
      dropped++;
      continue;
    }
    // `$process_person_profile: false` on an event that only changes a person: not stored (SPEC §2).
    if (get(properties, '$process_person_profile') === false && PERSON_EVENTS.has(eventName)) {
      dropped++;
      continue;
    }
    const uuid = get(e, 'uuid');
    if (typeof uuid !== 'string' || !UUID.test(uuid))
      return { kind: 'ambiguous', why: 'an event without a uuid' };
    const id = uuid.toLowerCase();
    if (uuids.has(id)) return { kind: 'ambiguous', why: 'one uuid twice in a request' };
    uuids.add(id);
    stored.push({
      uuid: id,
      index: i,
      event: { t: 'eq', v: eventName },
      distinctId: expectDistinctId(rawId),
      properties: expectProperties(properties, e),
    });
  }
  const mayRefuse = hasNonFinite(value);
  if (faults.length > 0)
    return refused(mayRefuse ? [...faults, { status: 400, code: 'invalid_payload' }] : faults);
  const beacon = /(^|&)beacon=1(&|$)/.test(c.query);
  return { kind: 'accepted', status: beacon ? 204 : 200, stored, dropped, mayRefuse };
}

function refused(faults: readonly Fault[]): Outcome {
  const statuses = new Set(faults.map((f) => f.status));
  if (statuses.size > 1) {
    return {
      kind: 'ambiguous',
      why: `refusals with different statuses: ${faults.map((f) => f.code).join(', ')}`,
    };
  }
  return { kind: 'refused', status: faults[0]!.status, codes: [...new Set(faults.map((f) => f.code))] };
}

// ---------------------------------------------------------------------------------------------------------
// Generators

/** Distinct ids: a small pool so that persons meet and merge (illegal ids included), and odd ones. */
export const DISTINCT_IDS = [
  'user-1',
  'user-2',
  'user-3',
  'anon-1',
  'anon-2',
  'anonymous',
  'null',
  '0',
  'undefined',
  '[object Object]',
  'guest',
  'distinct_id',
  'user\u0000nul',
  'user\ud800lone',
  '\udc00',
  '😀',
  '\u202euser',
  '  padded  ',
  '__proto__',
];

/** Five group types: a project has five indexes, so every one of these gets one (odd ones included). */
export const GROUP_TYPES = ['company', 'org\ud800', 'team\u0000', '__proto__', 'émoji😀'];

const SPECIAL_NAMES = new Set([...PERSON_EVENTS, ...SURVEY_EVENTS]);
const NAMES = [
  'signed up',
  '$pageview',
  '$screen',
  '$autocapture',
  '$exception',
  '$feature_flag_called',
  'purchase',
  '$pageleave',
];

export const ODD_TIMESTAMPS = [
  '2024-01-01T10:00:00Z',
  '2024-01-01 10:00:00',
  '2024-01-01T10:00:00+05:30',
  '2024-01-01T10:00:00.123456789Z',
  '0001-01-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '1899-12-31T23:59:59Z',
  '1900-01-01T00:00:00Z',
  '1970-01-01T00:00:00Z',
  '2262-04-11T23:47:16.854Z',
  '2299-12-31T23:59:59Z',
  '2300-01-01T00:00:00Z',
  '9999-12-31T23:59:59Z',
  '+275760-09-13T00:00:00.000Z',
  '-000001-01-01T00:00:00Z',
  '1700000000000',
  'Tue, 01 Jan 2030 00:00:00 GMT',
  '',
  'not a time',
  '2024-13-45T99:99:99Z',
];

const nameArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 4, arbitrary: oddString(20).filter((s) => s !== '' && !SPECIAL_NAMES.has(wellFormed(s))) },
  { weight: 1, arbitrary: longString(150, 5000) },
  // Around 200 characters: a dropped event's warning quotes the first 200 of its name.
  { weight: 1, arbitrary: pairRun(190, 260) },
);

const distinctArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...DISTINCT_IDS).map(str) },
  {
    weight: 3,
    arbitrary: oddString(12)
      .filter((s) => s !== '')
      .map(str),
  },
  { weight: 1, arbitrary: longString(190, 450).map(str) },
  { weight: 1, arbitrary: numberText.map(num) },
  {
    weight: 1,
    arbitrary: jsonValue(2).filter((v) => v.k === 'arr' || v.k === 'obj' || (v.k === 'lit' && v.v !== null)),
  },
);

const timestampArb: fc.Arbitrary<Json> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2040-01-01T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((d) => str(d.toISOString())),
  },
  { weight: 3, arbitrary: fc.constantFrom(...ODD_TIMESTAMPS).map(str) },
  { weight: 2, arbitrary: oddString(12).map(str) },
  // Long and odd: a warning that quotes its first 100 characters must not cut a pair in two.
  { weight: 1, arbitrary: longString(90, 300).map(str) },
  { weight: 1, arbitrary: pairRun(90, 130).map(str) },
);

const setEntries = withDuplicates(
  fc.array(fc.tuple(propertyKey, jsonValue(2)), { maxLength: 4 }),
  jsonValue(1),
);
const someObject = setEntries.map(obj);
/** A value that is not an object: what `properties`, `$set` and the like must not be, or may be. */
const notObject: fc.Arbitrary<Json> = fc.oneof(
  oddString(6).map(str),
  numberText.map(num),
  fc.constant(lit(true)),
  fc.array(jsonValue(1), { maxLength: 2 }).map(arr),
);

/** Autocapture's elements as older SDKs send them (`$elements`), or the chain posthog-js sends (`$elements_chain`). */
const elementsArb: fc.Arbitrary<readonly [string, Json]> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.record({
          tag: fc.oneof(fc.constantFrom('a', 'button', 'div', 'svg'), oddString(6)),
          // Around the 400 characters of `$el_text` and the 2048 of `attr__href` PostHog's ingestion keeps.
          text: fc.option(fc.oneof(oddString(20), pairRun(390, 420), longString(380, 420)), { freq: 3 }),
          href: fc.option(fc.oneof(oddString(20), pairRun(2040, 2060)), { freq: 3 }),
          cls: fc.option(fc.oneof(fc.constant('btn primary'), oddString(10)), { freq: 2 }),
          nth: fc.option(fc.oneof(numberText.map(num), oddString(4).map(str)), { freq: 2 }),
          extra: fc.array(fc.tuple(oddString(6), fc.oneof(oddString(8).map(str), jsonValue(1))), {
            maxLength: 2,
          }),
        }),
        { minLength: 1, maxLength: 3 },
      )
      .map(
        (els) =>
          [
            '$elements',
            arr(
              els.map((e) => {
                const entries: (readonly [string, Json])[] = [['tag_name', str(e.tag)]];
                if (e.text !== null) entries.push(['$el_text', str(e.text)]);
                if (e.href !== null) entries.push(['attr__href', str(e.href)]);
                if (e.cls !== null) entries.push(['attr__class', str(e.cls)]);
                if (e.nth !== null) entries.push(['nth_child', e.nth]);
                for (const [k, v] of e.extra) entries.push([`attr__${k}`, v]);
                return obj(entries);
              }),
            ),
          ] as const,
      ),
  },
  { weight: 1, arbitrary: oddString(30).map((c) => ['$elements_chain', str(c)] as const) },
);

type Kind = 'plain' | '$identify' | '$create_alias' | '$groupidentify' | 'survey' | '$pageview' | '$screen';
type Drop = 'none' | 'no-name' | 'null-name' | 'empty-name' | 'no-id' | 'null-id' | 'empty-id';

const itemPlan = fc.record({
  kind: fc.constantFrom<Kind>(
    'plain',
    'plain',
    'plain',
    '$identify',
    '$create_alias',
    '$groupidentify',
    'survey',
    '$pageview',
    '$screen',
  ),
  name: nameArb,
  drop: fc.oneof(
    { weight: 24, arbitrary: fc.constant<Drop>('none') },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Drop>('no-name', 'null-name', 'empty-name', 'no-id', 'null-id', 'empty-id'),
    },
  ),
  /** An earlier copy of a key, overwritten by the real one (duplicate keys in the raw text). */
  junk: fc.subarray(['event', 'distinct_id', 'uuid', 'properties', 'timestamp', 'api_key'] as const, {
    maxLength: 2,
  }),
  junkValue: jsonValue(1),
  distinctWhere: fc.constantFrom('top', 'top', 'top', 'props', 'props$', 'both'),
  distinct: distinctArb,
  props: propertyEntries(6),
  bulk: fc.option(longString(200, 40_000), { freq: 12 }),
  extraTop: fc.array(fc.tuple(itemKey, jsonValue(2)), { maxLength: 2 }),
  timestamp: fc.option(timestampArb, { freq: 2 }),
  offset: fc.option(numberText.map(num), { freq: 12 }),
  uuid: fc.uuid(),
  upperUuid: fc.boolean(),
  personless: fc.oneof(
    { weight: 6, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  groups: fc.option(
    fc
      .array(
        fc.tuple(
          fc.oneof(
            { weight: 5, arbitrary: fc.constantFrom(...GROUP_TYPES) },
            { weight: 1, arbitrary: propertyKey },
          ),
          fc.oneof(oddString(10).map(str), numberText.map(num), jsonValue(1)),
        ),
        { maxLength: 3 },
      )
      .map(obj),
    { freq: 4 },
  ),
  set: fc.option(fc.oneof({ weight: 5, arbitrary: someObject }, { weight: 1, arbitrary: notObject }), {
    freq: 4,
  }),
  setOnce: fc.option(someObject, { freq: 6 }),
  unset: fc.option(
    fc.array(propertyKey, { maxLength: 3 }).map((ks) => arr(ks.map(str))),
    { freq: 10 },
  ),
  topSet: fc.option(setEntries, { freq: 5 }),
  topSetOnce: fc.option(someObject, { freq: 8 }),
  /** Values for the top-level `$set` under the same keys as the inner one: which wins is the point. */
  topSetSame: fc.array(jsonValue(1), { maxLength: 3 }),
  anon: fc.option(distinctArb, { freq: 3 }),
  alias: fc.oneof(fc.constantFrom(...DISTINCT_IDS), oddString(10)).filter((s) => s !== ''),
  groupType: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...GROUP_TYPES) },
    { weight: 1, arbitrary: longString(300, 400) },
  ),
  groupKey: fc
    .oneof({ weight: 8, arbitrary: oddString(12) }, { weight: 1, arbitrary: longString(300, 400) })
    .filter((s) => s !== ''),
  groupSet: fc.option(someObject, { freq: 2 }),
  surveyId: fc.oneof(
    oddString(10)
      .filter((s) => s !== '')
      .map(str),
    numberText.map(num),
  ),
  surveyName: fc.constantFrom('survey sent', 'survey shown', 'survey dismissed'),
  /** What a malformed field of this event holds instead. */
  badValue: notObject,
  elements: fc.option(elementsArb, { freq: 6 }),
  shuffle: fc.integer(),
});

type ItemPlan = typeof itemPlan extends fc.Arbitrary<infer T> ? T : never;

/** The faults a request can carry (one at most), and the limit probes. */
export type RequestFault =
  | 'none'
  | 'bad-json'
  | 'not-events'
  | 'empty-body'
  | 'body-fault'
  | 'no-key'
  | 'blank-key'
  | 'wrong-key'
  | 'two-keys'
  | 'empty-batch'
  | 'batch-not-array'
  | 'single-on-batch'
  | 'too-deep'
  | 'deep'
  | 'props-not-object'
  | 'timestamp-not-string'
  | 'event-not-string'
  | 'bad-group'
  | 'bad-alias'
  | 'no-survey-id'
  | 'event-over-limit'
  | 'event-near-limit'
  | 'too-many-items'
  | 'many-items'
  | 'wire-over'
  | 'bomb'
  | 'options'
  | 'get';

const faultArb: fc.Arbitrary<RequestFault> = fc.oneof(
  { weight: 50, arbitrary: fc.constant<RequestFault>('none') },
  {
    weight: 30,
    arbitrary: fc.constantFrom<RequestFault>(
      'bad-json',
      'not-events',
      'empty-body',
      'body-fault',
      'body-fault',
      'no-key',
      'blank-key',
      'wrong-key',
      'two-keys',
      'empty-batch',
      'batch-not-array',
      'single-on-batch',
      'too-deep',
      'deep',
      'deep',
      'props-not-object',
      'timestamp-not-string',
      'event-not-string',
      'bad-group',
      'bad-alias',
      'no-survey-id',
      'options',
      'get',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<RequestFault>(
      'event-over-limit',
      'event-near-limit',
      'event-near-limit',
      'too-many-items',
      'many-items',
      'wire-over',
      'bomb',
    ),
  },
);

const requestPlan = fc.record({
  route: fc.constantFrom(...ROUTES),
  shape: fc.constantFrom('single', 'single', 'array', 'batch', 'batch'),
  encoding: fc.constantFrom(...ENCODING_NAMES),
  style: writeStyle,
  items: fc.array(itemPlan, { minLength: 1, maxLength: 5 }),
  keyPlace: fc.constantFrom('api_key', 'api_key', 'token', '$token', 'item', 'props', 'everywhere'),
  fault: faultArb,
  faultAt: fc.nat({ max: 999 }),
  query: fc.subarray(['ver=1.130.0', '_=1700000000000', '_=99999999999999', 'ip=1'], { maxLength: 2 }),
  beacon: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  retry: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  historical: fc.option(fc.constantFrom(lit(true), lit(false), str('true')), { freq: 4 }),
  sentAt: fc.option(timestampArb, { freq: 4 }),
  topExtra: fc.array(fc.tuple(itemKey, jsonValue(1)), { maxLength: 2 }),
  origin: fc.option(fc.constantFrom('https://example.com', 'null'), { freq: 4 }),
  deepKinds: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
  deepKeys: fc.array(propertyKey, { maxLength: 3 }),
  deepSlack: fc.integer({ min: 0, max: 8 }),
  corrupt: fc.constantFrom('truncate', 'insert', 'quote'),
  badValue: notObject,
});

type RequestPlan = typeof requestPlan extends fc.Arbitrary<infer T> ? T : never;

/** Entries in a shuffled order that keeps the copies of one key in order (the last written still wins). */
function shuffled(entries: readonly (readonly [string, Json])[], seed: number): (readonly [string, Json])[] {
  let s = seed >>> 0 || 1;
  const rank = entries.map(() => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s;
  });
  const byKey = new Map<string, number[]>();
  entries.forEach(([k], i) => byKey.set(k, [...(byKey.get(k) ?? []), i]));
  for (const idx of byKey.values()) {
    const rs = idx.map((i) => rank[i]!).sort((a, b) => a - b);
    idx.forEach((i, j) => (rank[i] = rs[j]!));
  }
  return entries
    .map((e, i) => [e, rank[i]!] as const)
    .sort((a, b) => a[1] - b[1])
    .map(([e]) => e);
}

interface Built {
  /** The item's entries (without the request key: placed later). */
  entries: (readonly [string, Json])[];
  props: (readonly [string, Json])[] | 'absent' | 'null' | Json;
}

function buildItem(
  p: ItemPlan,
  fault: RequestFault,
  isFaulty: boolean,
  odd: boolean,
  bulk: string | undefined,
): Built {
  const entries: (readonly [string, Json])[] = [];
  const props: (readonly [string, Json])[] = [...p.props];
  const drop: Drop = isFaulty ? 'none' : p.drop;
  let kind = p.kind;
  if (isFaulty && fault === 'bad-group') kind = '$groupidentify';
  if (isFaulty && fault === 'bad-alias') kind = '$create_alias';
  if (isFaulty && fault === 'no-survey-id') kind = 'survey';

  let name: Json | undefined;
  switch (kind) {
    case 'plain':
      name = str(p.name);
      break;
    case 'survey':
      name = str(p.surveyName);
      break;
    default:
      name = str(kind);
  }
  if (drop === 'no-name') name = undefined;
  if (drop === 'null-name') name = lit(null);
  if (drop === 'empty-name') name = str('');
  if (isFaulty && fault === 'event-not-string') name = p.badValue.k === 'str' ? num('1') : p.badValue;
  if (name !== undefined) entries.push(['event', name]);

  entries.push(['uuid', str(p.upperUuid ? p.uuid.toUpperCase() : p.uuid)]);

  let id: Json | undefined = p.distinct;
  if (drop === 'no-id') id = undefined;
  if (drop === 'null-id') id = lit(null);
  if (drop === 'empty-id') id = str('');
  if (id !== undefined) {
    const where = drop === 'null-id' ? 'top' : p.distinctWhere;
    if (where === 'top' || where === 'both') entries.push(['distinct_id', id]);
    if (where === 'props' || where === 'both') props.push(['distinct_id', id]);
    if (where === 'props$') props.push(['$distinct_id', id]);
  }

  // What each special event carries (SPEC §2 "Event semantics"), and the faults of each.
  if (kind === '$identify' && p.anon !== null) props.push(['$anon_distinct_id', p.anon]);
  if (kind === '$create_alias') {
    const bad = isFaulty && fault === 'bad-alias';
    if (!bad) props.push(['alias', str(p.alias)]);
    else if (odd) props.push(['alias', p.badValue.k === 'str' ? lit(null) : p.badValue]);
  }
  if (kind === '$groupidentify') {
    const bad = isFaulty && fault === 'bad-group';
    let type: Json | undefined = str(p.groupType);
    let key: Json | undefined = str(p.groupKey);
    if (bad) {
      const which = p.shuffle & 3;
      const wrong =
        which === 0
          ? undefined
          : which === 1
            ? p.badValue.k === 'str'
              ? num('7')
              : p.badValue
            : str('g'.repeat(401 + (p.shuffle & 63)));
      if ((p.shuffle & 4) === 0) type = wrong;
      else key = wrong;
    }
    if (type !== undefined) props.push(['$group_type', type]);
    if (key !== undefined) props.push(['$group_key', key]);
    if (p.groupSet !== null) props.push(['$group_set', p.groupSet]);
  }
  if (kind === 'survey') {
    const bad = isFaulty && fault === 'no-survey-id';
    if (!bad) props.push(['$survey_id', p.surveyId]);
    else if ((p.shuffle & 1) === 1) props.push(['$survey_id', lit(null)]);
    const id = p.surveyId.k === 'str' ? p.surveyId.v : writeJson(p.surveyId);
    props.push([`$survey_response_${id}`, str(p.alias)]);
    props.push([
      '$survey_questions',
      arr([
        obj([
          ['id', p.surveyId],
          ['question', str(p.name)],
        ]),
      ]),
    ]);
  }
  if (kind === '$pageview') props.push(['$current_url', str(`https://example.com/${p.name}`)]);
  if (kind === '$screen') props.push(['$screen_name', str(p.name)]);
  if (p.groups !== null) props.push(['$groups', p.groups]);
  if (p.elements !== null) props.push(p.elements);
  if (p.set !== null) props.push(['$set', p.set]);
  if (p.setOnce !== null) props.push(['$set_once', p.setOnce]);
  if (p.unset !== null) props.push(['$unset', p.unset]);
  if (p.personless) props.push(['$process_person_profile', lit(false)]);
  if (bulk !== undefined) props.push(['bulk', str(bulk)]);
  else if (p.bulk !== null) props.push(['bulk', str(p.bulk)]);

  if (isFaulty && fault === 'timestamp-not-string')
    entries.push(['timestamp', p.badValue.k === 'str' ? num('1700000000000') : p.badValue]);
  else if (p.timestamp !== null) entries.push(['timestamp', p.timestamp]);
  if (p.offset !== null) entries.push(['offset', p.offset]);
  entries.push(...p.extraTop);
  if (p.topSet !== null) {
    // Some of the inner $set's keys again, with other values: SPEC §2 says the top-level ones win.
    const inner = p.set !== null && p.set.k === 'obj' ? p.set.entries.map(([k]) => k) : [];
    const same = p.topSetSame.slice(0, inner.length).map((v, i) => [inner[i]!, v] as const);
    entries.push(['$set', obj([...same, ...p.topSet])]);
  }
  if (p.topSetOnce !== null) entries.push(['$set_once', p.topSetOnce]);

  let propsOut: Built['props'] = props;
  if (isFaulty && fault === 'props-not-object') propsOut = p.badValue;
  else if (props.length === 0 && (p.shuffle & 7) === 0) propsOut = (p.shuffle & 8) === 0 ? 'absent' : 'null';
  return { entries: shuffled(entries, p.shuffle), props: propsOut };
}

/** Builds the case of a plan: the one place where a plan's fault is put into the request. */
function buildCase(plan: RequestPlan): FuzzCase {
  const fault = plan.fault;
  let { route, shape, encoding } = plan;
  let style: WriteStyle = plan.style;
  const note: string[] = [fault];
  const query = [...(plan.beacon ? ['beacon=1'] : []), ...plan.query].join('&');
  const base = { method: 'POST' as const, query, origin: plan.origin ?? undefined };

  if (fault === 'options' || fault === 'get') {
    return {
      ...base,
      method: fault === 'options' ? 'OPTIONS' : 'GET',
      route,
      encoding,
      text: '',
      note: fault,
    };
  }
  if (fault === 'wire-over' || fault === 'bomb') {
    return {
      ...base,
      query: '',
      route,
      encoding: fault === 'bomb' ? 'gzip-query' : 'json',
      text: '',
      big: fault === 'bomb' ? 'bomb' : 'wire',
      note: fault,
    };
  }
  if (fault === 'too-many-items' || fault === 'many-items') {
    const n = fault === 'too-many-items' ? LIMITS.items + 1 : LIMITS.items;
    const text = `{"api_key":"${PROJECT_API_KEY}","batch":[${Array.from({ length: n }, () => '{}').join(',')}]}`;
    return { ...base, route: '/batch/', encoding: 'json', text, note: `${fault}: ${n} nameless events` };
  }
  if (fault === 'single-on-batch') {
    shape = 'single';
    route = '/batch/';
  }
  // A refusal of the batch's shape with the key where only the top is read, so that it is the one fault.
  let keyPlace = plan.keyPlace;
  if (fault === 'empty-batch' || fault === 'batch-not-array') {
    shape = 'batch';
    keyPlace = 'api_key';
  }
  if (fault === 'single-on-batch') keyPlace = 'api_key';
  // A single event or an array on /batch/ is refused (docs/capture.md), or not decided: a batch there,
  // unless the refusal is the point.
  if (route.replace(/\/$/, '') === '/batch' && fault !== 'single-on-batch') shape = 'batch';
  if (fault === 'event-near-limit' || fault === 'event-over-limit')
    style = { ...style, escapes: 'minimal', spaces: false };
  if (fault === 'body-fault') {
    const faults = ENCODINGS[encoding].faults;
    if (faults.length === 0)
      encoding = (['json', 'gzip-header', 'base64-text', 'lz64-query'] as const)[plan.faultAt % 4]!;
  }

  const faultyIndex = plan.faultAt % plan.items.length;
  const itemFault = [
    'props-not-object',
    'timestamp-not-string',
    'event-not-string',
    'bad-group',
    'bad-alias',
    'no-survey-id',
    'event-over-limit',
    'event-near-limit',
  ].includes(fault);

  // The request's key: where it goes, and what it is (SPEC §2: api_key, token, $token, or in properties).
  const key = fault === 'wrong-key' ? WRONG_KEY : PROJECT_API_KEY;
  const blank = [str(''), str('   '), num('42'), lit(null), lit(false)][plan.faultAt % 5]!;
  const keyValue = (): Json => (fault === 'blank-key' ? blank : str(key));
  const keyless = fault === 'no-key' || fault === 'blank-key';

  const build = (bulk: string | undefined): string => {
    const items = plan.items.map((p, i) => {
      const b = buildItem(
        p,
        fault,
        itemFault && i === faultyIndex,
        (plan.faultAt & 1) === 1,
        i === faultyIndex ? bulk : undefined,
      );
      const entries = [...b.entries];
      let props = b.props;
      // `props` puts the key in each event's properties (posthog-js); an event without properties gets
      // it as api_key instead, so that a request never lacks its key by accident.
      const inProps = (keyPlace === 'props' || keyPlace === 'everywhere') && Array.isArray(props);
      const inItem =
        keyPlace === 'item' ||
        keyPlace === 'everywhere' ||
        (keyPlace === 'props' && !inProps) ||
        (shape === 'single' && ['api_key', 'token', '$token'].includes(keyPlace)) ||
        (shape === 'array' && i === 0 && ['api_key', 'token', '$token'].includes(keyPlace));
      if (!keyless || fault === 'blank-key') {
        if (inItem)
          entries.push([keyPlace === 'token' || keyPlace === '$token' ? keyPlace : 'api_key', keyValue()]);
        if (inProps && Array.isArray(props)) props = [...props, ['token', keyValue()]];
      }
      if (fault === 'two-keys' && i === faultyIndex) {
        if (Array.isArray(props)) props = [...props, ['$token', str(OTHER_KEY)]];
        else entries.push(['token', str(OTHER_KEY)]);
      }
      if (props !== 'absent') {
        const value = props === 'null' ? lit(null) : Array.isArray(props) ? obj(props) : props;
        entries.push(['properties', value]);
      }
      return { entries, plan: p };
    });
    // Nesting up to the limit: a property as deep as the body allows (128 levels), or past it.
    if (fault === 'deep' || fault === 'too-deep') {
      const at = shape === 'single' ? 2 : shape === 'array' ? 3 : 4;
      const levels =
        fault === 'too-deep' ? LIMITS.depth + 1 - at + plan.deepSlack : LIMITS.depth - at - plan.deepSlack;
      const entries = items[faultyIndex]!.entries;
      const i = entries.findLastIndex(([k]) => k === 'properties');
      const deep = nested(levels, plan.deepKinds, plan.deepKeys, str('bottom'));
      const props = i >= 0 ? entries[i]![1] : undefined;
      const merged =
        props !== undefined && props.k === 'obj'
          ? obj([...props.entries, ['deep', deep]])
          : obj([['deep', deep]]);
      if (i >= 0) entries[i] = ['properties', merged];
      else entries.push(['properties', merged]);
    }
    // Duplicate keys in the raw text: an earlier copy of a key the event has, holding something else.
    const events = items.map(({ entries, plan: p }) => {
      const out = [...entries];
      for (const k of p.junk) {
        const first = out.findIndex(([key]) => key === k);
        if (first >= 0) out.splice(first, 0, [k, p.junkValue]);
      }
      return out;
    });
    let body: Json;
    if (shape === 'single') {
      body = obj([...events[0]!, ...plan.topExtra]);
    } else if (shape === 'array') {
      body = arr(events.map(obj));
    } else {
      const top: (readonly [string, Json])[] = [];
      if (
        (!keyless || fault === 'blank-key') &&
        ['api_key', 'token', '$token', 'everywhere'].includes(keyPlace)
      )
        top.push([keyPlace === 'everywhere' ? 'api_key' : keyPlace, keyValue()]);
      if (plan.historical !== null) top.push(['historical_migration', plan.historical]);
      if (plan.sentAt !== null) top.push(['sent_at', plan.sentAt]);
      top.push(...plan.topExtra);
      const batch =
        fault === 'empty-batch'
          ? arr([])
          : fault === 'batch-not-array'
            ? plan.badValue.k === 'arr'
              ? obj([])
              : plan.badValue
            : arr(events.map(obj));
      top.push(['batch', batch]);
      body = obj(shuffled(top, plan.faultAt));
    }
    return writeJson(body, style);
  };

  let text: string;
  if (fault === 'event-over-limit' || fault === 'event-near-limit') {
    // Sized by measuring: the bulk string is repeated until the event's text is just past or just under 1 MiB.
    const chunk = plan.items[faultyIndex]!.bulk ?? plan.items[faultyIndex]!.name;
    const safe =
      fault === 'event-near-limit'
        ? Array.from(chunk, (ch) =>
            ch.length === 1 && (ch < ' ' || ch === '"' || ch === '\\' || (ch >= '\ud800' && ch <= '\udfff'))
              ? 'z'
              : ch,
          ).join('')
        : chunk;
    const unit = safe === '' ? 'x' : safe;
    const small = build('');
    const per = Buffer.byteLength(JSON.stringify(unit)) - 2 || 1;
    const target =
      fault === 'event-over-limit'
        ? LIMITS.eventBytes + 4096 + (plan.faultAt % 7) * 1000
        : LIMITS.eventBytes - 4096 - Buffer.byteLength(small);
    const n = Math.max(1, Math.floor((target * unit.length) / per));
    text = build(repeatTo(unit, n));
    note.push(`bulk of ${n} units`);
  } else {
    text = build(undefined);
  }

  // Faults of the text itself: not JSON, JSON that is not events, nothing.
  if (fault === 'bad-json') {
    const p = 1 + (plan.faultAt % Math.max(1, text.length - 1));
    text =
      plan.corrupt === 'truncate'
        ? text.slice(0, p)
        : plan.corrupt === 'insert'
          ? `${text.slice(0, p)}}${text.slice(p)}`
          : text.replace(/"/, "'");
    if (isJson(text)) text = `${text}}`;
  } else if (fault === 'not-events') {
    text = ['12345', 'null', '"text"', 'true', '1e400', '"\\ud800"', '-0', ' 7 '][plan.faultAt % 8]!;
  } else if (fault === 'empty-body') {
    text = plan.faultAt % 2 === 0 ? '' : ' \n\t ';
  }
  const bodyFault =
    fault === 'body-fault'
      ? ENCODINGS[encoding].faults[plan.faultAt % ENCODINGS[encoding].faults.length]
      : undefined;
  return {
    ...base,
    route,
    encoding,
    text,
    ...(bodyFault === undefined ? {} : { bodyFault, faultAt: (plan.faultAt % 997) / 997 }),
    ...(plan.retry ? { retry: true } : {}),
    note: `${note.join(', ')}; ${shape} of ${plan.items.length}; style ${style.escapes}${style.spaces ? ' +spaces' : ''}`,
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Prints a case as what it is, for fast-check's counterexamples. */
function printable(c: FuzzCase): FuzzCase {
  return Object.defineProperty({ ...c }, fc.toStringMethod, {
    value: () => describeCase(c, 4000),
    enumerable: false,
  });
}

/** Whole capture requests, each with at most one fault; `expectCase` says what each must get. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = requestPlan.map((plan) => printable(buildCase(plan)));
