/**
 * Parse and compile cost of this checkout against another (a git worktree of an older revision), in one
 * process, per query of the valid corpus, the two alternated in both orders — what runs of one side after the
 * other on this shared machine cannot show, as its speed drifts between runs.
 *
 *   git worktree add /tmp/base <rev> && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   node bin/run-ts.js bench/query/compile-ab.ts /tmp/base
 *
 * Prints p50/p99/mean µs per query of: parse; parse + resolve + bind + print. Queries either side refuses are
 * left out.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadValidCorpus, SAMPLE_VARIABLES } from '../../test/helpers/dialect-corpus.ts';
import { percentile, time } from '../dialect/measure.ts';

interface Side {
  parse(text: string): unknown;
  compile(text: string): unknown;
}

interface Modules {
  parseDialect(text: string): unknown;
  resolveQuery(q: unknown): { variables: readonly string[] };
  printClickHouse(resolved: unknown, bound: unknown, project: number): { sql: string };
  bindVariables(names: readonly string[], values: Record<string, unknown>): unknown;
}

async function load(root: string): Promise<Side> {
  const at = (path: string): string => pathToFileURL(resolve(root, path)).href;
  const m = {
    ...((await import(at('src/query/dialect/mod.ts'))) as object),
    ...((await import(at('src/query/resolver/resolver.ts'))) as object),
    ...((await import(at('src/query/clickhouse/printer.ts'))) as object),
    ...((await import(at('src/query/clickhouse/variables.ts'))) as object),
  } as Modules;
  return {
    parse: (text) => m.parseDialect(text),
    compile: (text) => {
      const resolved = m.resolveQuery(m.parseDialect(text));
      const values = Object.fromEntries(resolved.variables.map((n) => [n, SAMPLE_VARIABLES[n]]));
      return m.printClickHouse(resolved, m.bindVariables(resolved.variables, values), 1).sql;
    },
  };
}

const other = process.argv[2];
if (!other) throw new Error('usage: compile-ab.ts <path of the other checkout>');
const sides = { base: await load(other), head: await load('.') };
const texts = loadValidCorpus()
  .map((q) => q.text)
  .filter((t) => {
    try {
      sides.base.compile(t);
      sides.head.compile(t);
      return true;
    } catch {
      return false;
    }
  });
// Warm-up: both sides' every path seen by the JIT before anything is timed.
for (let i = 0; i < 100; i++) for (const t of texts) for (const s of Object.values(sides)) s.compile(t);

const timing = { minRoundMs: 5, rounds: 5 };
const rows = ['base parse', 'head parse', 'base compile', 'head compile'];
const perQuery: Record<string, number[]> = Object.fromEntries(rows.map((r) => [r, []]));
for (const t of texts) {
  const samples: Record<string, number[]> = Object.fromEntries(rows.map((r) => [r, []]));
  for (const order of [
    ['base', 'head'],
    ['head', 'base'],
    ['head', 'base'],
    ['base', 'head'],
  ] as const) {
    for (const who of order) {
      samples[`${who} parse`]!.push(time(() => sides[who].parse(t), timing).us);
      samples[`${who} compile`]!.push(time(() => sides[who].compile(t), timing).us);
    }
  }
  for (const r of rows) perQuery[r]!.push(percentile(samples[r]!, 50));
}
process.stdout.write(
  `${texts.length} queries; µs per query, base = ${other}\n\n| | p50 | p99 | mean |\n|---|---:|---:|---:|\n`,
);
for (const r of rows) {
  const us = perQuery[r]!;
  const mean = us.reduce((a, b) => a + b, 0) / us.length;
  process.stdout.write(
    `| ${r} | ${percentile(us, 50).toFixed(2)} | ${percentile(us, 99).toFixed(2)} | ${mean.toFixed(2)} |\n`,
  );
}
