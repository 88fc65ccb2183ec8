/**
 * `npm run bench:capture -- --bus jetstream`: issue 3's benchmark. For each mode, on a fresh nats-server:
 * the raw JetStream ceiling first (nothing else running), then Weir's roles (one `weir ingest`, one
 * `weir capture`) measured like the embedded Weir — first sight, fixed rate, max-throughput search. In
 * batch mode the end-to-end lag is sampled during the fixed-rate run and read from the store once ingest
 * has stopped.
 */
import os from 'node:os';
import { measureCeiling } from './jetstream-ceiling.ts';
import { jetStreamConsoleReport, writeJetStreamResults } from './jetstream-report.ts';
import {
  ceilingRatio,
  checkJetStreamTargets,
  type JetStreamBenchResults,
  type JetStreamModeResults,
  type LagMeasured,
} from './jetstream-results.ts';
import { startWeirJetStream } from './jetstream-target.ts';
import { lagResult } from './lag-sampler.ts';
import type { BenchContext } from './measure.ts';
import { startNats } from './nats-server.ts';
import { fixedRate } from './options.ts';
import type { Mode } from './payloads.ts';
import { commandLine, machineInfo, weirRevision } from './results.ts';
import { HOST } from './targets.ts';
import { runFixedRate } from './scenario-fixed-rate.ts';
import { LagProbe, type LagRun } from './scenario-lag.ts';
import { runMaxThroughput } from './scenario-max-throughput.ts';

async function measureMode(bench: BenchContext, mode: Mode): Promise<JetStreamModeResults> {
  const { options } = bench;
  const nats = await startNats();
  try {
    bench.progress(`raw JetStream ceiling, ${mode} messages`);
    const ceiling = await measureCeiling(bench, nats, mode, options.ceilingMs);
    bench.progress(
      `  ceiling   ${Math.round(ceiling.publishesPerSecond)} acked publishes/s of ${Math.round(ceiling.meanMessageBytes)} B ` +
        `(${ceiling.megabytesPerSecond.toFixed(1)} MB/s, ${Math.round(ceiling.eventsPerSecond)} events/s), ` +
        `ack p99 ${ceiling.ackLatency.p99} ms, cpu publisher ${ceiling.publisherCpuCores.toFixed(2)} ` +
        `nats ${ceiling.natsCpuCores?.toFixed(2)} other ${ceiling.otherCpuCores?.toFixed(2)}`,
    );
    bench.progress(`Weir over JetStream (weir capture + weir ingest), ${mode} mode`);
    const weir = await startWeirJetStream(nats);
    let exit: number | string;
    let fixed, max;
    // Batch mode: the fixed-rate run (20,000 events/s by default) is where issue 3 bounds the lag; it is
    // also sampled during each max-throughput step, to give the lag at the highest rate sustained.
    const url = `http://${HOST}:${weir.port}`;
    const lagProbe = mode === 'batch' ? new LagProbe(url) : undefined;
    const stepProbes = new Map<number, LagProbe>();
    const probeStep = (rate: number): LagProbe => {
      const probe = new LagProbe(url);
      stepProbes.set(rate, probe);
      return probe;
    };
    try {
      fixed = await runFixedRate(bench, weir, mode, fixedRate(options, mode), lagProbe);
      // The fixed rate, if ingest kept up with it, is a floor for the search: a closed-loop probe can
      // starve ingest of CPU and understate what the roles sustain together.
      max = options.skipMax
        ? undefined
        : await runMaxThroughput(
            bench,
            weir,
            mode,
            fixed.measurement.caughtUp ? fixed.rate : 0,
            lagProbe ? probeStep : undefined,
          );
    } finally {
      exit = await weir.stop();
    }
    try {
      const lags = async (run: LagRun | undefined, name: string): Promise<LagMeasured | undefined> => {
        if (!run) return undefined;
        const result = await lagResult(run.samples, run.window, run.intervalMs, (sql) => weir.sql(sql));
        bench.progress(
          `  lag       ${name}: ack → visible p50 ${result.lag.p50} ms, p99 ${result.lag.p99} ms ` +
            `(${result.visible} of ${result.acked} samples visible)`,
        );
        return { ...run, result };
      };
      const lag = await lags(lagProbe?.run, `fixed ${fixed.rate} req/s`);
      const sustained = max?.sustained;
      const sustainedLag = sustained
        ? await lags(stepProbes.get(sustained.rate)?.run, `sustained ${sustained.rate} req/s`)
        : undefined;
      const results = { fixed, max, log: weir.log(), exit };
      return { mode, ceiling, weir: results, lag, sustainedLag, ratio: ceilingRatio(results, ceiling) };
    } finally {
      weir.removeData();
    }
  } finally {
    await nats.stop();
  }
}

/** Runs the JetStream mode and writes its results; resolves with the exit code. */
export async function benchJetStream(
  bench: BenchContext,
  args: readonly string[],
  startedAt: string,
): Promise<number> {
  const loadAtStart = os.loadavg()[0] ?? 0;
  const modes: JetStreamModeResults[] = [];
  for (const mode of bench.options.modes) modes.push(await measureMode(bench, mode));
  const results: JetStreamBenchResults = {
    bus: 'jetstream',
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    loadAverage: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
    weirRevision: weirRevision(),
    options: bench.options,
    modes,
    targets: checkJetStreamTargets(modes, bench.options),
  };
  const files = writeJetStreamResults(results, bench.options.outDir);
  console.log(`\n${jetStreamConsoleReport(results)}\n\nwrote ${files.json}\n      ${files.md}`);
  return 0;
}
