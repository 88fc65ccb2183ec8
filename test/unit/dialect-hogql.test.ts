/**
 * HogQL's syntax in the dialect: `??`, the regex operators, GROUPING SETS, names given inside expressions, a
 * position after a JSON property; and HogQL's function names as the resolver writes them.
 */
import t from 'tap';
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import type { SelectQuery } from '../../src/query/dialect/ast.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { hogqlCall } from '../../src/query/resolver/hogql-functions.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { onlyColumn, refusal, sexpr, stripPositions, syntaxError } from '../helpers/dialect-tree.ts';

const tree = (expr: string): string => sexpr(onlyColumn(parseDialect(`SELECT ${expr}`)));
const printed = (text: string): string => printDialect(parseDialect(text));

/** The printed ClickHouse SQL, each store table shown as <name>, without the run's settings and row cap. */
function sql(text: string): string {
  const resolved = resolveQuery(parseDialect(text));
  return printClickHouse(resolved, bindVariables(resolved.variables, {}), 1)
    .sql.replace(/\(SELECT [^()]*(?:\([^()]*\)[^()]*)* FROM default\.(\w+) [^]*?\) AS (\w+)/g, '<$1> AS $2')
    .replace(/ LIMIT 50001 SETTINGS .*$/, '');
}

t.test('?? is ifNull, looser than comparisons and IS NULL, tighter than NOT and AND', (t) => {
  const cases: [string, string][] = [
    ['a ?? b', '(call ifNull a b)'],
    ['a ?? b ?? c', '(call ifNull (call ifNull a b) c)'],
    ['a = 1 ?? b', '(call ifNull (= a 1) b)'],
    ['a ?? b = 1', '(call ifNull a (= b 1))'],
    ['a ?? b IS NULL', '(call ifNull a (isNull b))'],
    ['NOT a ?? b', '(not (call ifNull a b))'],
    ['a ?? b AND c', '(and (call ifNull a b) c)'],
    ['a + 1 ?? b * 2', '(call ifNull (+ a 1) (* b 2))'],
  ];
  for (const [expr, expected] of cases) t.equal(tree(expr), expected, expr);
  t.equal(printed('SELECT x ?? 0 FROM t'), 'SELECT ifNull(x, 0) FROM t');
  t.end();
});

t.test(
  'the regex operators parse as comparisons and reach ClickHouse as match, NOT match and a case-insensitive pattern',
  (t) => {
    const cases: [string, string][] = [
      ["a =~ 'x'", "(regex a 'x')"],
      ["a ~ 'x'", "(regex a 'x')"],
      ["a !~ 'x'", "(notRegex a 'x')"],
      ["a =~* 'x'", "(iRegex a 'x')"],
      ["a ~* 'x'", "(iRegex a 'x')"],
      ["a !~* 'x'", "(notIRegex a 'x')"],
      ["a || 'b' =~ 'x' AND c", "(and (regex (|| a 'b') 'x') c)"],
      ["a =~ 'x' = 1", "(= (regex a 'x') 1)"],
    ];
    for (const [expr, expected] of cases) t.equal(tree(expr), expected, expr);
    t.equal(printed("SELECT a !~* 'x' FROM t"), "SELECT a !~* 'x' FROM t");
    t.match(
      sql("SELECT event !~* 'x' FROM events"),
      /SELECT NOT match\(event, concat\('\(\?i\)', 'x'\)\) FROM/,
    );
    // NULL as a comparison has it (HogQL): a missing property matches nothing, and does not-match.
    t.match(sql("SELECT properties.a =~ 'x' FROM events"), /ifNull\(match\(.*\), 0\)/);
    t.match(sql("SELECT properties.a !~ 'x' FROM events"), /ifNull\(NOT match\(.*\), 1\)/);
    t.equal(syntaxError('SELECT a =~ FROM t'), "expected an expression after '=~', found 'FROM' @1:13");
    t.equal(syntaxError('SELECT a ?? FROM t'), "expected an expression after '??', found 'FROM' @1:13");
    t.end();
  },
);

t.test('GROUP BY GROUPING SETS: one tuple per set, printed back as sets', (t) => {
  const q = parseDialect(
    'SELECT a, b, count() FROM t GROUP BY GROUPING SETS ((a), (a, b), (), b)',
  ) as SelectQuery;
  t.equal(q.groupByModifier, 'groupingSets');
  t.same(
    q.groupBy!.map((e) => sexpr(e)),
    ['(tuple a)', '(tuple a b)', '(tuple)', '(tuple b)'],
  );
  t.equal(printDialect(q), 'SELECT a, b, count() FROM t GROUP BY GROUPING SETS ((a), (a, b), (), (b))');
  t.same(stripPositions(parseDialect(printDialect(q))), stripPositions(q));
  t.equal(
    syntaxError('SELECT a FROM t GROUP BY GROUPING SETS ((a)) WITH ROLLUP'),
    'GROUPING SETS takes no WITH ROLLUP: list the sets it would make @1:51',
  );
  t.equal(
    syntaxError('SELECT a FROM t GROUP BY GROUPING SETS a'),
    "expected '(' after GROUPING SETS, found 'a' @1:40",
  );
  t.equal(
    sql('SELECT event, count() FROM events GROUP BY GROUPING SETS ((event), ())'),
    'SELECT event, count() FROM <events> AS events GROUP BY GROUPING SETS ((event), ())',
  );
  t.match(
    refusal('SELECT count() FROM events GROUP BY GROUPING SETS ((nope))'),
    /^unknown column 'nope'/,
    'names in a set are resolved like any other',
  );
  t.end();
});

t.test('a name given inside an expression: parsed, printed in parentheses, usable in the SELECT', (t) => {
  t.equal(tree('(sumMap(k, v) AS x).1'), '(. (as (call sumMap k v) x) 1)');
  t.equal(tree('(a + 1 AS b) * 2'), '(* (as (+ a 1) b) 2)');
  t.equal(tree('f(a AS b, c)'), '(call f (as a b) c)');
  t.equal(tree('(a AS x, b AS y)'), '(tuple (as a x) (as b y))');
  t.equal(printed('SELECT (a + 1 AS b) * 2, b FROM t'), 'SELECT (a + 1 AS b) * 2, b FROM t');
  // A column `(a AS b)` is the column `a AS b`.
  t.same(
    stripPositions(parseDialect('SELECT (a AS b) FROM t')),
    stripPositions(parseDialect('SELECT a AS b FROM t')),
  );
  t.equal(
    sql('SELECT (count() + 1 AS n) * 2, n FROM events HAVING n > 1 ORDER BY n'),
    'SELECT (count() + 1 AS n) * 2, n FROM <events> AS events HAVING n > 1 ORDER BY n',
  );
  t.equal(
    sql("SELECT event FROM events WHERE (lower(event) AS l) = 'x' OR l = 'y'"),
    "SELECT event FROM <events> AS events WHERE (lower(event) AS l) = 'x' OR l = 'y'",
  );
  t.match(
    refusal('SELECT n FROM (SELECT (count() AS n) FROM events) WHERE (SELECT n) = 1'),
    /^unknown column 'n'/,
    'a name given in a query is not seen by a query nested in it',
  );
  t.end();
});

t.test('a number after a JSON property reads an array element, 1-based', (t) => {
  t.equal(
    sql(
      'SELECT properties.arr.1, properties.arr[2], properties.arr.1.name, person.properties.tags.2 FROM events',
    ),
    "SELECT JSONExtract(properties, 'arr', 1, 'Nullable(String)'), JSONExtract(properties, 'arr', 2, 'Nullable(String)'), " +
      "JSONExtract(properties, 'arr', 1, 'name', 'Nullable(String)'), JSONExtract(person_properties, 'tags', 2, 'Nullable(String)') FROM <events> AS events",
  );
  t.end();
});

t.test("HogQL's function names become the calls HogQL prints", (t) => {
  const cases: [string, string][] = [
    ["toInt('1')", "accurateCastOrNull('1', 'Int64')"],
    ["toFloat('1')", "accurateCastOrNull('1', 'Float64')"],
    ["toUUID('1')", "accurateCastOrNull('1', 'UUID')"],
    ["toDecimal('1.5', 2)", "accurateCastOrNull('1.5', 'Decimal64(2)')"],
    ["toIntOrZero('1')", "toInt64OrZero('1')"],
    ["toDate('2026-01-01')", "toDateOrNull('2026-01-01')"],
    ['toDate(timestamp)', 'toDate(timestamp)'],
    ['toDate(properties.d)', "toDateOrNull(JSONExtract(properties, 'd', 'Nullable(String)'))"],
    ["to_date('2026-01-01')", "toDateOrNull('2026-01-01')"],
    ["toDateTime('2026-01-01 10:00')", "parseDateTime64BestEffortOrNull('2026-01-01 10:00')"],
    ['toDateTime(1700000000)', 'toDateTime(1700000000)'],
    ["toDateTime(timestamp, 'UTC')", "toDateTime(timestamp, 'UTC')"],
    ["left('abc', 2)", "leftUTF8('abc', 2)"],
    ['isEmpty(event)', 'empty(event)'],
    ['sparkline([1, 2])', "('__hx_tag', 'Sparkline', 'data', [1, 2])"],
    ["sparkline([1], ['a'])", "('__hx_tag', 'Sparkline', 'data', [1], 'labels', ['a'])"],
    ["split_part('a.b', '.', 2)", "arrayElement(splitByString('.', 'a.b'), 2)"],
    ["date_part('month', timestamp)", 'toMonth(timestamp)'],
    ["timezone('UTC', timestamp)", "toTimeZone(timestamp, 'UTC')"],
    ['date_bin(INTERVAL 1 DAY, timestamp, now())', 'toStartOfInterval(timestamp, INTERVAL 1 DAY, now())'],
    ["md5('a')", "hex(MD5('a'))"],
    ['every(1)', 'toBool(min(1))'],
    ["string_agg(event, ',')", "arrayStringConcat(groupArray(event), ',')"],
    ['json_agg(event)', 'toJSONString(groupArray(event))'],
    ['avgArray([1])', 'avgArrayOrNull([1])'],
    ["dateName('month', timestamp)", "dateName('month', timestamp)"],
  ];
  for (const [expr, expected] of cases) {
    t.equal(sql(`SELECT ${expr} FROM events`), `SELECT ${expected} FROM <events> AS events`, expr);
  }
  t.equal(
    sql('SELECT lag(event) OVER (ORDER BY timestamp) FROM events'),
    'SELECT lagInFrame(toNullable(event)) OVER (ORDER BY timestamp ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM <events> AS events',
  );
  t.end();
});

t.test('HogQL names Weir refuses say why; the rewrites keep the safety rules', (t) => {
  t.match(
    refusal("SELECT matchesAction('a')"),
    /^function 'matchesAction' is not allowed: it is one of PostHog’s own/,
  );
  t.match(refusal('SELECT aggregate_funnel(1, 2, 3, 4, 5, 6, 7)'), /user-defined function of PostHog/);
  t.match(refusal('SELECT uniqTheta(1)'), /built without DataSketches/);
  t.match(refusal('SELECT toInt(1, 2)'), /^'toInt' takes 1 argument, not 2/);
  t.match(refusal("SELECT toDecimal('1', x)"), /scale from 0 to 18/);
  t.match(refusal("SELECT string_agg(DISTINCT x, ',')"), /takes no parameters, DISTINCT or OVER/);
  t.match(
    refusal("SELECT arrayReduce('aggThrow', [1])"),
    /'aggThrow' is not an aggregate function a query may call/,
  );
  t.match(
    refusal("SELECT arrayReduce(concat('s', 'um'), [1])"),
    /takes the aggregate function's name as a string/,
  );
  t.equal(refusal("SELECT arrayReduce('quantile(0.5)', [1, 2])"), 'accepted');
  // What a rewrite writes is checked like anything else: a form never reaches a function the list refuses.
  t.match(refusal('SELECT toInt(throwIf(1))'), /'throwIf' is not allowed/);
  t.match(refusal('SELECT sparkline((SELECT name FROM system.tables))'), /not reachable/);
  t.end();
});

t.test('hogqlCall leaves any other call as it is', (t) => {
  const call = onlyColumn(parseDialect('SELECT count(DISTINCT x)'));
  if (call.kind !== 'call') throw new Error('expected a call');
  t.equal(hogqlCall(call), call);
  t.end();
});
