/**
 * `npm run bench:insights` (issue 24): what an insight endpoint's query costs against the same answer
 * written by hand for ClickHouse. On bench/query's generated events (10M; `--quick`: 1M) with person merges
 * written beside them (scenario.ts), each scenario (scenarios.ts) is run as an endpoint run makes it — read,
 * prepare (range resolved at a fixed `now`), resolve, print, run on the chDB store, finish — and as its
 * hand-written SQL, in two states of the tables as bench/query does: "fresh" (the parts as inserted, merges
 * stopped: FINAL merges at read time) and "settled" (after OPTIMIZE … FINAL). The two answers are checked
 * equal before anything is timed; then one warm-up each and alternated rounds (printed, hand, printed, …),
 * median. Target: printed / hand-written ≤ 1.2 for each scenario.
 *
 * Prints the report and writes bench/results/insights.md and the raw figures beside it (`--quick` writes
 * nothing). `--events N`: another size; `--only <text>`: the scenarios whose name holds it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/core/logger.ts';
import { runCompiledQuery } from '../../src/query/hogql-query.ts';
import { finishInsightRows, prepareInsightRun, readInsight } from '../../src/query/insights/insight.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { generate } from '../query/dataset.ts';
import { markdownReport, type RunRow, type Report } from './report.ts';
import { NOW, normalise, writePersonDistinctIds, type Scenario } from './scenario.ts';
import { SCENARIOS } from './scenarios.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const option = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const events = Number(option('--events') ?? (quick ? 1_000_000 : 10_000_000));
const only = option('--only');
const rounds = quick ? 3 : 9;
const startedAt = new Date().toISOString();
const scenarios = SCENARIOS.filter((s) => only === undefined || s.name.includes(only));

const dir = mkdtempSync(join(tmpdir(), 'weir-bench-insights-'));
const store = ChdbClient.open(join(dir, 'chdb'));
try {
  await migrate(store, createLogger('silent'));
  for (const table of ['events', 'persons', 'person_distinct_ids'])
    await store.command(`SYSTEM STOP MERGES ${table}`);
  process.stderr.write(`generating ${events.toLocaleString('en')} events…\n`);
  const generating = performance.now();
  await generate(store, { events });
  await writePersonDistinctIds(store);
  const generateSeconds = (performance.now() - generating) / 1000;

  const gate = new QuietGate(quick ? 0 : 300_000, 30_000, 0);
  const runs: RunRow[] = [];
  for (const state of ['fresh', 'settled'] as const) {
    if (state === 'settled') {
      process.stderr.write('merging (OPTIMIZE … FINAL)…\n');
      for (const table of ['events', 'persons', 'person_distinct_ids']) {
        await store.command(`SYSTEM START MERGES ${table}`);
        await store.command(`OPTIMIZE TABLE ${table} FINAL`);
      }
    }
    const parts = await partsOf(store);
    for (const s of scenarios) {
      await gate.wait([]);
      const probe = new OtherLoadProbe([]);
      const row = await measure(s);
      runs.push({ ...row, state, parts, otherCores: probe.otherCores(), stealCores: probe.stealCores() });
      process.stderr.write(
        `${state}: ${s.name}: printed ${row.printedMs.toFixed(0)} ms, hand ${row.handMs.toFixed(0)} ms\n`,
      );
    }
  }

  const report: Report = {
    command: `npm run bench:insights${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`,
    startedAt,
    revision: weirRevision(),
    uncommittedInsights: uncommitted('src/query/insights'),
    machine: machineInfo(),
    events,
    generateSeconds,
    rounds,
    now: NOW.toISOString(),
    runs,
  };
  const stamp = startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const rawName = `insights-${stamp}.json`;
  const markdown = markdownReport(report, rawName);
  process.stdout.write(markdown);
  if (!quick) {
    writeFileSync(new URL(`../results/${rawName}`, import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(new URL('../results/insights.md', import.meta.url), markdown);
    process.stderr.write(`wrote bench/results/insights.md and bench/results/${rawName}\n`);
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The files under `dir` that differ from the commit: in a checkout shared with others the measured code may
 * be work in progress, and the report says which.
 */
function uncommitted(dir: string): string[] {
  try {
    const out = execFileSync('git', ['status', '--porcelain', '--', dir], { encoding: 'utf8' });
    return out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => l.slice(3));
  } catch {
    return [];
  }
}

async function partsOf(s: ChdbClient): Promise<string> {
  const rows = await s.query<{ table: string; parts: string }>(
    "SELECT table, toString(count()) AS parts FROM system.parts WHERE active AND table IN ('events', 'person_distinct_ids') GROUP BY table ORDER BY table",
  );
  return rows.map((r) => `${r.table} ${r.parts}`).join(', ');
}

/** The insight as an endpoint run makes it: read, prepared at NOW, run on the store, its rows finished. */
async function runPrinted(s: Scenario): Promise<{ rows: unknown[][]; clickhouse: string }> {
  const prepared = prepareInsightRun(readInsight(s.query), {}, { now: NOW, materialized: false });
  const result = await runCompiledQuery(prepared.compiled, prepared.bound, 1, { store });
  return {
    rows: finishInsightRows(prepared, result.columns, result.results).rows,
    clickhouse: result.clickhouse,
  };
}

async function runHand(s: Scenario): Promise<readonly unknown[][]> {
  return (await store.queryTable(s.hand, {})).rows;
}

type Measured = Omit<RunRow, 'state' | 'parts' | 'otherCores' | 'stealCores'>;

/** Checks the two answers equal, then times them alternated after one warm-up each. */
async function measure(s: Scenario): Promise<Measured> {
  const printed = await runPrinted(s);
  const hand = await runHand(s);
  const a = normalise(printed.rows);
  const b = normalise(hand);
  if (a.join('\n') !== b.join('\n')) {
    const onlyPrinted = a.filter((r) => !b.includes(r)).slice(0, 10);
    const onlyHand = b.filter((r) => !a.includes(r)).slice(0, 10);
    throw new Error(
      `${s.name}: the insight answers differently from the hand-written SQL (${a.length} rows against ${b.length})\n` +
        `only in the insight's:\n  ${onlyPrinted.join('\n  ')}\nonly in the hand-written:\n  ${onlyHand.join('\n  ')}\n` +
        `printed SQL:\n${printed.clickhouse}`,
    );
  }
  // Wall time is the target's measure; CPU time (the engine runs in this process) is what a contended
  // machine changes least, so it is kept beside it to tell a slow query from a busy machine.
  const times = { printed: [] as number[], hand: [] as number[] };
  const cpu = { printed: [] as number[], hand: [] as number[] };
  const timed = async (into: 'printed' | 'hand', run: () => Promise<unknown>): Promise<void> => {
    const cpuStart = process.cpuUsage();
    const started = performance.now();
    await run();
    times[into].push(performance.now() - started);
    const used = process.cpuUsage(cpuStart);
    cpu[into].push((used.user + used.system) / 1000);
  };
  for (let r = 0; r < rounds; r++) {
    await timed('printed', () => runPrinted(s));
    await timed('hand', () => runHand(s));
  }
  return {
    name: s.name,
    kind: s.kind,
    rows: a.length,
    printedMs: median(times.printed),
    handMs: median(times.hand),
    printedCpuMs: median(cpu.printed),
    handCpuMs: median(cpu.hand),
    printedRounds: times.printed,
    handRounds: times.hand,
    printedSql: printed.clickhouse,
    handSql: s.hand.trim(),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}
