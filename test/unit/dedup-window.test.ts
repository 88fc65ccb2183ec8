import t from 'tap';
import { DedupWindow } from '../../src/ingest/dedup-window.ts';

t.test('a committed key is a duplicate; a failed commit forgets it', async (t) => {
  const w = new DedupWindow(10);
  t.equal(w.check('a'), 'new');
  const ok = Promise.resolve();
  w.track(['a'], ok);
  t.equal(w.check('a'), ok, 'in flight: the duplicate waits for the first copy');
  await ok;
  await Promise.resolve();
  t.equal(w.check('a'), 'committed');

  const failed = Promise.reject(new Error('insert failed'));
  failed.catch(() => undefined);
  w.track(['b'], failed);
  await failed.catch(() => undefined);
  await Promise.resolve();
  t.equal(w.check('b'), 'new', 'a retry after a failed commit is stored');
});

t.test('memory is bounded by two generations', (t) => {
  const w = new DedupWindow(3);
  for (const k of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) w.remember(k);
  t.ok(w.size <= 6);
  t.equal(w.check('g'), 'committed');
  t.equal(w.check('d'), 'committed', 'the previous generation is still remembered');
  t.equal(w.check('a'), 'new', 'the oldest generation is forgotten');
  t.end();
});

t.test('size 0 turns the window off', (t) => {
  const w = new DedupWindow(0);
  w.remember('a');
  t.equal(w.check('a'), 'new');
  t.end();
});
