/**
 * Queries built from constant text with AST holes (src/query/insights/template.ts): each kind of hole lands
 * where it should, user values stay values, and names are only Weir's plain identifiers.
 */
import t from 'tap';
import { printDialect, printDialectExpr } from '../../src/query/dialect/mod.ts';
import { and, num, sql, str } from '../../src/query/insights/template.ts';

t.test('an expression hole is a node, never text', (t) => {
  const hostile = str("x' OR 1 = 1 --");
  const q = sql.query`SELECT count() FROM events WHERE event = ${hostile}`;
  t.equal(printDialect(q), "SELECT count() FROM events WHERE event = 'x\\' OR 1 = 1 --'");
  const where = q.kind === 'select' ? q.where : null;
  t.match(where, { kind: 'binary', op: '=', right: { kind: 'string', value: "x' OR 1 = 1 --" } });
  t.end();
});

t.test(
  'a query hole is a table after FROM or JOIN, a subquery elsewhere, an expression after ARRAY JOIN',
  (t) => {
    const inner = sql.query`SELECT 1 AS x`;
    t.equal(
      printDialect(sql.query`SELECT x FROM ${inner} AS a LEFT JOIN ${inner} AS b ON a.x = b.x`),
      'SELECT x FROM (SELECT 1 AS x) AS a LEFT JOIN (SELECT 1 AS x) AS b ON a.x = b.x',
    );
    t.equal(printDialect(sql.query`SELECT 2 IN ${inner}`), 'SELECT 2 IN (SELECT 1 AS x)');
    t.equal(
      printDialect(sql.query`SELECT y FROM events ARRAY JOIN ${sql.expr`[1, 2]`} AS y`),
      'SELECT y FROM events ARRAY JOIN [1, 2] AS y',
    );
    t.end();
  },
);

t.test('a list hole is spliced into its list; an empty one leaves no clause', (t) => {
  const cols = [sql.expr`a`, sql.expr`b`];
  t.equal(
    printDialect(sql.query`SELECT ${cols}, c FROM events GROUP BY ${cols} ORDER BY ${[]}`),
    'SELECT a, b, c FROM events GROUP BY a, b',
  );
  t.equal(printDialectExpr(sql.expr`f(${[num(1), num(-2)]})`), 'f(1, -2)');
  t.end();
});

t.test('names are plain identifiers of Weir’s own; anything else is refused', (t) => {
  t.equal(printDialect(sql.query`SELECT 1 AS ${sql.name('one')}`), 'SELECT 1 AS one');
  t.throws(() => sql.query`SELECT 1 AS ${sql.name('x; DROP')}`, /not a plain name/);
  t.end();
});

t.test('a template is parsed once and each use is a fresh tree', (t) => {
  const make = (n: number) => sql.expr`${num(n)} + 1`;
  const a = make(1);
  const b = make(2);
  t.equal(printDialectExpr(a), '1 + 1');
  t.equal(printDialectExpr(b), '2 + 1');
  t.not(a, b);
  t.equal(printDialectExpr(and()), 'true');
  t.end();
});
