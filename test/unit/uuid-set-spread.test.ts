/**
 * The duplicate window's table picks a uuid's first slot by the high bits of its tag: uuids that differ only in
 * their low bits (numbered ones, as some exports write) must still start their probes all over the table.
 */
import t from 'tap';
import { tagOf, uuidKey } from '../../src/ingest/uuid-set.ts';

function topBytes(uuids: readonly string[]): number {
  const key = new Uint32Array(5);
  const seen = new Set<number>();
  for (const u of uuids) {
    uuidKey(1, u, key);
    seen.add(tagOf(key[0]!, key[1]!, key[3]!, key[4]!) >>> 24);
  }
  return seen.size;
}

t.test('numbered uuids spread over the whole table', (t) => {
  const numbered = Array.from(
    { length: 10_000 },
    (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
  );
  // 10,000 keys over 256 regions: a spread hash leaves none empty; the unmixed tag used a handful.
  t.equal(topBytes(numbered), 256, 'every region of the table gets some');
  t.end();
});

t.test('random uuids too', (t) => {
  const random = Array.from({ length: 10_000 }, () => crypto.randomUUID());
  t.equal(topBytes(random), 256);
  t.end();
});
