/**
 * JSON as a capture client can write it, for the capture fuzz (issue 39): a value tree that keeps duplicate
 * keys and the exact text of numbers, a writer that can escape any character as `\uXXXX` (lone surrogates and
 * NUL included, which `JSON.stringify` writes only one way) and put whitespace between tokens, and fast-check
 * arbitraries of odd strings, keys, numbers and nested values. What a JSON text means is what `JSON.parse`
 * reads from it (duplicate keys: the last wins), as in Weir.
 */
import fc from 'fast-check';

export type Json =
  | { readonly k: 'str'; readonly v: string }
  /** A number as written: `9007199254740993` and `1e400` mean what `JSON.parse` makes of them. */
  | { readonly k: 'num'; readonly text: string }
  | { readonly k: 'lit'; readonly v: boolean | null }
  | { readonly k: 'arr'; readonly items: readonly Json[] }
  /** Entries in order; a key may repeat. */
  | { readonly k: 'obj'; readonly entries: readonly (readonly [string, Json])[] };

export const str = (v: string): Json => ({ k: 'str', v });
export const num = (text: string): Json => ({ k: 'num', text });
export const lit = (v: boolean | null): Json => ({ k: 'lit', v });
export const arr = (items: readonly Json[]): Json => ({ k: 'arr', items });
export const obj = (entries: readonly (readonly [string, Json])[]): Json => ({ k: 'obj', entries });

/** A plain JS value (from JSON.parse, or written by hand) as a tree. */
export function fromValue(value: unknown): Json {
  if (value === null) return lit(null);
  if (typeof value === 'boolean') return lit(value);
  if (typeof value === 'number') return num(JSON.stringify(value));
  if (typeof value === 'string') return str(value);
  if (Array.isArray(value)) return arr(value.map(fromValue));
  if (typeof value === 'object') {
    return obj(Object.keys(value).map((k) => [k, fromValue((value as Record<string, unknown>)[k])] as const));
  }
  throw new Error(`not a JSON value: ${typeof value}`);
}

/** The value of `key` in an object tree as JSON.parse would see it: the last entry of that key. */
export function entry(o: Json, key: string): Json | undefined {
  if (o.k !== 'obj') return undefined;
  let found: Json | undefined;
  for (const [k, v] of o.entries) if (k === key) found = v;
  return found;
}

/** The deepest nesting of arrays and objects (the outermost counts as 1, as Weir's limit counts). */
export function depth(v: Json): number {
  if (v.k === 'arr') return 1 + Math.max(0, ...v.items.map(depth));
  if (v.k === 'obj') return 1 + Math.max(0, ...v.entries.map(([, e]) => depth(e)));
  return 0;
}

/**
 * How a text is written. `minimal`: as JSON.stringify (only what must be escaped, lone surrogates as
 * `\uXXXX`). `non-ascii`: every character past `~` escaped. `all`: every character escaped. `mixed`: each
 * character written raw or escaped at random (a lone surrogate may then go raw: in a UTF-8 body it becomes
 * U+FFFD on the wire, in an lz-string body it stays a lone surrogate). `spaces` puts JSON whitespace between
 * tokens. `seed` drives the choices.
 */
export interface WriteStyle {
  readonly escapes: 'minimal' | 'non-ascii' | 'all' | 'mixed';
  readonly spaces: boolean;
  readonly seed: number;
}

export const MINIMAL: WriteStyle = { escapes: 'minimal', spaces: false, seed: 1 };

/** mulberry32: a small seeded generator, so a style reproduces its text exactly. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SHORT: Readonly<Record<number, string>> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
};
const SPACES = [' ', '\t', '\n', '\r'];

function hex4(code: number, upper: boolean): string {
  const h = code.toString(16).padStart(4, '0');
  return `\\u${upper ? h.toUpperCase() : h}`;
}

/** Writes `v` as JSON text in `style`. */
export function writeJson(v: Json, style: WriteStyle = MINIMAL): string {
  const rnd = prng(style.seed);
  const out: string[] = [];
  const ws = (): void => {
    if (!style.spaces) return;
    const r = rnd();
    if (r < 0.6) return;
    out.push(SPACES[Math.floor(rnd() * SPACES.length)]!.repeat(1 + Math.floor(rnd() * 2)));
  };
  const writeString = (s: string): void => {
    out.push('"');
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const next = s.charCodeAt(i + 1);
      // A surrogate pair is written whole, raw or as two escapes: half of it raw and half escaped would be
      // read differently by a decoder that mends raw lone surrogates before it reads escapes.
      const pair = c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
      const lone = !pair && c >= 0xd800 && c <= 0xdfff;
      const upper = style.escapes === 'mixed' ? rnd() < 0.5 : false;
      let escape: boolean;
      if (c < 0x20 || c === 0x22 || c === 0x5c) escape = true;
      else if (style.escapes === 'all') escape = true;
      else if (style.escapes === 'non-ascii') escape = c > 0x7e;
      else if (style.escapes === 'minimal') escape = lone;
      else escape = rnd() < 0.5;
      if (!escape) {
        out.push(pair ? s.slice(i, i + 2) : s[i]!);
      } else if (SHORT[c] !== undefined && !(style.escapes === 'mixed' && rnd() < 0.3)) {
        out.push(SHORT[c]);
      } else if (c === 0x2f) {
        out.push('\\/');
      } else {
        out.push(hex4(c, upper));
        if (pair) out.push(hex4(next, upper));
      }
      if (pair) i++;
    }
    out.push('"');
  };
  const write = (x: Json): void => {
    ws();
    switch (x.k) {
      case 'str':
        writeString(x.v);
        break;
      case 'num':
        out.push(x.text);
        break;
      case 'lit':
        out.push(String(x.v));
        break;
      case 'arr':
        out.push('[');
        x.items.forEach((item, i) => {
          if (i > 0) out.push(',');
          write(item);
        });
        ws();
        out.push(']');
        break;
      case 'obj':
        out.push('{');
        x.entries.forEach(([key, value], i) => {
          if (i > 0) out.push(',');
          ws();
          writeString(key);
          ws();
          out.push(':');
          write(value);
        });
        ws();
        out.push('}');
        break;
    }
    ws();
  };
  write(v);
  return out.join('');
}

export const writeStyle: fc.Arbitrary<WriteStyle> = fc.record({
  escapes: fc.constantFrom('minimal', 'minimal', 'non-ascii', 'all', 'mixed', 'mixed'),
  spaces: fc.boolean(),
  seed: fc.integer(),
});

// ---------------------------------------------------------------------------------------------------------
// Strings

const char = (code: number): string => String.fromCharCode(code);
/** Bidirectional controls and marks (embeddings, overrides, isolates, LRM/RLM/ALM). */
export const BIDI = [
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
];
const INVISIBLE = ['\u200b', '\u200c', '\u200d', '\ufeff', '\u2028', '\u2029', '\u00a0', '\u0085', '\u00ad'];
const ODD_BMP = ['\ufffd', '\ufffe', '\uffff', '\u0301', 'ß', 'İ', 'ﬃ', '€', 'ü', '世'];
const EMOJI = ['😀', '👩‍👩‍👧', '🇫🇷', '\u{1f600}\ufe0f', '🏳️‍🌈', '\u{10ffff}', '\u{1d11e}'];

/** One piece of a string: a character, a surrogate pair, or a lone half of one. */
export const unit: fc.Arbitrary<string> = fc.oneof(
  { weight: 30, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map(char) },
  { weight: 5, arbitrary: fc.constantFrom('"', '\\', '/', '\u0000', "'", '%', '+', '&', '=') },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 0x1f }).map(char) },
  { weight: 1, arbitrary: fc.constant('\u007f') },
  { weight: 5, arbitrary: fc.integer({ min: 0xd800, max: 0xdbff }).map(char) },
  { weight: 5, arbitrary: fc.integer({ min: 0xdc00, max: 0xdfff }).map(char) },
  { weight: 4, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)) },
  { weight: 4, arbitrary: fc.constantFrom(...EMOJI) },
  { weight: 4, arbitrary: fc.constantFrom(...BIDI) },
  { weight: 3, arbitrary: fc.constantFrom(...INVISIBLE) },
  { weight: 3, arbitrary: fc.constantFrom(...ODD_BMP) },
  { weight: 6, arbitrary: fc.integer({ min: 0x80, max: 0xffff }).map(char) },
);

/** A string of up to `maxLength` pieces. */
export function oddString(maxLength = 16): fc.Arbitrary<string> {
  return fc.array(unit, { maxLength }).map((a) => a.join(''));
}

/** A long string: a short odd one repeated to `min`..`max` UTF-16 units (cheap to make, and to shrink). */
export function longString(min: number, max: number): fc.Arbitrary<string> {
  return fc
    .tuple(oddString(12), fc.integer({ min, max }))
    .map(([chunk, n]) => repeatTo(chunk === '' ? 'x' : chunk, n));
}

/**
 * A run of surrogate pairs (emoji) after a short prefix, `min`..`max` units long: where Weir cuts a string
 * to a length (a distinct id to 200 characters, a warning's excerpt, an element's text), a cut by UTF-16
 * units lands inside a pair half of the time.
 */
export function pairRun(min: number, max: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom('', 'x', 'xy'), fc.integer({ min, max }), fc.constantFrom(...EMOJI))
    .map(([prefix, n, e]) => prefix + e.repeat(Math.ceil(n / e.length)));
}

/** `chunk` repeated, cut to `n` units (the cut may leave half a pair: a lone surrogate, on purpose). */
export function repeatTo(chunk: string, n: number): string {
  return chunk.repeat(Math.ceil(n / chunk.length)).slice(0, n);
}

// ---------------------------------------------------------------------------------------------------------
// Keys

/** Keys that break naive code: prototype names, numbers, empty, separators, NUL and lone surrogates. */
export const ODD_KEYS: readonly string[] = [
  '',
  ' ',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  '0',
  '-1',
  '01',
  '1e3',
  '4294967295',
  '9007199254740993',
  'a.b',
  'a[0]',
  "'",
  '"',
  '\\',
  '`',
  '\u0000',
  'k\u0000',
  '\ud800',
  '\udc00',
  'k\ud800',
  '\udfff\ud800',
  '😀',
  '\u202e',
  'null',
  'undefined',
  'NaN',
  "'); DROP TABLE events; --",
  '{variables.x}',
  '$',
  '$$',
  'properties',
  'event',
  'uuid',
  'timestamp',
  '$current_url',
  '$session_id',
  '$window_id',
  '$screen_name',
  '$elements_chain',
  '$elements',
  '$lib',
  'k'.repeat(300),
];

/**
 * Property keys with a meaning to capture or ingest (SPEC §2): a generator sets them on purpose, never at
 * random, so that the model knows what each event is.
 */
export const RESERVED_PROPERTY_KEYS: ReadonlySet<string> = new Set([
  'token',
  '$token',
  'api_key',
  'distinct_id',
  '$distinct_id',
  '$process_person_profile',
  '$ignore_sent_at',
  '$set',
  '$set_once',
  '$unset',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  '$survey_id',
  'alias',
  '$anon_distinct_id',
  '$ip',
  '$geoip_disable',
]);

/** Item (event) keys with a meaning, left out of the random ones at the top of an event for the same reason. */
export const RESERVED_ITEM_KEYS: ReadonlySet<string> = new Set([
  'event',
  'distinct_id',
  'properties',
  'timestamp',
  'uuid',
  'api_key',
  'token',
  '$token',
  '$set',
  '$set_once',
  'offset',
  'batch',
  'historical_migration',
  'sent_at',
]);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** What SPEC §2 makes of every string of an event: lone surrogates and NUL become U+FFFD. */
export function wellFormed(s: string): string {
  return s.replace(LONE_SURROGATE, '\uFFFD').replaceAll('\u0000', '\uFFFD');
}

/** Whether a string is already as SPEC §2 wants it. */
export function isWellFormed(s: string): boolean {
  return wellFormed(s) === s;
}

function keyArb(reserved: ReadonlySet<string>): fc.Arbitrary<string> {
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.constantFrom(...ODD_KEYS) },
      { weight: 4, arbitrary: fc.stringMatching(/^[a-z$_][a-z0-9_$]{0,10}$/) },
      { weight: 4, arbitrary: oddString(10) },
    )
    .filter((k) => !reserved.has(k) && !reserved.has(wellFormed(k)));
}

export const propertyKey = keyArb(RESERVED_PROPERTY_KEYS);
export const itemKey = keyArb(RESERVED_ITEM_KEYS);

// ---------------------------------------------------------------------------------------------------------
// Numbers and values

/** Numbers as written: past 2^53, past a double (`1e400` parses to Infinity), `-0`, exponents, tiny ones. */
export const NUMBER_TEXTS: readonly string[] = [
  '0',
  '-0',
  '0.0',
  '1E+2',
  '1e-7',
  '9007199254740991',
  '9007199254740993',
  '-9007199254740993',
  '12345678901234567890',
  '18446744073709551616',
  '123456789012345678901234567890',
  '1.7976931348623157e308',
  '5e-324',
  '1e-400',
  '1e400',
  '-1e400',
  '0.1000000000000000055511151231257827',
];

export const numberText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NUMBER_TEXTS) },
  { weight: 3, arbitrary: fc.integer().map(String) },
  {
    weight: 2,
    arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  },
  { weight: 1, arbitrary: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String) },
);

/**
 * An object's entries with some keys written twice or more (only the last counts): the earlier copies hold
 * other values, so a reader that takes the first one reads something else.
 */
export function withDuplicates(
  entries: fc.Arbitrary<(readonly [string, Json])[]>,
  value: fc.Arbitrary<Json>,
): fc.Arbitrary<(readonly [string, Json])[]> {
  return fc
    .tuple(entries, fc.array(fc.tuple(fc.nat(), fc.nat(), value), { maxLength: 2 }))
    .map(([es, dups]) => {
      const out = [...es];
      for (const [which, at, v] of dups) {
        if (es.length === 0) break;
        const key = es[which % es.length]![0];
        // Before the original: the original still wins; after it: this copy wins. Both are the model's.
        out.splice(at % (out.length + 1), 0, [key, v] as const);
      }
      return out;
    });
}

/** A JSON value up to `maxDepth` containers deep, with odd strings, keys and numbers. */
export function jsonValue(maxDepth = 3): fc.Arbitrary<Json> {
  const leaf: fc.Arbitrary<Json> = fc.oneof(
    { weight: 5, arbitrary: oddString(16).map(str) },
    { weight: 3, arbitrary: numberText.map(num) },
    { weight: 2, arbitrary: fc.constantFrom(true, false, null).map(lit) },
  );
  const { value } = fc.letrec<{ value: Json }>((tie) => ({
    value: fc.oneof(
      { maxDepth, depthIdentifier: 'json' },
      { weight: 6, arbitrary: leaf },
      { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }).map(arr) },
      {
        weight: 1,
        arbitrary: withDuplicates(
          fc.array(fc.tuple(propertyKey, tie('value')), { maxLength: 4 }),
          tie('value'),
        ).map(obj),
      },
    ),
  }));
  return value;
}

/** Properties: random keys and values, some keys repeated. */
export function propertyEntries(maxKeys = 6): fc.Arbitrary<(readonly [string, Json])[]> {
  return withDuplicates(fc.array(fc.tuple(propertyKey, jsonValue(3)), { maxLength: maxKeys }), jsonValue(1));
}

/**
 * A value nested exactly `levels` containers deep (objects and arrays by `kinds`, keys odd), with a leaf
 * inside: how depth limits are probed without building wide trees.
 */
export function nested(levels: number, kinds: readonly boolean[], keys: readonly string[], leaf: Json): Json {
  let v = leaf;
  for (let i = levels - 1; i >= 0; i--) {
    const asObject = kinds.length > 0 ? kinds[i % kinds.length]! : i % 2 === 0;
    v = asObject ? obj([[keys.length > 0 ? keys[i % keys.length]! : 'k', v]]) : arr([v]);
  }
  return v;
}

/** A JS string literal of `s` that any editor shows as it is: everything but printable ASCII as `\uXXXX`. */
export function jsLiteral(s: string): string {
  let out = "'";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x27) out += "\\'";
    else if (c === 0x5c) out += '\\\\';
    else if (c >= 0x20 && c <= 0x7e) out += s[i];
    else out += `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return `${out}'`;
}
