/**
 * `npm run bench:capture`: the capture benchmark of issue 2. Measures the bare uWS ceiling first, then Weir
 * (a fresh embedded instance per mode), each with a fixed-rate open-loop run and a max-throughput search,
 * all from one generator process; prints the tables and writes bench/results/. Servers are measured one at
 * a time so that an idle one's background work (chDB merges) never competes with the one under test.
 * With `--bus jetstream`, issue 3's benchmark of the roles over NATS instead (run-jetstream.ts); with
 * `--ingest N` as well, issue 28's: 1…N ingest processes on the ClickHouse server store (run-jetstream-ingest.ts).
 */
import { GeneratorClient } from './generator-client.ts';
import { QuietGate } from './machine-load.ts';
import type { BenchContext } from './measure.ts';
import { fixedRate, parseOptions, USAGE, type BenchOptions } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import { consoleReport, writeResults } from './report.ts';
import {
  checkTargets,
  commandLine,
  computeRatios,
  machineInfo,
  weirRevision,
  type BenchResults,
  type ModeResults,
  type TargetResults,
} from './results.ts';
import { benchJetStream } from './run-jetstream.ts';
import { benchJetStreamIngest } from './run-jetstream-ingest.ts';
import { runFixedRate } from './scenario-fixed-rate.ts';
import { runMaxThroughput } from './scenario-max-throughput.ts';
import { startBareUws, startWeir, type Target } from './targets.ts';

type Measured = Omit<TargetResults, 'log' | 'exit'>;

async function measureMode(bench: BenchContext, target: Target, mode: Mode): Promise<Measured> {
  bench.progress(`${target.kind}, ${mode} mode`);
  const fixed = await runFixedRate(bench, target, mode, fixedRate(bench.options, mode));
  const max = bench.options.skipMax ? undefined : await runMaxThroughput(bench, target, mode);
  return { fixed, max };
}

/** Runs every mode on one server; the server is stopped whatever happens. */
async function onServer(
  bench: BenchContext,
  start: () => Promise<Target>,
  modes: readonly Mode[],
): Promise<Map<Mode, TargetResults>> {
  const target = await start();
  const measured = new Map<Mode, Measured>();
  let exit: number | string;
  try {
    for (const mode of modes) measured.set(mode, await measureMode(bench, target, mode));
  } finally {
    exit = await target.stop();
  }
  const log = target.log();
  return new Map([...measured].map(([mode, m]) => [mode, { ...m, log, exit }]));
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  let options: BenchOptions | 'help';
  try {
    options = parseOptions(args);
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const startedAt = new Date().toISOString();
  const generator = GeneratorClient.start();
  const bench: BenchContext = {
    generator,
    options,
    // At most 10 s before any one run and 8 runs made again, so a machine that never calms down still
    // gets a bench of bounded length.
    quiet: new QuietGate(options.quietWaitMs, 10_000, options.quietWaitMs > 0 ? 8 : 0),
    progress: (line) => process.stderr.write(`${line}\n`),
  };
  try {
    if (options.bus === 'embedded') return await benchEmbedded(bench, args, startedAt);
    return options.ingest === undefined
      ? await benchJetStream(bench, args, startedAt)
      : await benchJetStreamIngest(bench, args, startedAt);
  } finally {
    await generator.stop();
  }
}

/** Bare uWS, then embedded Weir afresh for each mode; writes the results; resolves with the exit code. */
async function benchEmbedded(
  bench: BenchContext,
  args: readonly string[],
  startedAt: string,
): Promise<number> {
  const { options } = bench;
  const modes: ModeResults[] = [];
  const bare = await onServer(bench, startBareUws, options.modes);
  // Weir starts afresh for each mode: the batch mode's figures should not depend on the rows (and the
  // merges) the single-event runs left behind.
  const weir = new Map<Mode, TargetResults>();
  for (const mode of options.modes)
    for (const [m, r] of await onServer(bench, startWeir, [mode])) weir.set(m, r);
  for (const mode of options.modes) {
    const b = bare.get(mode)!;
    const w = weir.get(mode)!;
    modes.push({ mode, bare: b, weir: w, ratios: computeRatios(b, w) });
  }

  const results: BenchResults = {
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    weirRevision: weirRevision(),
    options,
    modes,
    targets: checkTargets(modes, options),
  };
  const files = writeResults(results, options.outDir);
  const written = [files.json, files.md, ...(files.svg === undefined ? [] : [files.svg])];
  console.log(`\n${consoleReport(results)}\n\nwrote ${written.join('\n      ')}`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    // The 'exit' handler in child-processes.ts kills any server or generator still running.
    process.exit(1);
  },
);
