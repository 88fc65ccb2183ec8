/**
 * `npm run bench:materialized` (issue 25): what a materialized endpoint buys, in one run.
 * On ~10M generated events (bench/query/dataset.ts), one SQL endpoint with an equality and a range variable
 * (endpoint.ts) is created materialized, and then:
 * 1. refreshes are timed against the direct query they replace (scenario-refresh.ts);
 * 2. materialized answers are checked equal to direct ones (equality.ts) — before anything else is timed;
 * 3. direct, materialized and cached runs at 1 and 50 callers, with varying values (scenario-runs.ts);
 * 4. the pool's memory for the table against its Arrow size (scenario-memory.ts).
 * Weir runs in this process as bench:endpoints runs it. Prints the report (report.ts) and writes
 * bench/results/materialized.md and the raw figures beside it.
 * `--quick`: ~1M events, fewer requests and rounds, no waiting for a quiet machine, nothing written.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { tuneHeap } from '../../src/core/heap-tuning.ts';
import { startWeir } from '../../src/main.ts';
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { generate } from '../query/dataset.ts';
import { BenchClient, KEY, NAME, QUERY } from './endpoint.ts';
import { checkEquality } from './equality.ts';
import { markdownReport, targets, type Report } from './report.ts';
import { measureMemory } from './scenario-memory.ts';
import { measureRefresh } from './scenario-refresh.ts';
import { measureRuns, type RunsPlan, type RunsRow } from './scenario-runs.ts';
import { profileMaterializedRun } from './profile.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const startedAt = new Date().toISOString();
// Taken now, when the measured code is loaded: others commit in this checkout while the benchmark runs.
const revision = weirRevision();
const uncommittedSrc = uncommitted('src');
/** Project 1 holds 9 in 10 generated events: this many makes ~10M of its own (~1M with --quick). */
const GENERATED = quick ? 1_111_112 : 11_111_112;
const REFRESH_ROUNDS = quick ? 2 : 5;
const REFRESH_TIMEOUT_MS = 600_000;
const PLANS: readonly RunsPlan[] = [
  { mode: 'direct', callers: 1, requests: quick ? 10 : 20, warmup: 1 },
  { mode: 'direct', callers: 50, requests: quick ? 50 : 100, warmup: 2 },
  { mode: 'materialized', callers: 1, requests: quick ? 2000 : 5000, warmup: 200 },
  { mode: 'cached', callers: 1, requests: quick ? 2000 : 10_000, warmup: 200 },
  { mode: 'materialized', callers: 50, requests: quick ? 5000 : 30_000, warmup: 500 },
  { mode: 'cached', callers: 50, requests: quick ? 10_000 : 50_000, warmup: 500 },
];

// Weir runs in this process: its heap as the `weir` command sets it.
tuneHeap();
const dir = mkdtempSync(join(tmpdir(), 'weir-bench-materialized-'));
const dataDir = join(dir, 'data');
const config = loadConfig({
  WEIR_PORT: '0',
  WEIR_DATA_DIR: dataDir,
  WEIR_BOOTSTRAP_PERSONAL_API_KEY: KEY,
  WEIR_LOG_LEVEL: 'silent',
  // 50 direct callers must wait for the store, not be refused.
  WEIR_ENDPOINT_RUN_CONCURRENCY: '64',
});
const weir = await startWeir(config, createLogger('silent'));
const client = new BenchClient(weir.url);
let report: Report | undefined;
const notes: string[] = [];
try {
  process.stderr.write(`generating ${GENERATED.toLocaleString('en')} events…\n`);
  const generating = performance.now();
  await generate(weir.store as unknown as ChdbClient, { events: GENERATED });
  await weir.store.command('OPTIMIZE TABLE events FINAL');
  const generateSeconds = (performance.now() - generating) / 1000;
  const [count] = await weir.store.query<{ n: string }>(
    'SELECT count() AS n FROM events FINAL WHERE project_id = 1',
  );
  const gate = new QuietGate(quick ? 0 : 120_000, 30_000, 0);

  process.stderr.write('creating the endpoint; first refresh…\n');
  const created = performance.now();
  await client.create();
  await client.completed(null, REFRESH_TIMEOUT_MS);
  const firstMs = performance.now() - created;
  await gate.wait([]);
  const probe = new OtherLoadProbe([]);
  const refresh = await measureRefresh(client, firstMs, REFRESH_ROUNDS, REFRESH_TIMEOUT_MS);
  const refreshLoad = { otherCores: probe.otherCores(), stealCores: probe.stealCores() };
  process.stderr.write(`refresh: ${JSON.stringify({ ...refresh, ...refreshLoad })}\n`);

  const equality = await checkEquality(client);
  process.stderr.write(`equal answers: ${JSON.stringify(equality)}\n`);

  const runs: RunsRow[] = [];
  for (const plan of PLANS) {
    const row = await measureRuns(client, plan, gate);
    runs.push(row);
    process.stderr.write(`${JSON.stringify(row)}\n`);
  }

  const version = weir.catalog.listEndpoints(1).find((e) => e.name === NAME)?.versions[0];
  const objectKey = version?.materialization?.objectKey;
  if (!objectKey) throw new Error('the endpoint has no materialized object');
  const memory = measureMemory(dataDir, objectKey, await client.metrics());
  process.stderr.write(`memory: ${JSON.stringify(memory)}\n`);

  report = {
    command: `npm run bench:materialized${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`,
    startedAt,
    revision,
    uncommittedSrc,
    machine: machineInfo(),
    generated: GENERATED,
    projectEvents: Number(count?.n ?? 0),
    generateSeconds,
    query: QUERY,
    queryThreads: config.queryThreads,
    equality,
    refresh: { ...refresh, ...refreshLoad },
    runs,
    memory,
  };
  if (targets(report).some((t) => !t.met)) {
    process.stderr.write('a target was missed: profiling a materialized run…\n');
    const profile = await profileMaterializedRun(
      weir,
      client,
      dataDir,
      config.queryThreads,
      refresh.refreshMedianMs,
    );
    report = { ...report, profile };
    notes.push(...(profile['notes'] as string[]));
  }
} finally {
  await weir.close();
  rmSync(dir, { recursive: true, force: true });
}

const stamp = startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
const rawName = `materialized-${stamp}.json`;
if (!report) throw new Error('no report');
const markdown = markdownReport(report, quick ? undefined : rawName, notes);
process.stdout.write(markdown);
if (!quick) {
  writeFileSync(new URL(`../results/${rawName}`, import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(new URL('../results/materialized.md', import.meta.url), markdown);
  process.stderr.write(`wrote bench/results/materialized.md and bench/results/${rawName}\n`);
}

/** The files under `dir` that differ from the commit: in a shared checkout the measured code may be others' work in progress. */
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
