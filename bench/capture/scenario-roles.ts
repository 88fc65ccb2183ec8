/**
 * Weir's roles over JetStream measured one way, whatever runs them — one `weir ingest` on the embedded store
 * (run-jetstream.ts) or several on the ClickHouse server store (run-jetstream-ingest.ts): the first-sight
 * warm-up and the fixed-rate run, then the max-throughput search; in batch mode the end-to-end lag is
 * sampled during the fixed-rate run and during every step. The roles are stopped before the lags are read:
 * the embedded store can only be read once its one owner is gone, and on the server store reading after
 * the stop keeps the queries out of the measured runs.
 */
import type { LagMeasured } from './jetstream-results.ts';
import { lagResult, type SqlRunner } from './lag-sampler.ts';
import type { BenchContext } from './measure.ts';
import { fixedRate } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import type { TargetResults } from './results.ts';
import { runFixedRate, type FixedRateResult } from './scenario-fixed-rate.ts';
import { LagProbe, type LagRun } from './scenario-lag.ts';
import { runMaxThroughput, type MaxThroughputResult } from './scenario-max-throughput.ts';
import { HOST, type Target } from './targets.ts';

export interface RolesMeasured {
  readonly weir: TargetResults;
  /** Batch mode only: the lag sampled during the fixed-rate run, and the lags computed from it. */
  readonly lag: LagMeasured | undefined;
  /** Batch mode only: the lag sampled during the highest max-throughput step sustained. */
  readonly sustainedLag: LagMeasured | undefined;
}

/**
 * Measures `weir` in `mode`, stops it (whatever happens), then reads the lags with `sql`, which must work
 * once the roles have stopped.
 */
export async function measureRoles(
  bench: BenchContext,
  weir: Target,
  mode: Mode,
  sql: SqlRunner,
): Promise<RolesMeasured> {
  const { options } = bench;
  let exit: number | string;
  let fixed: FixedRateResult;
  let max: MaxThroughputResult | undefined;
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
  const lags = async (run: LagRun | undefined, name: string): Promise<LagMeasured | undefined> => {
    if (!run) return undefined;
    const result = await lagResult(run.samples, run.window, run.intervalMs, sql);
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
  return { weir: { fixed, max, log: weir.log(), exit }, lag, sustainedLag };
}
