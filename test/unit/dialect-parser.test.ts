import t from 'tap';
import type { Query, SelectQuery } from '../../src/query/dialect/ast.ts';
import { numberValue } from '../../src/query/dialect/ast.ts';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { MAX_DEPTH, MAX_QUERY_LENGTH, parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { PRECEDENCE } from '../helpers/dialect-precedence.ts';
import { onlyColumn, sexpr, stripPositions } from '../helpers/dialect-tree.ts';

const tree = (expr: string): string => sexpr(onlyColumn(parseDialect(`SELECT ${expr}`)));

function select(text: string): SelectQuery {
  const q = parseDialect(text);
  if (q.kind !== 'select') throw new Error('expected a SELECT');
  return q;
}

function refusal(text: string): DialectSyntaxError {
  try {
    parseDialect(text);
  } catch (err) {
    if (err instanceof DialectSyntaxError) return err;
    throw err;
  }
  throw new Error(`parseDialect accepted ${JSON.stringify(text)}`);
}

t.test('operator precedence follows ClickHouse', (t) => {
  for (const [expr, expected] of PRECEDENCE) t.equal(tree(expr), expected, expr);
  t.end();
});

t.test('expression forms', (t) => {
  const cases: [string, string][] = [
    ['count()', '(call count)'],
    ['count(*)', '(call count *)'],
    ['count(DISTINCT person_id)', '(call count DISTINCT person_id)'],
    ['countIf(event = 1)', '(call countIf (= event 1))'],
    ['quantile(0.9)(x)', '(call quantile (params 0.9) x)'],
    ['windowFunnel(86400)(ts, a, b)', '(call windowFunnel (params 86400) ts a b)'],
    ['sum(x) OVER (PARTITION BY a)', '(call sum x over)'],
    ['arrayMap(x -> x + 1, arr)', '(call arrayMap (lambda (x) (+ x 1)) arr)'],
    ['arrayFilter((x, y) -> x > y, a, b)', '(call arrayFilter (lambda (x y) (> x y)) a b)'],
    ['[1, 2]', '(array 1 2)'],
    ['[1, 2,]', '(array 1 2)'],
    ['(1, 2)', '(tuple 1 2)'],
    ['(1,)', '(tuple 1)'],
    ['()', '(tuple)'],
    ['(((1)))', '1'],
    ['CASE WHEN a THEN 1 ELSE 2 END', '(case (when a 1) (else 2))'],
    ['CASE x WHEN 1 THEN a WHEN 2 THEN b END', '(case x (when 1 a) (when 2 b))'],
    ['INTERVAL 7 DAY', '(interval 7 day)'],
    ["INTERVAL '7 days'", '(interval 7 day)'],
    ["INTERVAL '7' DAY", "(interval '7' day)"],
    ['INTERVAL 2 WEEKS', '(interval 2 week)'],
    ['CAST(x AS Nullable(String))', '(cast x Nullable(String))'],
    ["x::DateTime64(6, 'UTC')", "(cast x DateTime64(6, 'UTC'))"],
    ['CAST(x AS Tuple(a String, b UInt8))', '(cast x Tuple(a String, b UInt8))'],
    ["CAST(x, 'String')", "(call CAST x 'String')"],
    ['properties.$browser', 'properties.$browser'],
    ['person.properties.email', 'person.properties.email'],
    ['e.`my prop`', 'e.my prop'],
    ['t.*', 't.*'],
    ['{variables.browser}', '{browser}'],
    ['{ variables.browser }', '{browser}'],
    ['NULL', 'NULL'],
    ['true', 'true'],
    ['Inf', 'inf'],
    ['(SELECT 1)', '(subquery)'],
    ['exists(SELECT 1)', '(call exists (subquery))'],
    ['x == 1', '(= x 1)'],
    ['x <> 1', '(!= x 1)'],
    ['left(s, 2)', '(call left s 2)'],
    ['and(a, b)', '(call and a b)'],
    ["format('{} {}', a, b)", "(call format '{} {}' a b)"],
    ['`not`(a)', '(call not a)'],
  ];
  for (const [expr, expected] of cases) t.equal(tree(expr), expected, expr);
  t.end();
});

t.test('what the resolver refuses arrives as nodes it can name', (t) => {
  t.same(stripPositions(select('SELECT * FROM system.tables').from?.table), {
    kind: 'table',
    database: 'system',
    name: 'tables',
    alias: null,
    final: false,
    sample: null,
  });
  const fn = select("SELECT * FROM url('http://x', CSV) AS u").from?.table;
  t.equal(fn?.kind, 'tableFunction');
  if (fn?.kind === 'tableFunction') {
    t.equal(fn.name, 'url');
    t.equal(fn.alias, 'u');
    t.same(stripPositions(fn.args), [
      { kind: 'string', value: 'http://x' },
      { kind: 'field', chain: ['CSV'] },
    ]);
  }
  t.equal(select("SELECT * FROM file('/etc/passwd')").from?.table.kind, 'tableFunction');
  t.equal(select('SELECT * FROM numbers(10)').from?.table.kind, 'tableFunction');
  t.equal(
    printDialect(parseDialect("SELECT * FROM url('http://x', CSV) AS u, system.tables")),
    "SELECT * FROM url('http://x', CSV) AS u CROSS JOIN system.tables",
    'they print back, for debug output',
  );
  t.end();
});

t.test('placeholders are nodes wherever an expression may stand, LIMIT included', (t) => {
  const q = select(
    'SELECT {variables.a} FROM events WHERE x = {variables.b} GROUP BY y HAVING n > {variables.c} LIMIT {variables.d} OFFSET {variables.e}',
  );
  t.same(stripPositions(q.limit), { kind: 'placeholder', name: 'd' });
  t.same(stripPositions(q.offset), { kind: 'placeholder', name: 'e' });
  t.same(stripPositions(q.columns[0]), { kind: 'placeholder', name: 'a' });
  t.match(q.limit?.pos, { line: 1, column: 100 });
  t.end();
});

t.test('normalisations make equal queries equal trees', (t) => {
  const same: [string, string][] = [
    ['SELECT a FROM t LIMIT 5, 10', 'SELECT a FROM t LIMIT 10 OFFSET 5'],
    ['SELECT a FROM t LEFT OUTER JOIN u ON 1', 'SELECT a FROM t LEFT JOIN u ON 1'],
    ['SELECT a FROM t, u', 'SELECT a FROM t CROSS JOIN u'],
    ['SELECT a FROM t JOIN u USING x', 'SELECT a FROM t INNER JOIN u USING (x)'],
    ['SELECT x::Int8', 'SELECT CAST(x AS Int8)'],
    ['SELECT a == b, a <> b, a MOD b', 'SELECT a = b, a != b, a % b'],
    ["SELECT INTERVAL '3 hours'", 'SELECT INTERVAL 3 HOUR'],
    ['SELECT count() c FROM t e', 'SELECT count() AS c FROM t AS e'],
    ['select a from t where b order by a asc', 'SELECT a FROM t WHERE b ORDER BY a'],
    ['SELECT 1;', 'SELECT 1'],
    ['(SELECT 1)', 'SELECT 1'],
    ['SELECT * FROM events FINAL AS e', 'SELECT * FROM events AS e FINAL'],
  ];
  for (const [a, b] of same) t.same(stripPositions(parseDialect(a)), stripPositions(parseDialect(b)), a);
  t.end();
});

t.test('queries: WITH, joins, UNION ALL and clauses land where the resolver looks', (t) => {
  const q = select(`
    WITH recent AS (SELECT person_id FROM events), 7 AS days, (SELECT 1) AS one
    SELECT DISTINCT e.event AS name, count()
    FROM events AS e
    ANY LEFT JOIN persons p ON p.id = e.person_id
    LEFT ARRAY JOIN e.arr AS item
    PREWHERE 1 WHERE 2
    GROUP BY name WITH ROLLUP WITH TOTALS
    HAVING 3
    WINDOW w AS (ORDER BY e.timestamp)
    ORDER BY name DESC NULLS FIRST
    LIMIT 2 BY name
    LIMIT 10`);
  t.same(
    q.with.map((w) => `${w.kind}:${w.name}`),
    ['withQuery:recent', 'withExpr:days', 'withExpr:one'],
  );
  t.equal(q.distinct, true);
  t.same(stripPositions(q.columns[0]), {
    kind: 'alias',
    alias: 'name',
    expr: { kind: 'field', chain: ['e', 'event'] },
  });
  t.same(
    q.from?.joins.map((j) =>
      j.kind === 'join' ? `${j.type}/${j.strictness}/${j.table.alias}` : `array/${j.left}`,
    ),
    ['left/any/p', 'array/true'],
  );
  t.equal(q.groupByModifier, 'rollup');
  t.equal(q.withTotals, true);
  t.same(
    q.window.map((w) => w.name),
    ['w'],
  );
  t.same(stripPositions(q.orderBy?.[0]), {
    kind: 'orderItem',
    expr: { kind: 'field', chain: ['name'] },
    descending: true,
    nulls: 'first',
  });
  t.same(stripPositions(q.limitBy?.by), [{ kind: 'field', chain: ['name'] }]);
  t.same(stripPositions(q.limit), { kind: 'number', text: '10' });

  const u: Query = parseDialect('SELECT 1 UNION ALL (SELECT 2 UNION ALL SELECT 3) UNION ALL SELECT 4');
  t.equal(u.kind, 'unionAll');
  if (u.kind === 'unionAll')
    t.same(
      u.queries.map((m) => m.kind),
      ['select', 'unionAll', 'select'],
    );
  t.end();
});

t.test('node positions point at where each node starts', (t) => {
  const q = select('SELECT\n  count() AS n,\n  a + b\nFROM events');
  t.match(q.pos, { start: 0, line: 1, column: 1 });
  t.match(q.columns[0]?.pos, { line: 2, column: 3 });
  t.match(q.columns[1]?.pos, { line: 3, column: 3, start: 25, end: 30 });
  t.match(q.from?.table.pos, { line: 4, column: 6 });
  t.end();
});

t.test('number values: exact beyond 2^53, hex, binary, underscores, inf and nan', (t) => {
  const value = (text: string): number | bigint => {
    const e = onlyColumn(parseDialect(`SELECT ${text}`));
    if (e.kind !== 'number') throw new Error('not a number');
    return numberValue(e);
  };
  t.equal(value('42'), 42);
  t.equal(value('18446744073709551615'), 18446744073709551615n);
  t.equal(value('0x1F'), 31);
  t.equal(value('0b101'), 5);
  t.equal(value('1_000'), 1000);
  t.equal(value('1.5e3'), 1500);
  t.equal(value('inf'), Infinity);
  t.ok(Number.isNaN(value('nan')));
  t.end();
});

t.test('nesting deeper than the limit fails cleanly, never with a stack overflow', (t) => {
  const cases = {
    parentheses: `SELECT ${'('.repeat(5000)}1${')'.repeat(5000)}`,
    arrays: `SELECT ${'['.repeat(5000)}1${']'.repeat(5000)}`,
    calls: `SELECT ${'f('.repeat(5000)}1${')'.repeat(5000)}`,
    subqueries: `${'SELECT * FROM ('.repeat(2000)}SELECT 1${')'.repeat(2000)}`,
    'NOT chain': `SELECT ${'NOT '.repeat(5000)}1`,
    'minus chain': `SELECT ${'- '.repeat(5000)}1`,
    'left-deep plus chain': `SELECT 1${' + 1'.repeat(5000)}`,
    'index chain': `SELECT a${'[1]'.repeat(5000)}`,
    'ternary chain': `SELECT ${'a ? b : '.repeat(5000)}c`,
    'unclosed parentheses': `SELECT ${'('.repeat(100000)}`,
  };
  for (const [name, text] of Object.entries(cases)) {
    const err = refusal(text);
    t.match(err.reason, `nests deeper than ${MAX_DEPTH} levels`, name);
  }
  t.doesNotThrow(() => parseDialect(`SELECT ${'('.repeat(200)}1${')'.repeat(200)}`), '200 levels are fine');
  t.doesNotThrow(() => parseDialect(`SELECT 1${' OR x'.repeat(20000)}`), 'a long flat OR is not deep');
  t.end();
});

t.test('a query longer than the limit is refused before it is read', (t) => {
  const err = refusal(`SELECT '${'x'.repeat(MAX_QUERY_LENGTH)}'`);
  t.match(err.reason, `the limit is ${MAX_QUERY_LENGTH}`);
  t.equal(err.line, 1);
  try {
    parseDialect('SELECT 12345', { maxLength: 5 });
    t.fail('the maxLength option was ignored');
  } catch (err) {
    t.match(err, { reason: 'the query is 12 characters long; the limit is 5' }, 'the limit is an option');
  }
  t.end();
});

t.test('an array may end in a comma, as HogQL allows; an empty one or two commas may not', (t) => {
  t.match(refusal('SELECT [,]').reason, "expected an expression after '['");
  t.match(refusal('SELECT [1,,]').reason, "expected an expression after ','");
  t.end();
});
