/**
 * Broken versions of the valid corpus: every prefix of every query, and seeded token-level mutations. Each
 * must either parse (and then round-trip like any query) or fail with a DialectSyntaxError pointing inside
 * the text: never another exception, never a hang.
 */
import t from 'tap';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { tokenize } from '../../src/query/dialect/lexer.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { loadValidCorpus } from '../helpers/dialect-corpus.ts';
import { stripPositions } from '../helpers/dialect-tree.ts';

const corpus = loadValidCorpus().map((q) => q.text);

interface Outcome {
  parsed: number;
  refused: number;
  problems: string[];
  slowestMs: number;
}

function attempt(text: string, outcome: Outcome): void {
  const started = performance.now();
  try {
    const ast = parseDialect(text);
    const again = parseDialect(printDialect(ast));
    if (JSON.stringify(stripPositions(again)) !== JSON.stringify(stripPositions(ast))) {
      outcome.problems.push(`accepted but does not round-trip: ${JSON.stringify(text)}`);
    }
    outcome.parsed++;
  } catch (err) {
    if (!(err instanceof DialectSyntaxError)) {
      outcome.problems.push(`${String(err)} for ${JSON.stringify(text)}`);
    } else if (err.offset < 0 || err.offset > text.length || err.line < 1 || err.column < 1) {
      outcome.problems.push(
        `position ${err.offset} ${err.line}:${err.column} outside ${JSON.stringify(text)}`,
      );
    }
    outcome.refused++;
  }
  outcome.slowestMs = Math.max(outcome.slowestMs, performance.now() - started);
}

const fresh = (): Outcome => ({ parsed: 0, refused: 0, problems: [], slowestMs: 0 });

t.test('every prefix of every valid query parses or fails cleanly', (t) => {
  const outcome = fresh();
  for (const text of corpus) for (let end = 0; end < text.length; end++) attempt(text.slice(0, end), outcome);
  t.same(outcome.problems.slice(0, 10), []);
  t.ok(outcome.refused > outcome.parsed, `${outcome.refused} refused, ${outcome.parsed} parsed`);
  t.ok(outcome.slowestMs < 250, `slowest prefix took ${outcome.slowestMs.toFixed(1)} ms`);
  t.end();
});

t.test('seeded token mutations parse or fail cleanly', (t) => {
  let seed = 0x5eed;
  const random = (n: number): number => {
    seed = (seed * 48271) % 2147483647;
    return seed % n;
  };
  const junk = [
    '(',
    ')',
    '[',
    ']',
    '{',
    '}',
    ',',
    '.',
    '::',
    '->',
    '?',
    ':',
    'NOT',
    'AND',
    'SELECT',
    'FROM',
    "'",
    '`',
    '/*',
    '--',
    '-',
    'x',
  ];
  const outcome = fresh();
  for (let i = 0; i < 6000; i++) {
    const text = corpus[random(corpus.length)]!;
    const tokens = tokenize(text).slice(0, -1);
    const k = random(tokens.length);
    const tok = tokens[k]!;
    const before = text.slice(0, tok.offset);
    const after = text.slice(tok.end);
    const source = text.slice(tok.offset, tok.end);
    switch (random(4)) {
      case 0:
        attempt(before + after, outcome);
        break;
      case 1:
        attempt(`${before}${source} ${source}${after}`, outcome);
        break;
      case 2: {
        const next = tokens[k + 1];
        if (next)
          attempt(before + text.slice(next.offset, next.end) + ' ' + source + text.slice(next.end), outcome);
        break;
      }
      default:
        attempt(`${before}${junk[random(junk.length)]!} ${text.slice(tok.offset)}`, outcome);
    }
  }
  t.same(outcome.problems.slice(0, 10), []);
  t.ok(outcome.refused > 1000, `${outcome.refused} refused, ${outcome.parsed} parsed`);
  t.ok(outcome.slowestMs < 250, `slowest mutation took ${outcome.slowestMs.toFixed(1)} ms`);
  t.end();
});
