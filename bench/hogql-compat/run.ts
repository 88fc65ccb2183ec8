/**
 * `npm run bench:hogql-compat` (issue 26): how much of the HogQL PostHog users already write Weir answers,
 * and rightly. Starts an embedded Weir, captures the fixed dataset (test/helpers/compat-dataset.ts) over
 * HTTP, runs every query of the corpus (test/fixtures/dialect/compat) through the query API, and sorts each
 * into right (answered as computed by hand), answered (200, no expected answer to check), wrong (200, not
 * the expected answer) and refused (any other status). Compatibility is (right + answered) / all. Then the
 * same for the parity corpus of issue 42 (test/fixtures/dialect/parity: PostHog's own tests and the HogQL
 * its code runs, every query accepted by PostHog's parser), reported as its own table after the first so
 * the two figures stay comparable over time. Prints the report and writes bench/results/hogql-compat.md.
 * `--no-write`: print only.
 */
import { writeFileSync } from 'node:fs';
import { weirRevision } from '../capture/results.ts';
import { loadCompatDataset } from '../../test/helpers/compat-dataset.ts';
import {
  loadCompatCorpus,
  loadParityCorpus,
  refusalReason,
  runCompatQuery,
  type CompatOutcome,
  type CompatQuery,
} from '../../test/helpers/compat-corpus.ts';
import { startTestWeir } from '../../test/helpers/weir.ts';

const write = !process.argv.includes('--no-write');
const corpus = loadCompatCorpus();
const parity = loadParityCorpus();
const w = await startTestWeir();
// What the measured code is, taken when it is loaded: others commit in this checkout during a run.
const revision = weirRevision();
const startedAt = new Date().toISOString();
type Outcomes = { q: CompatQuery; o: CompatOutcome }[];
const outcomes: Outcomes = [];
const parityOutcomes: Outcomes = [];
try {
  await loadCompatDataset(w);
  for (const q of corpus) outcomes.push({ q, o: await runCompatQuery(w, q) });
  for (const q of parity) parityOutcomes.push({ q, o: await runCompatQuery(w, q) });
} finally {
  await w.close();
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The outcome table, refusals by reason and wrong answers of one corpus, under headings of `level`. */
function section(results: Outcomes, level: string): string[] {
  const count = (kind: CompatOutcome['kind']): number => results.filter((x) => x.o.kind === kind).length;
  const right = count('right');
  const answered = count('answered');
  const wrong = count('wrong');
  const refused = count('refused');
  const total = results.length;
  const pct = (n: number): string => `${((100 * n) / total).toFixed(1)}%`;

  const reasons = new Map<string, { status: number; names: string[]; example: string }>();
  for (const { q, o } of results) {
    if (o.kind !== 'refused') continue;
    const key = `${o.status} ${refusalReason(o.message)}`;
    const r = reasons.get(key) ?? { status: o.status, names: [], example: o.message };
    r.names.push(q.name);
    reasons.set(key, r);
  }
  const byCount = [...reasons.entries()].sort((a, b) => b[1].names.length - a[1].names.length);

  const lines: string[] = [];
  lines.push('| outcome | queries | share |', '|---|---:|---:|');
  lines.push(`| right answer (checked against the hand computation) | ${right} | ${pct(right)} |`);
  lines.push(`| answered (200; no hand-computed answer to check) | ${answered} | ${pct(answered)} |`);
  lines.push(
    `| **compatible** (right + answered) | **${right + answered}** | **${pct(right + answered)}** |`,
  );
  lines.push(`| wrong answer (200, not the hand computation) | ${wrong} | ${pct(wrong)} |`);
  lines.push(`| refused (not 200) | ${refused} | ${pct(refused)} |`, '');
  lines.push(`${level} Refusals by reason`, '');
  if (byCount.length === 0) lines.push('None.', '');
  else {
    lines.push('| queries | status | message (one example) | which |', '|---:|---:|---|---|');
    for (const [, r] of byCount)
      lines.push(
        `| ${r.names.length} | ${r.status} | ${cell(r.example.slice(0, 300))} | ${r.names.join(', ')} |`,
      );
    lines.push('');
  }
  lines.push(`${level} Wrong answers`, '');
  const wrongs = results.filter((x) => x.o.kind === 'wrong');
  if (wrongs.length === 0) lines.push('None.', '');
  for (const { q, o } of wrongs) {
    if (o.kind !== 'wrong') continue;
    lines.push(`- **${q.name}** (${q.file}:${q.line}, ${q.source})`);
    lines.push(`  - expected: \`${cell(JSON.stringify(q.expect)).slice(0, 600)}\``);
    lines.push(`  - got: \`${cell(JSON.stringify(o.results)).slice(0, 600)}\``);
  }
  lines.push('');
  return lines;
}

const lines: string[] = [];
lines.push('# HogQL compatibility (`npm run bench:hogql-compat`)', '');
lines.push(
  `Weir ${revision}, ${startedAt}. ${outcomes.length} real HogQL queries from PostHog's docs, tutorials, tests and a`,
  `community guide (test/fixtures/dialect/compat), ${corpus.filter((q) => q.expect).length} of them with an answer`,
  'computed by hand on the fixed dataset of test/helpers/compat-dataset.ts, run through the query API.',
  '',
);
lines.push(...section(outcomes, '##'));
lines.push('## Parity corpus', '');
lines.push(
  `${parityOutcomes.length} more queries (test/fixtures/dialect/parity): PostHog's own HogQL tests, the HogQL its`,
  `code runs and its HogQL extensions reference, every one accepted by PostHog's parser, ${parity.filter((q) => q.expect).length}`,
  `of them with an answer computed by hand on the same dataset and ${parity.filter((q) => q.refused).length} that PostHog's run refuses too`,
  '(right when refused with a 4xx), run through the same query API.',
  '',
);
lines.push(...section(parityOutcomes, '###'));
const report = lines.join('\n');
process.stdout.write(`${report}\n`);
if (write) writeFileSync(new URL('../results/hogql-compat.md', import.meta.url), report);
