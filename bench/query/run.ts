/**
 * `npm run bench:query`: what the query API's translation costs.
 * 1. Compile: parse + resolve + print, µs per query of the dialect corpus (compile-cost.ts).
 * 2. Run: the printed SQL of each question (questions.ts) against the same question written by hand for
 *    ClickHouse, on generated events in chDB (dataset.ts), in two states of the table: "fresh" (the parts as
 *    inserted, merges stopped: the worst case for FINAL) and "settled" (merged, as background merges leave a
 *    table at rest). Each printed answer is checked to equal the hand-written one before it is timed.
 * Prints the report and writes bench/results/query.md. `--quick`: 1M events, fewer rounds, nothing written.
 * `--events N`: another size.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/core/logger.ts';
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { compileQuery } from '../../src/query/hogql-query.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { measureCompile } from './compile-cost.ts';
import { generate } from './dataset.ts';
import { measureDedup, type DedupRow } from './dedup-alternatives.ts';
import { QUESTIONS, rawOf, type Question } from './questions.ts';
import { markdownReport, type RunRow } from './report.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const eventsArg = args.indexOf('--events');
const events = eventsArg >= 0 ? Number(args[eventsArg + 1]) : quick ? 1_000_000 : 10_000_000;
const rounds = quick ? 3 : 5;
const startedAt = new Date().toISOString();

process.stderr.write('compile cost over the corpus…\n');
const compile = measureCompile({ quick });

const dir = mkdtempSync(join(tmpdir(), 'weir-bench-query-'));
const store = ChdbClient.open(join(dir, 'chdb'));
try {
  await migrate(store, createLogger('silent'));
  await store.command('SYSTEM STOP MERGES events');
  await store.command('SYSTEM STOP MERGES persons');
  process.stderr.write(`generating ${events.toLocaleString('en')} events…\n`);
  const generating = performance.now();
  await generate(store, { events });
  const generateSeconds = (performance.now() - generating) / 1000;

  const gate = new QuietGate(quick ? 0 : 240_000, 30_000, 0);
  const runs: RunRow[] = [];
  let dedup: DedupRow[] = [];
  for (const state of ['fresh', 'settled'] as const) {
    if (state === 'settled') {
      process.stderr.write('merging (OPTIMIZE … FINAL)…\n');
      await store.command('SYSTEM START MERGES events');
      await store.command('SYSTEM START MERGES persons');
      await store.command('OPTIMIZE TABLE events FINAL');
      await store.command('OPTIMIZE TABLE persons FINAL');
    }
    const parts = await partsOf(store);
    for (const q of QUESTIONS) {
      await gate.wait([]);
      const probe = new OtherLoadProbe([]);
      runs.push({ state, parts, ...(await measureQuestion(q)), otherCores: probe.otherCores() });
      process.stderr.write(`${state}: ${q.name}\n`);
    }
    if (state === 'fresh') {
      await gate.wait([]);
      dedup = await measureDedup(store, rounds);
      process.stderr.write('fresh: deduplication alternatives\n');
    }
  }

  const report = markdownReport({
    command: `npm run bench:query${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`,
    startedAt,
    revision: weirRevision(),
    machine: machineInfo(),
    events,
    generateSeconds,
    rounds,
    compile,
    runs,
    dedup,
  });
  process.stdout.write(report);
  if (!quick) {
    writeFileSync(new URL('../results/query.md', import.meta.url), report);
    process.stderr.write('wrote bench/results/query.md\n');
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

async function partsOf(s: ChdbClient): Promise<string> {
  const rows = await s.query<{ table: string; parts: string }>(
    "SELECT table, toString(count()) AS parts FROM system.parts WHERE active AND table IN ('events', 'persons') GROUP BY table ORDER BY table",
  );
  return rows.map((r) => `${r.table} ${r.parts}`).join(', ');
}

/** Median milliseconds of the printed, hand-written and raw SQL, run interleaved after one warm-up each. */
async function measureQuestion(q: Question): Promise<Omit<RunRow, 'state' | 'parts' | 'otherCores'>> {
  const { resolved } = compileQuery(q.dialect);
  const printed = printClickHouse(resolved, bindVariables(resolved.variables, q.variables ?? {}), 1);
  const variants = {
    printed: () => store.queryTable(printed.sql, printed.params),
    hand: () => store.queryTable(q.hand, {}),
    raw: () => store.queryTable(rawOf(q), {}),
  };
  const answers: Record<string, string> = {};
  for (const [name, run] of Object.entries(variants)) answers[name] = normalise((await run()).rows);
  if (answers['printed'] !== answers['hand']) {
    throw new Error(
      `${q.name}: the printed query answers differently\nprinted ${answers['printed']}\nhand ${answers['hand']}`,
    );
  }
  const times: Record<string, number[]> = { printed: [], hand: [], raw: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(variants)) {
      const started = performance.now();
      await run();
      times[name]!.push(performance.now() - started);
    }
  }
  return {
    name: q.name,
    printedMs: median(times['printed']!),
    handMs: median(times['hand']!),
    rawMs: median(times['raw']!),
    rawDiffers: answers['raw'] !== answers['hand'],
  };
}

/** Rows compared as text: 64-bit integers arrive quoted from the printed SQL and bare from the hand-written. */
function normalise(rows: readonly unknown[][]): string {
  return JSON.stringify(rows, (_k, v: unknown) =>
    typeof v === 'number' ? String(Math.round(v * 1e6) / 1e6) : v,
  );
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
