import t from 'tap';
import type { Query } from '../../src/query/dialect/ast.ts';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { loadMalformedCorpus, loadValidCorpus, SAMPLE_VARIABLES } from '../helpers/dialect-corpus.ts';
import { stripPositions } from '../helpers/dialect-tree.ts';

const valid = loadValidCorpus();
const malformed = loadMalformedCorpus();

t.test('the corpora are as large as issue 4 asks', (t) => {
  t.ok(valid.length >= 150, `${valid.length} valid queries`);
  t.ok(malformed.length >= 60, `${malformed.length} malformed queries`);
  t.equal(new Set(valid.map((q) => q.name)).size, valid.length, 'valid query names are unique');
  t.end();
});

/** Every object in the tree that has a `pos`. */
function positioned(
  value: unknown,
  out: { pos: { start: number; end: number; line: number; column: number } }[] = [],
) {
  if (Array.isArray(value)) for (const v of value) positioned(v, out);
  else if (value !== null && typeof value === 'object') {
    if ('pos' in value) out.push(value as (typeof out)[number]);
    for (const v of Object.values(value)) positioned(v, out);
  }
  return out;
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: [...before.slice(lineStart)].length + 1 };
}

t.test('every valid query parses, prints, and reads back as the same tree', (t) => {
  for (const q of valid) {
    const label = `${q.file}: ${q.name}`;
    let ast: Query;
    try {
      ast = parseDialect(q.text);
    } catch (err) {
      t.fail(`${label}: ${(err as Error).message}`);
      continue;
    }
    const printed = printDialect(ast);
    const again = parseDialect(printed);
    t.same(stripPositions(again), stripPositions(ast), `${label}: parse(print(parse(q))) = parse(q)`);
    t.equal(printDialect(again), printed, `${label}: printing is a fixed point`);
    const explicit = printDialect(ast, { parentheses: 'all' });
    t.same(stripPositions(parseDialect(explicit)), stripPositions(ast), `${label}: fully parenthesised too`);
  }
  t.end();
});

t.test('node positions agree with the text: offsets in range, line and column of the start', (t) => {
  for (const q of valid) {
    const nodes = positioned(parseDialect(q.text));
    const bad = nodes.filter(({ pos }) => {
      const lc = lineColumn(q.text, pos.start);
      return (
        pos.start > pos.end || pos.end > q.text.length || lc.line !== pos.line || lc.column !== pos.column
      );
    });
    t.same(
      bad.map((n) => n.pos),
      [],
      `${q.name}: ${nodes.length} positioned nodes`,
    );
  }
  t.end();
});

t.test('with sample values inlined, no placeholder is left and the text still parses', (t) => {
  for (const q of valid) {
    const ast = parseDialect(q.text);
    const inlined = printDialect(ast, { inline: SAMPLE_VARIABLES });
    t.notMatch(inlined, /\{variables\./, `${q.name}: every placeholder has a sample value`);
    t.doesNotThrow(() => parseDialect(inlined), q.name);
  }
  t.end();
});

t.test('every malformed query fails where and how the corpus says', (t) => {
  for (const m of malformed) {
    const label = `malformed.sql:${m.fileLine}`;
    try {
      parseDialect(m.text);
      t.fail(`${label}: accepted ${JSON.stringify(m.text)}`);
    } catch (err) {
      if (!(err instanceof DialectSyntaxError)) throw err;
      t.equal(`${err.line}:${err.column}`, `${m.line}:${m.column}`, `${label}: position (${err.reason})`);
      t.ok(err.reason.includes(m.message), `${label}: "${err.reason}" says "${m.message}"`);
      t.ok(err.offset >= 0 && err.offset <= m.text.length, `${label}: offset within the text`);
      t.same(
        lineColumn(m.text, err.offset),
        { line: err.line, column: err.column },
        `${label}: offset agrees`,
      );
    }
  }
  t.end();
});
