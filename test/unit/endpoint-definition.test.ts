/**
 * What an endpoint version is checked against when it is made: the query compiles, its declared variables
 * are placeholders of the tree (never found by text), and whether it could be materialized, with a reason.
 */
import t from 'tap';
import { parseDialect } from '../../src/query/dialect/mod.ts';
import { checkDefinition } from '../../src/query/endpoints/definition.ts';
import { analyseMaterialization } from '../../src/query/compile/materializable.ts';

const hogql = (query: string) => ({ kind: 'HogQLQuery' as const, query });

t.test('placeholders come from the tree, in order of first use', (t) => {
  const checked = checkDefinition(
    hogql(
      `SELECT '{variables.not_one}' AS s /* {variables.nor_this} */ FROM events
       WHERE event = {variables.event} AND properties.$browser = {variables.browser} AND event != {variables.event}`,
    ),
    { browser: { type: 'string' } },
  );
  t.same(checked.placeholders, ['event', 'browser']);
  t.end();
});

t.test('a declared variable the query does not use is refused, naming it', (t) => {
  t.throws(() => checkDefinition(hogql("SELECT '{variables.x}' FROM events"), { x: { type: 'string' } }), {
    code: 'invalid_variables',
    status: 400,
    attr: 'variables.x',
    message: /'x'.*no variables/,
  });
  t.end();
});

t.test("a query that does not parse or resolve is refused with the parser's or resolver's message", (t) => {
  t.throws(() => checkDefinition(hogql('SELECT FROM WHERE'), {}), {
    code: 'invalid_query',
    attr: 'query',
    message: /^Syntax error: .*line 1/,
  });
  t.throws(() => checkDefinition(hogql('SELECT nope FROM events'), {}), {
    code: 'invalid_query',
    message: /nope/,
  });
  t.throws(() => checkDefinition(hogql('SELECT * FROM system.tables'), {}), { code: 'invalid_query' });
  t.end();
});

t.test('materialization: each variable a WHERE filter under AND with = >= > < <=', (t) => {
  const can = (sql: string) => analyseMaterialization(parseDialect(sql));
  t.same(can('SELECT count() FROM events'), { canMaterialize: true, reason: null });
  t.same(
    can(
      `SELECT event, count() FROM events WHERE event = {variables.e} AND timestamp >= {variables.from}
       AND {variables.to} > timestamp AND properties.x = 'y' GROUP BY event`,
    ),
    { canMaterialize: true, reason: null },
    'several variables, a range on one column, the variable on either side',
  );
  const reasons: [string, RegExp][] = [
    ['SELECT 1 FROM events WHERE event LIKE {variables.e}', /LIKE/],
    ["SELECT 1 FROM events WHERE event = {variables.e} OR event = 'x'", /OR/],
    ['SELECT 1 FROM events WHERE NOT event = {variables.e}', /NOT/],
    ['SELECT 1 FROM events WHERE event IN {variables.e}', /IN/],
    ['SELECT {variables.e} FROM events', /WHERE clause of the outer query/],
    [
      'SELECT event FROM events GROUP BY event HAVING count() > {variables.n}',
      /WHERE clause of the outer query/,
    ],
    [
      'SELECT * FROM (SELECT event FROM events WHERE event = {variables.e})',
      /WHERE clause of the outer query/,
    ],
    ['SELECT 1 FROM events WHERE timestamp >= {variables.d} - INTERVAL 1 DAY', /as a whole/],
    ['SELECT 1 FROM events WHERE event = lower({variables.e})', /as a whole/],
    ['SELECT 1 FROM events WHERE timestamp BETWEEN {variables.a} AND {variables.b}', /=, >=, >, < or <=/],
    ['SELECT 1 FROM events WHERE event = {variables.e} UNION ALL SELECT 2 FROM events', /UNION ALL/],
  ];
  for (const [sql, reason] of reasons) {
    const result = can(sql);
    t.equal(result.canMaterialize, false, sql);
    t.match(result.reason, reason, sql);
  }
  t.end();
});
