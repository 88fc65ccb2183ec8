/**
 * End-to-end lag during a run (JetStream mode, the batch fixed-rate run: 200 req/s, 20,000 events/s by
 * default): while the generator loads capture open loop, the lag sampler sends a tagged event every 50 ms.
 * The lags themselves are computed once Weir has stopped (see lag-sampler.ts), from the samples kept here.
 */
import { LagSampler, type LagSample } from './lag-sampler.ts';
import type { RunSpec } from './measure.ts';

export const LAG_INTERVAL_MS = 50;

export interface LagRun {
  readonly intervalMs: number;
  readonly samples: readonly LagSample[];
  /** Wall-clock µs the sampler ran between: the events of this run. */
  readonly window: { readonly fromUs: number; readonly toUs: number };
}

/**
 * Runs a sampler alongside a measured run (`RunSpec.alongside`). A run made again after contention starts
 * it afresh: the samples kept are those of the attempt that counts.
 */
export class LagProbe implements NonNullable<RunSpec['alongside']> {
  readonly #baseUrl: string;
  #sampler: LagSampler | undefined;
  #run: LagRun | undefined;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  async start(): Promise<void> {
    this.#sampler = await LagSampler.start(this.#baseUrl, LAG_INTERVAL_MS);
  }

  async stop(): Promise<void> {
    const sampler = this.#sampler;
    if (!sampler) return;
    const samples = await sampler.stop();
    this.#run = { intervalMs: LAG_INTERVAL_MS, samples, window: sampler.window };
  }

  /** The samples of the last run, if one ran. */
  get run(): LagRun | undefined {
    return this.#run;
  }
}
