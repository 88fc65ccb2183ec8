import t from 'tap';
import { TableCache } from '../../src/query/materialize/pool/table-cache.ts';

t.test('holds tables within its bytes, least recently used out first', (t) => {
  const cache = new TableCache<string>(100);
  t.same(cache.set('a', 'A', 40), { evicted: 0, held: true });
  t.same(cache.set('b', 'B', 40), { evicted: 0, held: true });
  t.equal(cache.get('a'), 'A', 'a is now the most recently used');
  t.same(cache.set('c', 'C', 40), { evicted: 1, held: true }, 'b, the least recently used, goes');
  t.notOk(cache.has('b'));
  t.equal(cache.size, 2);
  t.equal(cache.bytes, 80);
  t.same(cache.set('d', 'D', 100), { evicted: 2, held: true }, 'a table of the whole capacity evicts all');
  t.equal(cache.bytes, 100);
  t.end();
});

t.test('a table larger than the capacity is not held, and evicts nothing', (t) => {
  const cache = new TableCache<string>(100);
  cache.set('a', 'A', 10);
  t.same(cache.set('big', 'BIG', 101), { evicted: 0, held: false });
  t.equal(cache.get('big'), undefined);
  t.equal(cache.get('a'), 'A');
  t.end();
});

t.test('setting a key again replaces its bytes; delete frees them', (t) => {
  const cache = new TableCache<string>(100);
  cache.set('a', 'A1', 30);
  cache.set('a', 'A2', 50);
  t.equal(cache.bytes, 50);
  t.equal(cache.get('a'), 'A2');
  t.equal(cache.delete('a'), true);
  t.equal(cache.delete('a'), false);
  t.equal(cache.bytes, 0);
  t.equal(cache.size, 0);
  t.end();
});
