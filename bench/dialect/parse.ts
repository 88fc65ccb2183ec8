/**
 * `npm run bench:dialect`: what parsing and printing a saved query costs. For every query of the valid
 * corpus (test/fixtures/dialect/valid), microseconds per call of: the tokenizer alone (the floor of any
 * parser over these tokens), parse, print, and parse + print (what a run pays for the `hogql` debug text);
 * p50/p99 over the queries. Baseline in the same run: ClickHouse's own parser through chDB (`EXPLAIN AST`),
 * what one would call instead of a parser of one's own. Also the limits: the largest and the deepest query
 * accepted. Prints the tables and writes bench/results/dialect.md and dialect-cdf.svg.
 */
import { writeFileSync } from 'node:fs';
import createHogQLParser from '@posthog/hogql-parser';
import { query as chdbQuery } from 'chdb';
import { tokenize } from '../../src/query/dialect/lexer.ts';
import { MAX_DEPTH, MAX_QUERY_LENGTH, parseDialect } from '../../src/query/dialect/parser.ts';
import { printDialect } from '../../src/query/dialect/print-dialect.ts';
import { loadValidCorpus, SAMPLE_VARIABLES } from '../../test/helpers/dialect-corpus.ts';
import { OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { percentile, time } from './measure.ts';
import { cdfSvg, markdownReport, type LimitRow, type Row } from './report.ts';

const quick = process.argv.includes('--quick');
const timing = quick ? { minRoundMs: 2, rounds: 3 } : { minRoundMs: 5, rounds: 5 };
const corpus = loadValidCorpus();
const startedAt = new Date().toISOString();

// Warm-up: let the JIT see every path before anything is timed.
for (let i = 0; i < (quick ? 20 : 200); i++) for (const q of corpus) printDialect(parseDialect(q.text));

const asts = corpus.map((q) => parseDialect(q.text));
// PostHog's own parser (its ANTLR grammar in WebAssembly, issue 42's question of a front end): each call
// returns the tree as JSON text, which a front end would have to read back.
const posthog = await createHogQLParser();
for (const q of corpus) JSON.parse(posthog.parseSelect(q.text, true));
const chdbTexts = asts.map((ast) => `EXPLAIN AST ${printDialect(ast, { inline: SAMPLE_VARIABLES })}`);
// HogQL's own syntax (`a =~ b`, tags) is the dialect's, not ClickHouse's: those queries have no baseline.
const chdbParses = chdbTexts.map((text) => {
  try {
    chdbQuery(text, 'TSVRaw');
    return true;
  } catch {
    return false;
  }
});
const ops: Record<string, (i: number) => unknown> = {
  'tokenize (floor)': (i) => tokenize(corpus[i]!.text),
  parse: (i) => parseDialect(corpus[i]!.text),
  'print alone': (i) => printDialect(asts[i]!),
  'parse + print': (i) => printDialect(parseDialect(corpus[i]!.text)),
  'parse + print, values inlined': (i) =>
    printDialect(parseDialect(corpus[i]!.text), { inline: SAMPLE_VARIABLES }),
};

// Every operation on a query is timed back to back, and the corpus is passed over several times (a query's
// figure is its median pass), so drift in the machine (another process, CPU clocks) hits all of them alike.
const passes = quick ? 1 : 3;
const samples: Record<string, number[][]> = {};
// This machine is shared: before each pass wait (within a budget) for a quiet second, and record how many
// cores went to other processes while the pass ran.
const gate = new QuietGate(quick ? 0 : 120_000, 40_000, 0);
const otherCores: (number | undefined)[] = [];
for (let pass = 0; pass < passes; pass++) {
  await gate.wait([]);
  const probe = new OtherLoadProbe([]);
  corpus.forEach((_, i) => {
    for (const [name, op] of Object.entries(ops)) {
      (samples[name] ??= corpus.map(() => []))[i]!.push(time(() => op(i), timing).us);
    }
    // One call is tens of milliseconds: a round of one call is enough above the timer's grain.
    (samples["PostHog's parser (@posthog/hogql-parser, WASM) + JSON.parse"] ??= corpus.map(() => []))[
      i
    ]!.push(
      time(() => JSON.parse(posthog.parseSelect(corpus[i]!.text, true)), { minRoundMs: 0, rounds: 1 }).us,
    );
    // ClickHouse's parser, through chDB: each call crosses into the engine and formats the tree as text.
    const chdbTiming = { minRoundMs: timing.minRoundMs * 2, rounds: Math.max(3, timing.rounds - 2) };
    const chdbSamples = (samples['ClickHouse EXPLAIN AST (chDB)'] ??= corpus.map(() => []))[i]!;
    if (chdbParses[i]) chdbSamples.push(time(() => chdbQuery(chdbTexts[i]!, 'TSVRaw'), chdbTiming).us);
  });
  otherCores.push(probe.otherCores());
  process.stderr.write(`pass ${pass + 1} of ${passes} done\n`);
}
const perQuery: Record<string, number[]> = Object.fromEntries(
  Object.entries(samples).map(([name, byQuery]) => [
    name,
    byQuery.filter((s) => s.length > 0).map((s) => percentile(s, 50)),
  ]),
);

const rows: Row[] = Object.entries(perQuery).map(([name, us]) => ({
  name,
  p50: percentile(us, 50),
  p99: percentile(us, 99),
  max: Math.max(...us),
  mean: us.reduce((a, b) => a + b, 0) / us.length,
}));

// The limits: the largest query accepted (an IN list filling max_query_size) and the deepest.
const items: string[] = [];
let size = 'SELECT count() FROM events WHERE distinct_id IN ()'.length;
for (let i = 0; size + 16 < MAX_QUERY_LENGTH; i++) {
  const item = `'user-${String(i).padStart(6, '0')}'`;
  items.push(item);
  size += item.length + 2;
}
const largest = `SELECT count() FROM events WHERE distinct_id IN (${items.join(', ')})`;
const deepest = `SELECT ${'('.repeat(MAX_DEPTH - 3)}1${')'.repeat(MAX_DEPTH - 3)}`;
const limits: LimitRow[] = [
  {
    name: `largest: ${largest.length.toLocaleString('en')} characters, a ${items.length.toLocaleString('en')}-item IN list`,
    text: largest,
  },
  { name: `deepest: ${MAX_DEPTH - 3} nested parentheses`, text: deepest },
].map(({ name, text }) => ({
  name,
  parseUs: time(() => parseDialect(text), { minRoundMs: 50, rounds: 5 }).us,
  parsePrintUs: time(() => printDialect(parseDialect(text)), { minRoundMs: 50, rounds: 5 }).us,
}));

const chars = corpus.reduce((n, q) => n + q.text.length, 0);
const tokens = corpus.reduce((n, q) => n + tokenize(q.text).length - 1, 0);
const command =
  process.env['npm_lifecycle_event'] === 'bench:dialect'
    ? 'npm run bench:dialect'
    : 'node bin/run-ts.js bench/dialect/parse.ts';
const report = markdownReport({
  command: `${command}${quick ? ' -- --quick' : ''}`,
  startedAt,
  revision: weirRevision(),
  machine: machineInfo(),
  corpus: { queries: corpus.length, chars, tokens },
  rows,
  limits,
  timing: { ...timing, passes },
  otherCores,
});
process.stdout.write(report);
if (!quick) {
  writeFileSync(new URL('../results/dialect.md', import.meta.url), report);
  writeFileSync(
    new URL('../results/dialect-cdf.svg', import.meta.url),
    cdfSvg(
      Object.fromEntries(
        Object.entries(perQuery).filter(
          ([name]) => !name.startsWith('ClickHouse') && !name.startsWith('PostHog'),
        ),
      ),
    ),
  );
  process.stderr.write('wrote bench/results/dialect.md and dialect-cdf.svg\n');
}
