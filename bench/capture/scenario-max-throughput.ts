/**
 * Scenario: the most requests per second a server sustains. A closed-loop probe (every connection sends
 * again as soon as it is answered) finds where the server saturates; open-loop runs then search below that
 * rate for the highest one sustained: at least 97% of the offered rate answered 200, at most 0.1% of
 * requests failed, p99 (measured from the due time) within the bound, and — behind a bus — ingest caught
 * up soon after the run's end (measure.ts: catchUpAllowance). A closed-loop figure alone would flatter a server that stalls, since
 * a stalled closed loop simply stops offering load.
 *
 * The search below the probe and the judgement of a step are the product's (src/loadgen/max-throughput.ts,
 * what `weir bench capture --max` runs), so the two find a server's figure the same way. (Bisecting from
 * 20-90% three times, as before, put a server that missed 90% by a hair at 81.25%, while one that held 90%
 * was never tried higher.) Behind a bus, where the probe can understate what is sustained, a sustained
 * first step is followed by a climb instead.
 */
import {
  describe,
  eventsPerRequest,
  measure,
  type BenchContext,
  type Measurement,
  type RunSpec,
} from './measure.ts';
import {
  BISECTIONS,
  FIRST_FRACTION,
  MIN_SEARCH_RATE,
  PAUSE_MS,
  judgeLoad,
  searchBelowProbe,
} from '../../src/loadgen/max-throughput.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import type { Target } from './targets.ts';

/** Behind a bus: how many times, and by what factor, the rate goes up after a sustained first step. */
const CLIMBS = 3;
const CLIMB_FACTOR = 1.5;

export interface StepResult {
  readonly rate: number;
  readonly sustained: boolean;
  /** Why the step was not sustained; empty when it was. */
  readonly reasons: readonly string[];
  readonly measurement: Measurement;
}

export interface MaxThroughputResult {
  readonly saturation: Measurement;
  readonly steps: readonly StepResult[];
  /** The highest step sustained, if any. */
  readonly sustained: StepResult | undefined;
}

/** Whether a run at `rate` counts as sustained, and if not, why. */
export function judgeStep(m: Measurement, rate: number, maxP99Ms: number): string[] {
  const reasons = judgeLoad(m.load, rate, maxP99Ms);
  if (m.caughtUp === false) reasons.push(`ingest still behind ${m.catchUpAllowanceMs} ms after the run`);
  return reasons;
}

/**
 * The request rate the search starts from: what the probe got answered 200 — or, behind a bus, what ingest
 * stored, if less (capture may be acknowledged far faster than ingest keeps up).
 */
export function probeCeiling(saturation: Measurement): number {
  const ok = saturation.load.okPerSecond;
  if (saturation.caughtUp === undefined || saturation.storedEventsPerSecond === undefined) return ok;
  return Math.min(ok, saturation.storedEventsPerSecond / eventsPerRequest(saturation.mode));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Behind a bus the probe can understate the ceiling (capture and ingest share the cores, and a closed loop
 * lets capture starve ingest), so a sustained first step is not taken as "near the ceiling": the rate goes
 * up by half while steps hold (at most CLIMBS times), then bisects BISECTIONS times between the last step
 * that held and the first that did not.
 */
async function climb(held: StepResult, tryRate: (rate: number) => Promise<StepResult>): Promise<StepResult> {
  let best = held;
  let failedRate: number | undefined;
  for (let i = 0; i < CLIMBS && failedRate === undefined; i++) {
    const step = await tryRate(Math.round(best.rate * CLIMB_FACTOR));
    if (step.sustained) best = step;
    else failedRate = step.rate;
  }
  // Then bisect as the search below the probe does, so both end within the same few percent: one
  // bisection left a gap of a quarter (e.g. 489 held, 612 did not, nothing tried between).
  let hi = failedRate;
  for (let i = 0; i < BISECTIONS && hi !== undefined; i++) {
    const mid = Math.round((best.rate + hi) / 2);
    if (mid <= best.rate || mid >= hi) break;
    const step = await tryRate(mid);
    if (step.sustained) best = step;
    else hi = mid;
  }
  return best;
}

export async function runMaxThroughput(
  bench: BenchContext,
  target: Target,
  mode: Mode,
  /** A rate already known to be sustained, or nearly: the search starts no lower. */
  floorRate = 0,
  /** Something to run alongside each step (not the probe), made afresh for each step's rate. */
  alongsideStep?: (rate: number) => RunSpec['alongside'],
): Promise<MaxThroughputResult> {
  const { stepMs, maxP99Ms } = bench.options;
  const saturation = await measure(bench, target, { mode, rate: null, durationMs: stepMs });
  bench.progress(`  probe     ${describe(saturation)}`);
  const ceiling = Math.max(probeCeiling(saturation), floorRate);
  const steps: StepResult[] = [];
  if (ceiling < MIN_SEARCH_RATE) return { saturation, steps, sustained: undefined };

  const tryRate = async (rate: number): Promise<StepResult> => {
    await sleep(PAUSE_MS);
    const failing = (m: Measurement): boolean => judgeStep(m, rate, maxP99Ms).length > 0;
    const measurement = await measure(bench, target, {
      mode,
      rate,
      durationMs: stepMs,
      retryIf: failing,
      alongside: alongsideStep?.(rate),
    });
    const reasons = judgeStep(measurement, rate, maxP99Ms);
    const step: StepResult = { rate, sustained: reasons.length === 0, reasons, measurement };
    steps.push(step);
    bench.progress(
      `  step      ${describe(measurement)}${step.sustained ? '  ✓' : `  ✗ ${reasons.join('; ')}`}`,
    );
    return step;
  };
  const tryFraction = (fraction: number): Promise<StepResult> => tryRate(Math.round(ceiling * fraction));

  if (target.decoupled) {
    const first = await tryFraction(FIRST_FRACTION);
    if (first.sustained) return { saturation, steps, sustained: await climb(first, tryRate) };
  }
  const best = await searchBelowProbe(tryFraction, target.decoupled ? [FIRST_FRACTION] : []);
  return { saturation, steps, sustained: best };
}
