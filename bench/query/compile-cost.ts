/**
 * What turning a query into ClickHouse SQL costs, per query of the dialect corpus: parse; parse + resolve;
 * parse + resolve + bind + print (what a run pays before ClickHouse sees anything). Baseline: the tokenizer
 * alone, the floor of any parser over these tokens.
 */
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { parseDialect, tokenize } from '../../src/query/dialect/mod.ts';
import { QueryResolveError } from '../../src/query/resolver/errors.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { loadValidCorpus, SAMPLE_VARIABLES } from '../../test/helpers/dialect-corpus.ts';
import { percentile, time } from '../dialect/measure.ts';

export interface CompileRow {
  readonly name: string;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

export interface CompileCost {
  readonly queries: number;
  /** Corpus queries the resolver refuses (unknown column, WITH TOTALS, a refused function), by name. */
  readonly refused: readonly string[];
  readonly rows: readonly CompileRow[];
}

export function measureCompile(options: { quick: boolean }): CompileCost {
  const timing = options.quick ? { minRoundMs: 2, rounds: 3 } : { minRoundMs: 5, rounds: 5 };
  const refused: string[] = [];
  const corpus = loadValidCorpus().filter((q) => {
    try {
      resolveQuery(parseDialect(q.text));
      return true;
    } catch (err) {
      if (!(err instanceof QueryResolveError)) throw err;
      refused.push(`${q.name} (${err.reason})`);
      return false;
    }
  });
  const compile = (text: string): string => {
    const resolved = resolveQuery(parseDialect(text));
    const values = Object.fromEntries(resolved.variables.map((v) => [v, SAMPLE_VARIABLES[v]]));
    return printClickHouse(resolved, bindVariables(resolved.variables, values), 1).sql;
  };
  const ops: Record<string, (text: string) => unknown> = {
    'tokenize (floor)': (text) => tokenize(text),
    parse: (text) => parseDialect(text),
    'parse + resolve': (text) => resolveQuery(parseDialect(text)),
    'parse + resolve + bind + print': compile,
  };
  for (let i = 0; i < (options.quick ? 20 : 200); i++) for (const q of corpus) compile(q.text);
  const perQuery: Record<string, number[]> = {};
  for (const q of corpus) {
    for (const [name, op] of Object.entries(ops)) {
      (perQuery[name] ??= []).push(time(() => op(q.text), timing).us);
    }
  }
  const rows = Object.entries(perQuery).map(([name, us]) => ({
    name,
    p50: percentile(us, 50),
    p99: percentile(us, 99),
    max: Math.max(...us),
    mean: us.reduce((a, b) => a + b, 0) / us.length,
  }));
  return { queries: corpus.length, refused, rows };
}
