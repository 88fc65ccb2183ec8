/**
 * The dialect against ClickHouse's own parser (chDB's `EXPLAIN AST`, which parses without running): for every
 * valid corpus query, and for each row of the precedence table, ClickHouse must read Weir's printed text as
 * the same tree as the original text. Printed with every operation in parentheses, this shows that Weir
 * groups operators exactly as ClickHouse does, not merely that its printer agrees with its parser.
 */
import { query } from 'chdb';
import t from 'tap';
import { tokenize } from '../../src/query/dialect/lexer.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { literal, printDialect } from '../../src/query/dialect/print-dialect.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { loadValidCorpus, SAMPLE_VARIABLES } from '../helpers/dialect-corpus.ts';
import { PRECEDENCE } from '../helpers/dialect-precedence.ts';

/** ClickHouse's tree for a query, or the first line of its refusal. */
function clickhouseAst(text: string): { ast: string } | { error: string } {
  try {
    return { ast: query(`EXPLAIN AST ${text.replace(/;\s*$/, '')}`, 'TSVRaw') };
  } catch (err) {
    return { error: String((err as Error).message).split('\n')[0]! };
  }
}

/** The original text with each `{variables.x}` replaced by its sample literal, found by the lexer alone. */
function withValues(text: string): string {
  const tokens = tokenize(text);
  let out = '';
  let from = 0;
  for (let i = 0; i + 4 < tokens.length; i++) {
    const [open, head, dot, name, close] = tokens.slice(i, i + 5);
    if (open?.value !== '{' || head?.value !== 'variables' || dot?.value !== '.' || close?.value !== '}')
      continue;
    const value = SAMPLE_VARIABLES[name!.value];
    if (value === undefined) throw new Error(`no sample value for ${name!.value}`);
    out += text.slice(from, open.offset) + literal(value);
    from = close.end;
  }
  return out + text.slice(from);
}

/**
 * HogQL's operators, which ClickHouse does not have: `??` is parsed as the call it means; the regex operators
 * stay operators of the dialect until the resolver makes them the calls HogQL prints.
 */
const HOGQL_OPERATORS = new Set(['??', '=~', '!~', '~', '~*', '=~*', '!~*']);
const REGEX_OPERATORS = new Set(['=~', '!~', '~', '~*', '=~*', '!~*']);

/** The ClickHouse SQL a run sends for `text`: the resolved query, with the sample values and project 1 inlined. */
function sentToClickHouse(text: string): string {
  return printDialect(resolveQuery(parseDialect(text)).query, {
    inline: SAMPLE_VARIABLES,
    placeholder: () => '1',
  });
}

t.test('ClickHouse reads every printed corpus query as it reads the original', (t) => {
  for (const q of loadValidCorpus()) {
    const ast = parseDialect(q.text);
    const puncts = tokenize(q.text).filter((tok) => tok.type === 'punct');
    if (puncts.some((tok) => REGEX_OPERATORS.has(tok.value))) {
      // The dialect text keeps `=~`: what reaches ClickHouse is the resolved query, which must read.
      const sent = clickhouseAst(sentToClickHouse(q.text));
      t.ok('ast' in sent, `${q.name}: ClickHouse reads what is sent (${JSON.stringify(sent).slice(0, 200)})`);
      continue;
    }
    if (puncts.some((tok) => HOGQL_OPERATORS.has(tok.value))) {
      // No original ClickHouse could read: the printed text must read, and the same with every parenthesis.
      const needed = clickhouseAst(printDialect(ast, { inline: SAMPLE_VARIABLES }));
      t.ok(
        'ast' in needed,
        `${q.name}: ClickHouse reads the printed HogQL (${JSON.stringify(needed).slice(0, 200)})`,
      );
      t.same(
        clickhouseAst(printDialect(ast, { inline: SAMPLE_VARIABLES, parentheses: 'all' })),
        needed,
        q.name,
      );
      continue;
    }
    const original = clickhouseAst(withValues(q.text));
    if ('error' in original) {
      t.fail(`${q.name}: ClickHouse refuses the original: ${original.error}`);
      continue;
    }
    for (const parentheses of ['needed', 'all'] as const) {
      const printed = clickhouseAst(printDialect(ast, { inline: SAMPLE_VARIABLES, parentheses }));
      t.same(printed, original, `${q.name} (parentheses: ${parentheses})`);
    }
  }
  t.end();
});

t.test('the precedence table is ClickHouse precedence', (t) => {
  for (const [expr] of PRECEDENCE) {
    const original = clickhouseAst(withValues(`SELECT ${expr}`));
    const explicit = printDialect(parseDialect(`SELECT ${expr}`), {
      inline: SAMPLE_VARIABLES,
      parentheses: 'all',
    });
    if ('error' in original) {
      // ClickHouse refuses an unparenthesised nested ternary; Weir reads it right to left and prints it
      // parenthesised, which ClickHouse takes.
      t.ok('ast' in clickhouseAst(explicit), `${expr}: ClickHouse refuses it, and takes ${explicit}`);
      continue;
    }
    t.same(clickhouseAst(explicit), original, `${expr} is ${explicit}`);
  }
  t.end();
});
