/**
 * KnownIds, the Bloom filter of distinct ids that have a person: it never rules out a key it was given
 * (that would make a known user's event start a new person), rules out most others once loaded, says
 * nothing until then, and grows past its first level without losing what it holds.
 */
import t from 'tap';
import { KnownIds } from '../../src/ingest/persons/known-ids.ts';

/** The keys in pages, each a turn of the event loop later, as the store's reads come. */
async function* pages(keys: readonly string[], size: number): AsyncGenerator<string[]> {
  for (let i = 0; i < keys.length; i += size) {
    await new Promise((r) => setImmediate(r));
    yield keys.slice(i, i + size);
  }
}

const keysOf = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `1:${prefix}-${i.toString(36)}`);

t.test('before the load, every key may be known', (t) => {
  const known = new KnownIds();
  t.notOk(known.ready);
  t.ok(known.mightHave('1:never-seen'));
  t.end();
});

t.test('loaded keys and keys added later are always reported; most others are ruled out', async (t) => {
  const known = new KnownIds();
  const stored = keysOf('stored', 100_000);
  known.add('1:added-during-the-load');
  await known.load(pages(stored, 7_000));
  t.ok(known.ready);
  known.add('2:added-after');
  t.equal(stored.filter((k) => !known.mightHave(k)).length, 0, 'no stored key is ruled out');
  t.ok(known.mightHave('1:added-during-the-load'));
  t.ok(known.mightHave('2:added-after'));
  t.notOk(known.mightHave('1:added-after'), 'the project is part of the key');
  const fresh = keysOf('fresh', 100_000);
  const falsePositives = fresh.filter((k) => known.mightHave(k)).length;
  t.ok(falsePositives < 2_000, `at most ~1% of new keys would still be looked up (${falsePositives})`);
});

t.test('it grows past its first level and still holds every key', async (t) => {
  const known = new KnownIds();
  const stored = keysOf('many', 1_500_000);
  await known.load(pages(stored, 50_000));
  t.equal(known.size, 1_500_000);
  let missing = 0;
  for (const k of stored) if (!known.mightHave(k)) missing++;
  t.equal(missing, 0, 'no key is ruled out');
  const fresh = keysOf('other', 100_000);
  const falsePositives = fresh.filter((k) => known.mightHave(k)).length;
  t.ok(falsePositives < 3_000, `false positives stay near 1% a level (${falsePositives})`);
});
