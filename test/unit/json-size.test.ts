import t from 'tap';
import { jsonFitsIn } from '../../src/capture/json-size.ts';

const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

t.test('agrees with the JSON text measured in UTF-8 at the limit and either side of it', (t) => {
  const values: unknown[] = [
    { event: 'e', properties: { a: 'x'.repeat(1000), n: 1.5e300, b: true, z: null, list: [1, 'two', [3]] } },
    { p: '€'.repeat(700) },
    { p: '\u0001"\\'.repeat(400) },
    { p: '😀'.repeat(300) },
    ['a', { b: [] }, {}],
    'plain',
    12345,
  ];
  for (const v of values) {
    const n = bytes(v);
    t.equal(jsonFitsIn(v, n), true, `${n} bytes fit in ${n}`);
    t.equal(jsonFitsIn(v, n - 1), false, `${n} bytes do not fit in ${n - 1}`);
    t.equal(jsonFitsIn(v, n * 100), true);
  }
  t.end();
});

t.test('an undefined member is left out, as JSON.stringify leaves it', (t) => {
  const v = { a: undefined, b: 'x' };
  t.equal(jsonFitsIn(v, bytes(v)), true);
  t.end();
});
