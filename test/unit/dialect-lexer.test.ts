import t from 'tap';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { tokenize } from '../../src/query/dialect/lexer.ts';
import type { Token } from '../../src/query/dialect/tokens.ts';

const kinds = (text: string): string[] =>
  tokenize(text)
    .filter((tok) => tok.type !== 'eof')
    .map((tok) => `${tok.type}:${tok.value}`);

function lexError(text: string): DialectSyntaxError {
  try {
    tokenize(text);
  } catch (err) {
    if (err instanceof DialectSyntaxError) return err;
    throw err;
  }
  throw new Error(`tokenize accepted ${JSON.stringify(text)}`);
}

t.test('every token carries its offset, 1-based line and column, and end', (t) => {
  const tokens = tokenize('SELECT a,\n  b\r\nFROM t');
  const at = (tok: Token): string => `${tok.value}@${tok.offset}:${tok.line}:${tok.column}-${tok.end}`;
  t.same(tokens.map(at), [
    'SELECT@0:1:1-6',
    'a@7:1:8-8',
    ',@8:1:9-9',
    'b@12:2:3-13',
    'FROM@15:3:1-19',
    't@20:3:6-21',
    '@21:3:7-21',
  ]);
  t.end();
});

t.test('a one-character operator at the very end of the text is one character long', (t) => {
  t.same(
    tokenize('f(x)').map((tok) => `${tok.value}@${tok.offset}-${tok.end}`),
    ['f@0-1', '(@1-2', 'x@2-3', ')@3-4', '@4-4'],
  );
  t.end();
});

t.test('columns count characters: an emoji in a string earlier on the line counts once', (t) => {
  const tokens = tokenize("SELECT '😀', x\nSELECT '😀😀' y");
  const x = tokens.find((tok) => tok.value === 'x')!;
  const y = tokens.find((tok) => tok.value === 'y')!;
  t.equal(x.column, 13);
  t.equal(x.offset, 13, 'offsets stay UTF-16 indexes');
  t.equal(y.line, 2);
  t.equal(y.column, 13);
  t.end();
});

t.test('identifiers: $-names, backticks and double quotes with escapes', (t) => {
  t.same(kinds('properties.$browser $os_version a$b'), [
    'word:properties',
    'punct:.',
    'word:$browser',
    'word:$os_version',
    'word:a$b',
  ]);
  t.same(kinds('`a``b` "c\\"d" `e\\`f` `tab\\tx`'), [
    'quoted:a`b',
    'quoted:c"d',
    'quoted:e`f',
    'quoted:tab\tx',
  ]);
  t.end();
});

t.test(
  'string literals: doubled quotes, backslash escapes, \\x bytes as UTF-8, unknown escapes kept',
  (t) => {
    t.same(kinds(`'it''s' 'it\\'s' '\\n\\t\\r\\0\\\\' '\\x41' 'caf\\xC3\\xA9' '\\d+' ''`), [
      "string:it's",
      "string:it's",
      'string:\n\t\r\0\\',
      'string:A',
      'string:café',
      'string:\\d+',
      'string:',
    ]);
    t.same(kinds("'multi\nline'"), ['string:multi\nline']);
    t.end();
  },
);

t.test('numbers as ClickHouse writes them; inf and nan are words', (t) => {
  t.same(kinds('42 4.2 4. (.5 1e3 1.5e-3 2E+10 0x1F 0b101 1_000 inf nan'), [
    'number:42',
    'number:4.2',
    'number:4.',
    'punct:(',
    'number:.5',
    'number:1e3',
    'number:1.5e-3',
    'number:2E+10',
    'number:0x1F',
    'number:0b101',
    'number:1_000',
    'word:inf',
    'word:nan',
  ]);
  t.end();
});

t.test('a dot after a name, number or bracket is member access: t.1.2 is two accesses', (t) => {
  t.same(kinds('t.1.2'), ['word:t', 'punct:.', 'number:1', 'punct:.', 'number:2']);
  t.same(kinds('(x).1 [y].2'), [
    'punct:(',
    'word:x',
    'punct:)',
    'punct:.',
    'number:1',
    'punct:[',
    'word:y',
    'punct:]',
    'punct:.',
    'number:2',
  ]);
  t.same(kinds('x > .5'), ['word:x', 'punct:>', 'number:.5']);
  t.end();
});

t.test('operators take the longest match', (t) => {
  t.same(kinds('a::b->c||d==e!=f<>g<=h>=i<j>k'), [
    'word:a',
    'punct:::',
    'word:b',
    'punct:->',
    'word:c',
    'punct:||',
    'word:d',
    'punct:==',
    'word:e',
    'punct:!=',
    'word:f',
    'punct:<>',
    'word:g',
    'punct:<=',
    'word:h',
    'punct:>=',
    'word:i',
    'punct:<',
    'word:j',
    'punct:>',
    'word:k',
  ]);
  t.end();
});

t.test('comments: --, //, # with a space, #!, and nested /* */ vanish', (t) => {
  t.same(kinds('a -- x\nb // y\nc # z\nd #!w\ne /* 1 /* 2 */ 3 */ f'), [
    'word:a',
    'word:b',
    'word:c',
    'word:d',
    'word:e',
    'word:f',
  ]);
  const tokens = tokenize('/* one\ntwo */ x');
  t.equal(tokens[0]!.line, 2, 'lines inside comments are counted');
  t.equal(tokens[0]!.column, 8);
  t.end();
});

t.test('bad input fails at the offending character with a message a person can act on', (t) => {
  const cases: [string, number, number, string][] = [
    ['SELECT @', 1, 8, "unknown token '@'"],
    ['SELECT a | b', 1, 10, "did you mean '||'?"],
    ['SELECT 1 #x', 1, 10, "a '#' comment needs a space"],
    ['SELECT\u00a01', 1, 7, 'U+00A0'],
    ["SELECT 'abc", 1, 8, 'unterminated string literal starting at line 1, column 8'],
    ['SELECT `abc', 1, 8, 'unterminated quoted identifier'],
    ['SELECT 1 /* a /* b */', 1, 10, 'unterminated comment starting at line 1, column 10'],
    ['SELECT 1abc', 1, 8, "malformed number '1abc'"],
    ['SELECT 0x', 1, 8, "malformed number '0x'"],
    ['SELECT 1_', 1, 8, "malformed number '1_'"],
    ["SELECT '\\xff'", 1, 9, 'not spell UTF-8'],
    ['SELECT ``', 1, 8, 'empty quoted identifier'],
    ["SELECT 'a\\", 1, 8, 'unterminated string literal'],
  ];
  for (const [text, line, column, fragment] of cases) {
    const err = lexError(text);
    t.equal(`${err.line}:${err.column}`, `${line}:${column}`, `${JSON.stringify(text)} position`);
    t.match(err.reason, fragment, `${JSON.stringify(text)} message`);
    t.equal(err.message, `${err.reason} (line ${line}, column ${column})`);
  }
  t.end();
});

t.test('the last token is always eof, even for empty or blank text', (t) => {
  t.same(
    tokenize('').map((tok) => tok.type),
    ['eof'],
  );
  const blank = tokenize('  \n -- only a comment');
  t.equal(blank.length, 1);
  t.equal(blank[0]!.type, 'eof');
  t.end();
});
