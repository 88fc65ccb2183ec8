import t from 'tap';
import type { Expr, Query } from '../../src/query/dialect/ast.ts';
import { tokenize } from '../../src/query/dialect/lexer.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import {
  literal,
  printDialect,
  printDialectExpr,
  quoteName,
  quoteString,
  type InlineValue,
} from '../../src/query/dialect/print-dialect.ts';
import { onlyColumn, stripPositions } from '../helpers/dialect-tree.ts';

const reprint = (text: string): string => printDialect(parseDialect(text));

t.test('canonical form: upper-case keywords, one line, parentheses only where needed', (t) => {
  t.equal(
    reprint('select a  as x,b from   t where (a=1 and (b=2)) or not c order by x desc limit 1,2'),
    'SELECT a AS x, b FROM t WHERE a = 1 AND b = 2 OR NOT c ORDER BY x DESC LIMIT 2 OFFSET 1',
  );
  t.equal(
    reprint('SELECT (a + b) * c, a - (b - c), (a AND b) AND c'),
    'SELECT (a + b) * c, a - (b - c), (a AND b) AND c',
  );
  t.equal(
    reprint('SELECT -(-a), - - 1, -(1 + 2)'),
    'SELECT -(-a), -(-1), -(1 + 2)',
    'never prints -- (a comment)',
  );
  t.equal(
    reprint('SELECT a ? b : (c ? d : e)'),
    'SELECT a ? b : (c ? d : e)',
    'nested ternaries keep parentheses',
  );
  t.equal(reprint('SELECT (1).1, (a).b, a.b, (1, 2).1'), 'SELECT (1).1, (a).b, a.b, (1, 2).1');
  t.equal(reprint('SELECT x::Int8, CAST(y AS String)'), 'SELECT CAST(x AS Int8), CAST(y AS String)');
  t.end();
});

t.test("'all' parentheses show how the query was read and read back the same", (t) => {
  const text = 'SELECT a OR b AND NOT c = d + e * -f, x BETWEEN 1 AND 2 AND y IS NULL';
  const printed = printDialect(parseDialect(text), { parentheses: 'all' });
  t.equal(printed, 'SELECT a OR (b AND (NOT (c = (d + (e * (-f)))))), (x BETWEEN 1 AND 2) AND (y IS NULL)');
  t.same(stripPositions(parseDialect(printed)), stripPositions(parseDialect(text)));
  t.end();
});

t.test('names are quoted only when bare they would read as something else', (t) => {
  t.equal(quoteName('event'), 'event');
  t.equal(quoteName('$browser'), '$browser');
  t.equal(quoteName('from'), '`from`');
  t.equal(quoteName('NULL'), '`NULL`');
  t.equal(quoteName('my prop'), '`my prop`');
  t.equal(quoteName('a`b\\c'), '`a\\`b\\\\c`');
  t.equal(quoteName('1st'), '`1st`');
  t.equal(
    reprint('SELECT `from`.`select`, properties.`my prop`, `1`.x FROM t'),
    'SELECT `from`.select, properties.`my prop`, `1`.x FROM t',
  );
  t.equal(
    reprint('SELECT `not`(1), `case`(2), left(s, 1), and(a, b)'),
    'SELECT `not`(1), `case`(2), left(s, 1), and(a, b)',
  );
  t.end();
});

t.test('string literals escape what must be escaped and read back as the same value', (t) => {
  t.equal(quoteString("it's \\ \n\t\r\0 \x01 \x7f é 😀"), "'it\\'s \\\\ \\n\\t\\r\\0 \\x01 \\x7F é 😀'");
  let seed = 7;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648);
  const alphabet = [
    "'",
    '"',
    '`',
    '\\',
    '\n',
    '\r',
    '\t',
    '\0',
    '\x1b',
    'a',
    ' ',
    'é',
    '😀',
    '\u2028',
    '{',
    '-',
  ];
  for (let i = 0; i < 500; i++) {
    let s = '';
    const n = Math.floor(random() * 12);
    for (let j = 0; j < n; j++) s += alphabet[Math.floor(random() * alphabet.length)];
    const tokens = tokenize(quoteString(s));
    // The value goes in the message escaped: a raw U+2028 would break the TAP stream.
    const label = JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
    if (tokens.length !== 2 || tokens[0]?.value !== s) t.fail(`${label} reads back as itself`);
  }
  t.pass('500 random strings read back as themselves');
  t.end();
});

t.test('inlined values print as escaped literals that parse back to the same values', (t) => {
  const values = {
    s: "O'Brien \\ 😀",
    n: 42,
    neg: -5,
    f: 0.25,
    big: 18446744073709551615n,
    inf: Infinity,
    ninf: -Infinity,
    nan: NaN,
    yes: true,
    nothing: null,
    list: ['a', "b'c"],
    nums: [1, -2],
  } satisfies Record<string, InlineValue>;
  t.equal(literal(values.s), "'O\\'Brien \\\\ 😀'");
  t.equal(literal(values.big), '18446744073709551615');
  t.equal(literal(values.ninf), '-inf');
  t.equal(literal(values.list), "['a', 'b\\'c']");
  const q = parseDialect(
    'SELECT {variables.s}, {variables.n}, -{variables.neg}, {variables.neg}[1], {variables.n}.1, x - {variables.neg}, ' +
      '{variables.f}, {variables.big}, {variables.inf}, {variables.ninf}, {variables.nan}, {variables.yes}, ' +
      '{variables.nothing}, {variables.list}, {variables.nums}, {variables.missing}',
  );
  const printed = printDialect(q, { inline: values });
  t.equal(
    printed,
    "SELECT 'O\\'Brien \\\\ 😀', 42, -(-5), (-5)[1], (42).1, x - -5, 0.25, 18446744073709551615, inf, -inf, nan, true, " +
      "NULL, ['a', 'b\\'c'], [1, -2], {variables.missing}",
    'a placeholder without a value prints as written',
  );
  const columns = (parseDialect(printed) as Query & { kind: 'select' }).columns;
  t.same(stripPositions(columns[0]), { kind: 'string', value: values.s });
  t.same(stripPositions(columns[2]), {
    kind: 'negate',
    operand: { kind: 'negate', operand: { kind: 'number', text: '5' } },
  });
  t.end();
});

t.test('nodes built by code, without positions, print too', (t) => {
  const expr: Expr = {
    kind: 'and',
    operands: [
      {
        kind: 'binary',
        op: '=',
        left: { kind: 'field', chain: ['event'] },
        right: { kind: 'placeholder', name: 'e' },
      },
      { kind: 'or', operands: [{ kind: 'boolean', value: true }, { kind: 'null' }] },
      { kind: 'tuple', items: [{ kind: 'number', text: '1' }] },
    ],
  };
  t.equal(printDialectExpr(expr), 'event = {variables.e} AND (true OR NULL) AND (1,)');
  t.equal(printDialectExpr(expr, { inline: { e: 'x' } }), "event = 'x' AND (true OR NULL) AND (1,)");
  t.equal(printDialectExpr(onlyColumn(parseDialect('SELECT 1 + 2'))), '1 + 2');
  t.end();
});
