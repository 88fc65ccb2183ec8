import t from 'tap';
import { PinnedLru } from '../../src/ingest/persons/pinned-lru.ts';
import { PersonCache, cacheKey, type Person } from '../../src/ingest/persons/person-cache.ts';

t.test('oldest unused entries go first; a used one gets a second chance; pinned ones stay', (t) => {
  const removed: string[] = [];
  const pinned = new Set<string>();
  const lru = new PinnedLru<string>({
    max: 2,
    isPinned: (v) => pinned.has(v),
    onRemove: (k) => removed.push(k),
  });
  lru.set('a', 'A');
  lru.set('b', 'B');
  lru.set('c', 'C');
  t.same(removed, [], 'set never evicts: what a change just set is not pinned yet');
  lru.trim();
  t.same(removed, ['a'], 'all used once: the oldest goes');
  t.equal(lru.get('b'), 'B', 'b is used again');
  lru.set('d', 'D');
  lru.trim();
  t.same(removed, ['a', 'c'], 'c, unused since the last trim, goes before b, which was read');
  t.equal(lru.peek('b'), 'B');
  pinned.add('B');
  pinned.add('D');
  lru.set('e', 'E');
  pinned.add('E');
  lru.trim();
  t.same(removed, ['a', 'c'], 'everything is pinned: the bound gives way');
  t.equal(lru.size, 3);
  pinned.clear();
  lru.set('f', 'F');
  lru.trim();
  t.same(removed, ['a', 'c', 'b', 'd']);
  t.equal(lru.size, 2);
  t.equal(lru.peek('e'), 'E');
  lru.set('e', 'E2');
  t.same(removed, ['a', 'c', 'b', 'd', 'e'], 'a replaced value counts as removed');
  t.end();
});

function person(id: string): Person {
  return {
    projectId: 1,
    id,
    properties: {},
    isIdentified: false,
    createdAt: 0,
    version: 0,
    distinctIds: new Set(),
    refs: 0,
    pending: 0,
    deleted: false,
    stale: false,
  };
}

t.test('one object per person while any entry points at it', (t) => {
  const cache = new PersonCache(2);
  const p = person('p1');
  p.distinctIds.add('x').add('y');
  cache.set(cacheKey(1, 'x'), p);
  cache.set(cacheKey(1, 'y'), p);
  t.equal(cache.live('p1'), p);
  cache.set(cacheKey(1, 'z'), null);
  cache.trim();
  t.equal(cache.get(cacheKey(1, 'x')), undefined, 'x was evicted');
  t.equal(cache.live('p1'), p, 'still live through y');
  cache.set(cacheKey(1, 'w'), null);
  cache.trim();
  t.equal(cache.live('p1'), undefined, 'no entry left: forgotten');
  t.end();
});

t.test('a person with a write in flight is not evicted; a failed write drops it', (t) => {
  const cache = new PersonCache(1);
  const p = person('p1');
  p.distinctIds.add('x');
  cache.set(cacheKey(1, 'x'), p);
  cache.pin([p]);
  cache.set(cacheKey(1, 'y'), null);
  cache.trim();
  t.equal(cache.get(cacheKey(1, 'x')), p, 'kept while pending');
  cache.unpin([p], true);
  t.equal(cache.get(cacheKey(1, 'x')), undefined, 'gone after its write failed');
  t.ok(p.stale);
  t.equal(cache.live('p1'), undefined);
  t.end();
});
