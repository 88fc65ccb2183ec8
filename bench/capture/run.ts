/**
 * `npm run bench:capture`: the capture benchmark of issues 2 and 40. For each HTTP transport — uWS, then
 * Node's http — measures its bare ceiling first, then Weir on it (a fresh embedded instance per mode), each
 * with a fixed-rate open-loop run and a max-throughput search, all from one generator process; prints the
 * tables and writes bench/results/. Servers are measured one at a time so that an idle one's background work
 * (chDB merges) never competes with the one under test.
 * With `--bus jetstream`, issue 3's benchmark of the roles over NATS instead (run-jetstream.ts); with
 * `--ingest N` as well, issue 28's: 1…N ingest processes on the ClickHouse server store (run-jetstream-ingest.ts).
 */
import { runBench } from './child-processes.ts';
import { GeneratorClient } from './generator-client.ts';
import { QuietGate } from './machine-load.ts';
import type { BenchContext } from './measure.ts';
import {
  fixedRate,
  parseOptions,
  planTransports,
  USAGE,
  type BenchOptions,
  type BenchTransport,
  type TransportPlan,
} from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import { consoleReport, writeResults } from './report.ts';
import {
  checkTargets,
  commandLine,
  computeCrossRatios,
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
import { startBareFor, startWeir, type Target } from './targets.ts';
import { loadUws } from '../../src/http/uws-transport.ts';

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
  let plan: TransportPlan | undefined;
  if (options.bus === 'embedded') {
    // The parent loads uWS as Weir would in the children it starts, all on this same node binary.
    const uws = loadUws();
    try {
      plan = planTransports(options.transports, 'reason' in uws ? uws.reason : undefined);
    } catch (err) {
      console.error(err instanceof Error ? err.message : String(err));
      return 2;
    }
    if (plan.uwsSkipped !== undefined) process.stderr.write(`uWS left out: ${plan.uwsSkipped}\n`);
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
    if (plan !== undefined) return await benchEmbedded(bench, plan, args, startedAt);
    return options.ingest === undefined
      ? await benchJetStream(bench, args, startedAt)
      : await benchJetStreamIngest(bench, args, startedAt);
  } finally {
    await generator.stop();
  }
}

/** A transport's bare ceiling, then embedded Weir on it afresh for each mode. */
async function measurePair(bench: BenchContext, transport: BenchTransport): Promise<ModeResults[]> {
  const { modes } = bench.options;
  const bare = await onServer(bench, () => startBareFor(transport), modes);
  // Weir starts afresh for each mode: the batch mode's figures should not depend on the rows (and the
  // merges) the single-event runs left behind.
  const weir = new Map<Mode, TargetResults>();
  for (const mode of modes)
    for (const [m, r] of await onServer(bench, () => startWeir(transport), [mode])) weir.set(m, r);
  return modes.map((mode) => {
    const b = bare.get(mode)!;
    const w = weir.get(mode)!;
    return { mode, bare: b, weir: w, ratios: computeRatios(b, w) };
  });
}

/** Each transport's pair in turn; writes the results; resolves with the exit code. */
async function benchEmbedded(
  bench: BenchContext,
  plan: TransportPlan,
  args: readonly string[],
  startedAt: string,
): Promise<number> {
  const { options } = bench;
  const pairs = new Map<BenchTransport, ModeResults[]>();
  for (const transport of plan.transports) pairs.set(transport, await measurePair(bench, transport));
  const modes = pairs.get('uws') ?? [];
  const nodeModes = pairs.get('node');

  const results: BenchResults = {
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    weirRevision: weirRevision(),
    options,
    modes,
    targets: checkTargets(modes, options),
    transports: plan.transports,
    ...(plan.uwsSkipped === undefined ? {} : { uwsSkipped: plan.uwsSkipped }),
    ...(nodeModes === undefined
      ? {}
      : {
          nodeModes,
          crossRatios: computeCrossRatios(modes, nodeModes),
          nodeFigures: checkTargets(nodeModes, options, 'bare http'),
        }),
  };
  const files = writeResults(results, options.outDir);
  const written = [files.json, files.md, ...(files.svg === undefined ? [] : [files.svg])];
  console.log(`\n${consoleReport(results)}\n\nwrote ${written.join('\n      ')}`);
  return 0;
}

runBench(main);
