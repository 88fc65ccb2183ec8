/**
 * The HogQL grammar PostHog's parser accepts beyond ClickHouse's (issue 42): set operators, LIMIT WITH TIES,
 * SAMPLE, INNER ARRAY JOIN, trim(LEADING … FROM …), `final` as a CTE's name, `?.`, object literals,
 * f-strings, `{filters…}` placeholders and HogQLX tags (and `<HogQLQuery />` in FROM). Each: the tree it
 * parses to, the text it prints back as (which parses to the same tree), and what the resolver sends on.
 */
import t, { type Test } from 'tap';
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { onlyColumn, refusal, sexpr, stripPositions, syntaxError } from '../helpers/dialect-tree.ts';

const tree = (expr: string): string => sexpr(onlyColumn(parseDialect(`SELECT ${expr}`)));

/** Printed, and the printed text parses back to the same tree. */
function roundTrip(t: Test, text: string): string {
  const parsed = parseDialect(text);
  const printed = printDialect(parsed);
  t.same(stripPositions(parseDialect(printed)), stripPositions(parsed), `${text} reads back from ${printed}`);
  return printed;
}

function sql(text: string): string {
  const resolved = resolveQuery(parseDialect(text));
  return printClickHouse(resolved, bindVariables(resolved.variables, {}), 1).sql.replace(/ SETTINGS .*$/, '');
}

t.test('set operators: UNION [DISTINCT] and INTERSECT [DISTINCT], EXCEPT, kept in the order written', (t) => {
  const q = parseDialect('SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 3 INTERSECT SELECT 4 UNION SELECT 5');
  t.equal(q.kind, 'setOperation');
  if (q.kind === 'setOperation') {
    t.same(q.operators, ['UNION ALL', 'EXCEPT', 'INTERSECT', 'UNION DISTINCT']);
    t.equal(q.queries.length, 5);
  }
  t.equal(parseDialect('SELECT 1 UNION ALL SELECT 2').kind, 'unionAll', 'UNION ALL alone stays a unionAll');
  t.equal(
    roundTrip(t, 'SELECT 1 INTERSECT DISTINCT (SELECT 1 UNION DISTINCT SELECT 2)'),
    'SELECT 1 INTERSECT DISTINCT (SELECT 1 UNION DISTINCT SELECT 2)',
  );
  t.equal(syntaxError('SELECT 1 EXCEPT DISTINCT SELECT 2'), 'EXCEPT takes no DISTINCT: write EXCEPT @1:17');
  // The row cap goes around the whole: capping members would change what EXCEPT leaves.
  t.match(sql('SELECT 1 EXCEPT SELECT 2'), /^SELECT \* FROM \(SELECT 1 EXCEPT SELECT 2\) LIMIT \d+$/);
  t.end();
});

t.test('LIMIT … WITH TIES, also before OFFSET as HogQL writes it', (t) => {
  const q = parseDialect('SELECT a FROM t ORDER BY a LIMIT 5 WITH TIES OFFSET 2');
  t.ok(q.kind === 'select' && q.limitWithTies);
  t.equal(
    roundTrip(t, 'SELECT a FROM t ORDER BY a LIMIT 5 WITH TIES'),
    'SELECT a FROM t ORDER BY a LIMIT 5 WITH TIES',
  );
  t.equal(printDialect(q), 'SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 2 WITH TIES');
  t.end();
});

t.test('SAMPLE: a share of the distinct ids of events, SAMPLE 1 anywhere reads all', (t) => {
  const q = parseDialect('SELECT count() FROM events AS e SAMPLE 1/10 OFFSET 1/2');
  const table = q.kind === 'select' ? q.from?.table : undefined;
  t.equal(table?.kind === 'table' && table.sample?.kind, 'sample');
  t.equal(roundTrip(t, 'SELECT count() FROM events SAMPLE 0.1'), 'SELECT count() FROM events SAMPLE 0.1');
  t.match(
    sql('SELECT count() FROM events SAMPLE 0.25'),
    /cityHash64\(distinct_id\) \/ 18446744073709551616 < 0\.25/,
  );
  t.match(sql('SELECT count() FROM events SAMPLE 1/2 OFFSET 1/2'), />= 0\.5 AND .* < 0\.5 \+ 0\.5/);
  t.match(sql('SELECT count() FROM events SAMPLE 1000'), /< 1000 \/ \(SELECT count\(\) FROM/);
  t.notMatch(sql('SELECT count() FROM persons SAMPLE 1'), /cityHash64/);
  t.match(sql('SELECT count() FROM persons SAMPLE 0.1'), /cityHash64\(id\)/, 'persons sample by their id');
  t.match(refusal('SELECT count() FROM sessions SAMPLE 0.1'), /'sessions' cannot be sampled/);
  t.equal(syntaxError('SELECT 1 FROM events SAMPLE x'), "expected a number after SAMPLE, found 'x' @1:29");
  t.end();
});

t.test(
  'INNER ARRAY JOIN is ARRAY JOIN; trim(LEADING|TRAILING|BOTH x FROM y) is the call HogQL makes',
  (t) => {
    t.equal(roundTrip(t, 'SELECT x FROM t INNER ARRAY JOIN arr AS x'), 'SELECT x FROM t ARRAY JOIN arr AS x');
    t.equal(tree("trim(LEADING 'x' FROM s)"), "(call trimLeft s 'x')");
    t.equal(tree("trim(TRAILING 'x' FROM s)"), "(call trimRight s 'x')");
    t.equal(tree("trim(BOTH 'x' FROM s)"), "(call trim s 'x')");
    t.equal(tree('trim(leading)'), '(call trim leading)', 'a column called leading is still an argument');
    t.end();
  },
);

t.test('`final` names a CTE where a table stands; FINAL after a table is still the modifier', (t) => {
  const q = parseDialect('WITH final AS (SELECT 1 AS a) SELECT a FROM final');
  const table = q.kind === 'select' ? q.from?.table : undefined;
  t.ok(table?.kind === 'table' && table.name === 'final' && !table.final);
  const f = parseDialect('SELECT 1 FROM events FINAL');
  t.ok(f.kind === 'select' && f.from?.table.kind === 'table' && f.from.table.final);
  roundTrip(t, 'WITH final AS (SELECT 1 AS a) SELECT a FROM final');
  t.end();
});

t.test('?. reads a key or an element, as an index', (t) => {
  t.equal(tree('properties?.$browser'), "([] properties '$browser')");
  t.equal(tree('a?.b?.c'), "([] ([] a 'b') 'c')");
  t.equal(tree('arr?.[1]'), '([] arr 1)');
  t.equal(tree('x ? y : z'), '(? x y z)', 'a ternary is still a ternary');
  t.end();
});

t.test('object literals {key: value} become the tuple HogQL sends', (t) => {
  t.equal(tree("{'k': 1, 'b': [1, 2]}"), "(dict 'k' 1 'b' (array 1 2))");
  t.equal(tree('{}'), '(dict)');
  roundTrip(t, "SELECT {'k': 1, 'b': [1, 2]}");
  t.equal(sql("SELECT {'k': [1, 2]}"), "SELECT ('__hx_tag', '__hx_obj', 'k', (1, 2)) LIMIT 50001");
  t.equal(syntaxError('SELECT {vars.x}'), "expected a placeholder like {variables.name}, found 'vars' @1:9");
  t.end();
});

t.test("f-strings are the concatenation of their parts, with \\ and '' escapes", (t) => {
  t.equal(tree("f'a {b} c'"), "(call concat 'a ' b ' c')");
  t.equal(tree("f'it''s \\{ {1}'"), "(call concat 'it's { ' 1)");
  t.equal(tree("f'{x}'"), 'x', 'one part alone is itself');
  t.equal(tree("f''"), "''");
  t.equal(tree("f'{ {'k': 1} }'"), "(dict 'k' 1)", 'braces inside an expression are its own');
  t.match(syntaxError("SELECT f'abc"), /^unterminated f-string/);
  roundTrip(t, "SELECT f'a {b} c'");
  t.end();
});

t.test('{filters}: true with no filters; a date-range bound makes its comparison true', (t) => {
  t.equal(tree('{filters}'), 'true');
  t.equal(
    sexpr(
      (
        parseDialect('SELECT 1 FROM events WHERE timestamp >= {filters.dateRange.from} AND x') as never as {
          where: never;
        }
      ).where,
    ),
    '(and true x)',
  );
  t.match(
    syntaxError('SELECT toDate({filters.dateRange.to})'),
    /^\{filters\.dateRange\.to\} must stand directly in a comparison/,
  );
  t.match(syntaxError('SELECT {filters.interval}'), /^\{filters\.interval\} is not a filters placeholder/);
  t.end();
});

t.test(
  'HogQLX tags: attributes, text and {expression} children, nested tags; PostHog’s tuple to ClickHouse',
  (t) => {
    t.equal(
      tree("<a href='https://x' target={t} disabled>Click {event} <em>now</em></a>"),
      "(<a> href 'https://x' target t disabled true children 'Click ' event ' ' (<em> children 'now'))",
    );
    t.equal(tree('<Sparkline data={[1, 2]} />'), '(<Sparkline> data (array 1 2))');
    t.equal(tree("<span>it's a > b / c</span>"), "(<span> children 'it's a > b / c')", 'text is raw');
    t.equal(
      tree('<span>\n  <em>x</em>\n</span>'),
      "(<span> children (<em> children 'x'))",
      'layout is dropped',
    );
    t.equal(tree('<em></em>'), '(<em>)');
    t.equal(tree('a<b'), '(< a b)', "after a name, '<' compares");
    t.equal(tree('(<b>x</b>)'), "(<b> children 'x')", 'where an operand starts, it opens a tag');
    t.match(syntaxError('SELECT <a>x</b>'), /the tag <a> is closed by <\/b>/);
    t.match(syntaxError('SELECT <a>x'), /unterminated HogQLX tag/);
    roundTrip(t, "SELECT <a href='https://x' target={t}>Click {event} <em>now</em></a>");
    t.equal(
      sql("SELECT <a href='x'>{1}</a>, <Sparkline data={[1, 2]} />"),
      "SELECT ('__hx_tag', 'a', 'href', 'x', 'children', (1,)), ('__hx_tag', 'Sparkline', 'data', (1, 2)) LIMIT 50001",
    );
    t.match(refusal('SELECT <script>x</script>'), /<script> is not a HogQLX tag Weir renders/);
    t.end();
  },
);

t.test('<HogQLQuery query="…" /> in FROM is its query, as a subquery', (t) => {
  const q = parseDialect("SELECT count() FROM <HogQLQuery query='SELECT event FROM events' /> AS q");
  const table = q.kind === 'select' ? q.from?.table : undefined;
  t.equal(table?.kind, 'tableSubquery');
  t.equal(table?.alias, 'q');
  t.equal(parseDialect("SELECT 1 FROM (<HogQLQuery query='SELECT 1' />)").kind, 'select');
  t.match(
    syntaxError("SELECT 1 FROM <HogQLQuery query='SELEC 1' />"),
    /^in the query of <HogQLQuery \/>: expected SELECT/,
  );
  t.match(syntaxError("SELECT 1 FROM <Sparkline data='x' />"), /<Sparkline> cannot be a table/);
  t.end();
});
