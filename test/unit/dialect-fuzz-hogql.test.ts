/**
 * The lexer's modes for HogQL's tags and f-strings take outside text: every prefix of every parity query
 * that has a tag, an f-string or an object literal, and fast-check strings made of their pieces, must parse
 * (and then print back to the same tree) or fail with a DialectSyntaxError inside the text; never another
 * exception, never a hang.
 */
import fc from 'fast-check';
import t from 'tap';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { loadParityCorpus } from '../helpers/compat-corpus.ts';
import { stripPositions } from '../helpers/dialect-tree.ts';

/** What is wrong with how `text` parses, or null when it parses and round-trips or fails cleanly. */
function problem(text: string): string | null {
  let ast;
  try {
    ast = parseDialect(text);
  } catch (err) {
    if (!(err instanceof DialectSyntaxError)) return `${String(err)} for ${JSON.stringify(text)}`;
    if (err.offset < 0 || err.offset > text.length || err.line < 1 || err.column < 1)
      return `position ${err.offset} ${err.line}:${err.column} outside ${JSON.stringify(text)}`;
    return null;
  }
  const printed = printDialect(ast);
  let again;
  try {
    again = parseDialect(printed);
  } catch (err) {
    return `accepted, but its print ${JSON.stringify(printed)} does not parse (${String(err)})`;
  }
  return JSON.stringify(stripPositions(again)) === JSON.stringify(stripPositions(ast))
    ? null
    : `accepted but does not round-trip: ${JSON.stringify(text)} printed ${JSON.stringify(printed)}`;
}

t.test(
  'every prefix of every parity query with a tag, an f-string or an object parses or fails cleanly',
  (t) => {
    const texts = loadParityCorpus()
      .map((q) => q.text)
      .filter((q) => /<[A-Za-z]|f'|\{'/.test(q));
    t.ok(texts.length >= 10, `${texts.length} queries`);
    const problems: string[] = [];
    for (const text of texts) {
      for (let end = 0; end <= text.length; end++) {
        const p = problem(text.slice(0, end));
        if (p !== null) problems.push(p);
      }
    }
    t.same(problems.slice(0, 10), []);
    t.end();
  },
);

const PIECES = [
  '<a',
  '<span>',
  '</span>',
  '</a>',
  '<em/>',
  '/>',
  '>',
  '<',
  " href='x'",
  ' href={x}',
  ' disabled',
  '{',
  '}',
  '{event}',
  "{'k': 1}",
  "f'",
  "'",
  "''",
  '\\{',
  '\\',
  'text ',
  ' ',
  '\n',
  'a<b',
  '?.',
  '1',
  '(',
  ')',
  ',',
  'x',
];

t.test('strings made of tag and f-string pieces parse or fail cleanly (fast-check)', (t) => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 24 }), (pieces) => {
      const text = `SELECT ${pieces.join('')}`;
      const p = problem(text);
      if (p !== null) throw new Error(p);
    }),
    {
      numRuns: Number(process.env['WEIR_DIALECT_FUZZ_RUNS'] ?? 3000),
      seed: Number(process.env['WEIR_DIALECT_FUZZ_SEED'] ?? 42),
    },
  );
  t.pass('strings of pieces');
  t.end();
});
