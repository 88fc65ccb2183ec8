/**
 * The shape of a JetStream-mode run's results (what bench/results/capture-jetstream-*.json holds), Weir's
 * stored events/s as a share of the raw JetStream ceiling's, and issue 3's targets checked against them.
 */
import type { CeilingResult } from './jetstream-ceiling.ts';
import type { LagResult } from './lag-sampler.ts';
import type { BenchOptions, NatsSync } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import type { TargetCheck, TargetResults } from './results.ts';
import type { LagRun } from './scenario-lag.ts';

/** Samples taken during a run, and the lags computed from them once ingest had stopped. */
export type LagMeasured = LagRun & { readonly result: LagResult };

export interface JetStreamModeResults {
  readonly mode: Mode;
  /** The server's JetStream sync setting for this run. */
  readonly sync: NatsSync;
  readonly natsVersion: string;
  readonly ceiling: CeilingResult;
  readonly weir: TargetResults;
  /** Batch mode only: the lag sampled during the fixed-rate run, and the lags computed from it. */
  readonly lag: LagMeasured | undefined;
  /** Batch mode only: the lag sampled during the highest max-throughput step sustained. */
  readonly sustainedLag: LagMeasured | undefined;
  /** Weir's highest sustained stored events/s ÷ the ceiling's events/s. */
  readonly ratio: number | undefined;
}

export interface JetStreamBenchResults {
  readonly bus: 'jetstream';
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly machine: Readonly<Record<string, string | number>>;
  /** `uptime`'s 1-minute load average when the bench started and when it finished. */
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly weirRevision: string;
  readonly options: BenchOptions;
  readonly modes: readonly JetStreamModeResults[];
  readonly targets: readonly TargetCheck[];
}

/** A run's name in the tables: its mode, and its sync setting where that is not the server's default. */
export function runName(r: JetStreamModeResults): string {
  return r.sync === 'always' ? `${r.mode}, sync always` : r.mode;
}

export function ceilingRatio(weir: TargetResults, ceiling: CeilingResult): number | undefined {
  const stored = weir.max?.sustained?.measurement.storedEventsPerSecond;
  return stored === undefined || ceiling.eventsPerSecond === 0 ? undefined : stored / ceiling.eventsPerSecond;
}

const LAG_P99_BOUND_MS = 2000;
const LAG_TARGET_RATE = 200;

/** Issue 3's two targets, each with the figure it was judged on. Undefined `met`: not measured. */
export function checkJetStreamTargets(
  modes: readonly JetStreamModeResults[],
  options: BenchOptions,
): TargetCheck[] {
  const batch = modes.find((m) => m.mode === 'batch');
  if (!batch) return [];
  const stored = batch.weir.max?.sustained?.measurement.storedEventsPerSecond;
  const checks: TargetCheck[] = [
    {
      target: 'batch mode ≥ 50,000 events/s stored (max sustained)',
      measured: stored === undefined ? 'no sustained rate found' : `${Math.round(stored)} events/s`,
      met: options.skipMax ? undefined : stored !== undefined && stored >= 50_000,
    },
  ];
  const lag = batch.lag;
  if (lag) {
    const { rate, measurement: m } = batch.weir.fixed;
    const r = lag.result;
    const kept = m.load.okPerSecond >= rate * 0.97 && m.failed <= m.load.scheduled * 0.001;
    const lost = r.acked - r.visible;
    checks.push({
      target: `end-to-end lag p99 ≤ 2 s at 20,000 events/s (${LAG_TARGET_RATE} batch req/s)`,
      measured:
        `lag p99 ${Math.round(r.lag.p99)} ms (${r.visible} of ${r.acked} samples visible) at ` +
        `${Math.round(m.load.okPerSecond)} ok req/s, ${Math.round(m.storedEventsPerSecond ?? 0)} events/s stored, ` +
        `${m.failed} failed`,
      met:
        rate === LAG_TARGET_RATE
          ? r.acked > 0 && lost === 0 && kept && r.lag.p99 <= LAG_P99_BOUND_MS
          : undefined,
    });
  }
  return checks;
}
