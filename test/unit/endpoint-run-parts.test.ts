/** The parts of an endpoint run that need no store: the result cache and the page rewrite. */
import t from 'tap';
import { printDialect } from '../../src/query/dialect/mod.ts';
import { compileQuery } from '../../src/query/hogql-query.ts';
import { pageRows, paginate } from '../../src/query/endpoints/pagination.ts';
import { ResultCache } from '../../src/query/endpoints/result-cache.ts';

t.test('the cache: bounded in bytes, least recently used first, by endpoint, newest run kept', (t) => {
  const cache = new ResultCache<string>({ maxBytes: 800 });
  cache.set('a', 'e1', 'A', 100, 1);
  cache.set('b', 'e1', 'B', 100, 1);
  cache.set('c', 'e2', 'C', 100, 1);
  t.equal(cache.bytes, 300);
  t.equal(cache.get('a')?.value, 'A', 'a is now the most recently used');
  cache.set('d', 'e2', 'D', 100, 1);
  cache.set('e', 'e2', 'E', 100, 1);
  cache.set('f', 'e2', 'F', 100, 1);
  cache.set('g', 'e2', 'G', 100, 1);
  cache.set('h', 'e2', 'H', 100, 1);
  cache.set('i', 'e2', 'I', 100, 1);
  t.equal(cache.bytes, 800, 'never past the bound');
  t.equal(cache.get('b'), undefined, 'b, the least recently used, went first');
  t.equal(cache.get('a')?.value, 'A', 'a, used since, stayed');
  cache.set('huge', 'e3', 'X', 101, 1);
  t.equal(cache.get('huge'), undefined, 'a result over an eighth of the bound is not kept');

  cache.set('a', 'e1', 'A2', 100, 5);
  cache.set('a', 'e1', 'A-late', 100, 3);
  t.match(cache.get('a'), { value: 'A2', startedAt: 5 }, 'a slower, older run does not replace a newer one');
  cache.invalidate('e2');
  t.equal(cache.size, 1);
  t.equal(cache.bytes, 100);
  t.end();
});

t.test('the cache keeps a new result when every older one was used since; the oldest of them goes', (t) => {
  const cache = new ResultCache<string>({ maxBytes: 800 });
  const older = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  for (const k of older) cache.set(k, 'e', k.toUpperCase(), 100, 1);
  for (const k of [...older].reverse()) cache.get(k);
  cache.set('i', 'e', 'I', 100, 1);
  t.equal(cache.bytes, 800);
  t.equal(cache.get('i')?.value, 'I', 'the new result stays');
  t.equal(cache.get('a'), undefined, 'a, the first in, goes: a hit marks its entry, it does not reorder');
  t.same(
    older.slice(1).map((k) => cache.get(k)?.value),
    ['B', 'C', 'D', 'E', 'F', 'G', 'H'],
  );
  t.end();
});

t.test('pages: a literal LIMIT is rewritten, anything else wrapped; the query LIMIT is the ceiling', (t) => {
  const shown = (sql: string, limit?: number, offset?: number) =>
    printDialect(paginate(compileQuery(sql), { limit, offset }).ast);
  t.equal(shown('SELECT 1', 10), 'SELECT 1 LIMIT 11');
  t.equal(shown('SELECT 1', 10, 5), 'SELECT 1 LIMIT 11 OFFSET 5');
  t.equal(shown('SELECT 1 LIMIT 7', 3, 2), 'SELECT 1 LIMIT 4 OFFSET 2');
  t.equal(shown('SELECT 1 LIMIT 7', 10, 2), 'SELECT 1 LIMIT 5 OFFSET 2');
  t.equal(shown('SELECT 1 LIMIT 7 OFFSET 3', 2, 2), 'SELECT 1 LIMIT 3 OFFSET 5');
  t.equal(shown('SELECT 1 LIMIT 7', 2, 20), 'SELECT 1 LIMIT 0 OFFSET 20');
  t.equal(shown('SELECT 1 LIMIT 7', undefined, 2), 'SELECT 1 LIMIT 5 OFFSET 2');
  t.equal(shown('SELECT 1'), 'SELECT 1', 'no page: unchanged');
  t.equal(shown('SELECT 1 UNION ALL SELECT 2', 1), 'SELECT * FROM (SELECT 1 UNION ALL SELECT 2) LIMIT 2');
  t.equal(
    shown('SELECT 1 LIMIT {variables.n}', 1, 1),
    'SELECT * FROM (SELECT 1 LIMIT {variables.n}) LIMIT 2 OFFSET 1',
  );

  const resolved = paginate(compileQuery('SELECT event FROM events LIMIT 9'), { limit: 2 }).resolved;
  t.match(
    printDialect(resolved.query),
    /PREWHERE project_id = .* LIMIT 3$/,
    'the resolved query gets the same page',
  );

  t.same(pageRows([1, 2, 3], { limit: 2 }), { rows: [1, 2], hasMore: true });
  t.same(pageRows([1, 2], { limit: 2 }), { rows: [1, 2], hasMore: false });
  t.same(pageRows([1, 2], {}), { rows: [1, 2], hasMore: false });
  t.end();
});
