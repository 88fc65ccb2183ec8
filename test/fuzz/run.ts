/**
 * `npm run fuzz`: the capture fuzz of `test/e2e/capture-fuzz.test.ts` for as long as asked, with a random
 * seed unless one is given. It prints the seed first, and on a failure the request that failed first and
 * the one fast-check shrank it to, each as a case literal to paste into
 * `test/e2e/capture-fuzz-regressions.test.ts`. Exit code 1 on any failure.
 *
 *   npm run fuzz -- [--runs N] [--seed S] [--backend embedded|jetstream|both] [--threads 0|1]
 *                   [--no-shrink] [--allow-quarantine] [--settle MS] [--path P] [--minutes M]
 *
 * Env: WEIR_FUZZ_RUNS, WEIR_FUZZ_SEED, WEIR_FUZZ_BACKEND (the same as the flags).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runFuzz, type FuzzReport } from '../helpers/fuzz-run.ts';
import type { Backend } from '../helpers/fuzz-weir.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    backend: { type: 'string' },
    threads: { type: 'string' },
    'no-shrink': { type: 'boolean' },
    'allow-quarantine': { type: 'boolean' },
    settle: { type: 'string' },
    path: { type: 'string' },
    minutes: { type: 'string' },
  },
});

const runs = Number(values.runs ?? process.env['WEIR_FUZZ_RUNS'] ?? 1000);
const seed = Number(values.seed ?? process.env['WEIR_FUZZ_SEED'] ?? (Math.random() * 2 ** 31) | 0);
const which = values.backend ?? process.env['WEIR_FUZZ_BACKEND'] ?? 'both';
const backends: Backend[] = which === 'both' ? ['embedded', 'jetstream'] : [which as Backend];
const minutes = values.minutes === undefined ? undefined : Number(values.minutes);

console.log(`capture fuzz: seed ${seed}, ${runs} runs per backend (${backends.join(', ')})`);
console.log(`replay: npm run fuzz -- --seed ${seed} --runs ${runs} --backend ${which}`);

let failed = false;
for (const backend of backends) {
  const started = Date.now();
  const report: FuzzReport = await runFuzz({
    backend,
    seed,
    numRuns: runs,
    shrink: values['no-shrink'] !== true,
    allowQuarantine: values['allow-quarantine'] === true,
    captureThreads: Number(values.threads ?? (backend === 'jetstream' ? 1 : 0)),
    // Long enough for ingest's timed writes (property definitions, 500 ms): a failure is then its own case's.
    settleMs: Number(values.settle ?? 700),
    ...(values.path === undefined ? {} : { path: values.path }),
    ...(minutes === undefined ? {} : { timeLimitMs: minutes * 60_000 }),
    log: (line) => console.log(line),
  });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `${backend}: ${report.ran} cases sent, ${report.skipped} skipped (the contract does not decide them), ` +
      `${report.events} events stored, statuses ${JSON.stringify(report.statuses)}, ${secs} s`,
  );
  for (const [what, problems] of [
    ['after the run', report.final],
    ['after SIGTERM and a restart', report.restart],
  ] as const) {
    if (problems.length === 0) continue;
    const allowed = (p: string): boolean => values['allow-quarantine'] === true && p.startsWith('set aside:');
    if (problems.some((p) => !allowed(p))) failed = true;
    console.log(`${backend}: ${what}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  if (report.failure !== undefined) {
    failed = true;
    // The counterexample in full (its text may be too long to print), for a regression test.
    const file = join(tmpdir(), `weir-fuzz-${backend}-${seed}.json`);
    writeFileSync(file, JSON.stringify(report.counterexample ?? null, null, 2));
    console.log(`${backend}: FAILED with seed ${seed}; the shrunk case in full: ${file}`);
  }
}
console.log(failed ? `FAIL (seed ${seed})` : `ok (seed ${seed})`);
process.exit(failed ? 1 : 0);
