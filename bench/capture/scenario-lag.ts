/**
 * Scenario (JetStream mode): end-to-end lag at a fixed batch rate (200 req/s, 20,000 events/s by default).
 * The generator loads capture open loop while the lag sampler sends a tagged event every 50 ms; the lags
 * themselves are computed once Weir has stopped (see lag-sampler.ts), from the samples kept here.
 */
import { LagSampler, type LagSample } from './lag-sampler.ts';
import { describe, measure, type BenchContext, type Measurement } from './measure.ts';
import { HOST, type Target } from './targets.ts';

export const LAG_INTERVAL_MS = 50;

export interface LagRun {
  readonly rate: number;
  readonly intervalMs: number;
  readonly measurement: Measurement;
  readonly samples: readonly LagSample[];
  /** Wall-clock µs the sampler ran between: the events of this run. */
  readonly window: { readonly fromUs: number; readonly toUs: number };
}

export async function runLagScenario(bench: BenchContext, target: Target, rate: number): Promise<LagRun> {
  let sampler: LagSampler | undefined;
  let samples: LagSample[] = [];
  const measurement = await measure(bench, target, {
    mode: 'batch',
    rate,
    durationMs: bench.options.durationMs,
    // Not made again on contention: the samples would span both attempts.
    retryIf: () => false,
    alongside: {
      async start() {
        sampler = await LagSampler.start(`http://${HOST}:${target.port}`, LAG_INTERVAL_MS);
      },
      async stop() {
        samples = (await sampler?.stop()) ?? [];
      },
    },
  });
  bench.progress(`  lag run   ${describe(measurement)}, ${samples.length} lag samples`);
  return {
    rate,
    intervalMs: LAG_INTERVAL_MS,
    measurement,
    samples,
    window: sampler?.window ?? { fromUs: 0, toUs: 0 },
  };
}
