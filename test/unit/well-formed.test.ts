/**
 * Strings made well formed: in JSON text before it is parsed (capture's edge, the store's rows), the result
 * must be what making every parsed string well formed would give, keys and values at any depth, and text
 * that needs nothing must come back unchanged.
 */
import fc from 'fast-check';
import t from 'tap';
import { cut, wellFormed, wellFormedJson, withoutLoneSurrogates } from '../../src/core/well-formed.ts';

/** Every string of a parsed JSON value, keys included, made well formed. */
function deepWellFormed(v: unknown): unknown {
  if (typeof v === 'string') return wellFormed(v);
  if (Array.isArray(v)) return v.map(deepWellFormed);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormed(k), deepWellFormed(x)]));
  return v;
}

/** JSON text with every non-ASCII unit, backslash-adjacent text and control character written as `\u`. */
function escapeAll(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const code = c.charCodeAt(0);
    if (c === '"' && text[i - 1] !== '\\') inString = !inString;
    out += inString && code > 0x7e ? `\\u${code.toString(16).padStart(4, '0')}` : c;
  }
  return out;
}

/** Units a string is made of: surrogates alone or paired, NUL, backslashes, quotes and `u`, to meet every edge. */
const unit = fc.constantFrom(
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ud83d\ude00',
  '\u0000',
  '\\',
  '\\u',
  'u',
  'ud800',
  '"',
  'a',
  'é',
  '\u202e',
  '\n',
);
const text = fc.array(unit, { maxLength: 12 }).map((us) => us.join(''));
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.integer(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;

t.test('parsing the made-well-formed text is making the parsed strings well formed', (t) => {
  fc.assert(
    fc.property(json, (v) => {
      // JSON.stringify writes lone surrogates as escapes and keeps pairs raw; escapeAll writes pairs as escapes too.
      for (const written of [JSON.stringify(v), escapeAll(JSON.stringify(v))]) {
        const parsed: unknown = JSON.parse(wellFormedJson(written));
        t.strictSame(parsed, deepWellFormed(v), written);
        if (!written.includes('\\u')) t.equal(wellFormedJson(written), written);
      }
    }),
    { seed: 39, numRuns: 2000 },
  );
  t.end();
});

t.test('the cases by name', (t) => {
  const cases: [string, string, unknown][] = [
    ['a lone high surrogate in a key and a value', '{"k\\ud800":"v\\udc00"}', { 'k\uFFFD': 'v\uFFFD' }],
    ['a pair is kept', '"\\ud83d\\ude00"', '😀'],
    ['a pair in capitals', '"\\uD83D\\uDE00"', '😀'],
    ['a reversed pair', '"\\ude00\\ud83d"', '\uFFFD\uFFFD'],
    ['a high then a pair', '"\\ud83d\\ud83d\\ude00"', '\uFFFD😀'],
    ['NUL', '"a\\u0000b"', 'a\uFFFDb'],
    ['an escaped backslash before u', '"\\\\ud800"', '\\ud800'],
    ['an escaped backslash between the halves', '"\\ud800\\\\udc00"', '\uFFFD\\udc00'],
    ['other escapes are kept', '"\\u0041\\n\\t\\"\\/"', 'A\n\t"/'],
  ];
  for (const [name, written, want] of cases) t.strictSame(JSON.parse(wellFormedJson(written)), want, name);
  t.end();
});

t.test('raw lone surrogates (text not from UTF-8) and cutting', (t) => {
  t.equal(withoutLoneSurrogates('{"a":"\ud800😀\udc00"}'), '{"a":"\uFFFD😀\uFFFD"}');
  t.equal(withoutLoneSurrogates('a\u0000'), 'a\u0000', 'NUL is left for the parser to refuse');
  t.equal(cut('ab😀', 3), 'ab', 'a pair is not split');
  t.equal(cut('ab😀', 4), 'ab😀');
  t.equal(cut('abc', 2), 'ab');
  t.equal(cut('ab', 5), 'ab');
  t.end();
});
