import t from 'tap';
import { jsonArrayOf } from '../../src/store/json-rows.ts';

const rows = (from: number, n: number): Record<string, unknown>[] =>
  Array.from({ length: n }, (_, i) => ({
    n: from + i,
    text: 'line\nbreak, "quoted" [x]',
    nested: { a: [1, { b: '}' }] },
  }));

t.test('frames of arrays become one array of every row, in order', (t) => {
  const frames = [rows(0, 3), rows(3, 1), rows(4, 2)].map((r) => Buffer.from(JSON.stringify(r)));
  t.same(JSON.parse(jsonArrayOf(frames).toString()), rows(0, 6));
  const text = JSON.stringify(rows(0, 3));
  const one = Buffer.alloc(Buffer.byteLength(text));
  one.write(text);
  t.equal(jsonArrayOf([one]), one, 'a single array frame is used as it is, not copied');
  const slab = Buffer.alloc(64 * 1024);
  const view = slab.subarray(100, 100 + slab.write(text, 100));
  const copied = jsonArrayOf([view]);
  t.not(copied.buffer, slab.buffer, 'a view into a larger buffer is copied, so the frame does not keep it');
  t.same(JSON.parse(copied.toString()), rows(0, 3));
  t.end();
});

t.test('frames from logs of earlier versions (a JSON text a line) join in too', (t) => {
  const legacy = Buffer.from(
    rows(0, 2)
      .map((r) => `${JSON.stringify(r)}\n`)
      .join(''),
  );
  const current = Buffer.from(JSON.stringify(rows(2, 2)));
  const legacyAgain = Buffer.from(
    rows(4, 1)
      .map((r) => `${JSON.stringify(r)}\n`)
      .join(''),
  );
  t.same(JSON.parse(jsonArrayOf([legacy, current, legacyAgain]).toString()), rows(0, 5));
  t.same(JSON.parse(jsonArrayOf([legacy]).toString()), rows(0, 2), 'a legacy frame alone');
  t.end();
});
