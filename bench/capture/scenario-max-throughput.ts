/**
 * Scenario: the most requests per second a server sustains. A closed-loop probe (every connection sends
 * again as soon as it is answered) finds where the server saturates; open-loop runs then search below that
 * rate for the highest one sustained: at least 97% of the offered rate answered 200, at most 0.1% of
 * requests failed, p99 (measured from the due time) within the bound, and — behind a bus — ingest caught
 * up soon after the run's end (measure.ts: catchUpAllowance). A closed-loop figure alone would flatter a server that stalls, since
 * a stalled closed loop simply stops offering load.
 *
 * The search (searchBelowProbe) tries 90% of the probe first. From there it walks in steps of 5% of the
 * probe — up to 100% while steps hold, down to 70% until one holds — and then tries the midpoint of the gap
 * between the highest step held and the lowest failed: a server's figure is within 2.5% of the probe rate
 * of the highest rate it sustains, in at most six steps, whichever side of 90% that is. (Bisecting from
 * 20-90% three times, as before, put a server that missed 90% by a hair at 81.25%, while one that held 90%
 * was never tried higher.) Below 70% it bisects 20-70% three times. Behind a bus, where the probe can
 * understate what is sustained, a sustained first step is followed by a climb instead.
 */
import {
  describe,
  eventsPerRequest,
  measure,
  type BenchContext,
  type Measurement,
  type RunSpec,
} from './measure.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import type { Target } from './targets.ts';

const FIRST_FRACTION = 0.9;
/** The walk from the first step, up or down, in fractions of the probe rate. */
const WALK_STEP = 0.05;
const WALK_HIGHEST = 1.0;
const WALK_LOWEST = 0.7;
const LOWEST_FRACTION = 0.2;
const BISECTIONS = 3;
const MIN_OK_FRACTION = 0.97;
const MAX_FAILED_FRACTION = 0.001;
/** Below this a saturation probe found a broken server, not a slow one: there is nothing to search. */
const MIN_SEARCH_RATE = 50;
/** Behind a bus: how many times, and by what factor, the rate goes up after a sustained first step. */
const CLIMBS = 3;
const CLIMB_FACTOR = 1.5;
/** Lets the server settle (GC, store merges) between steps so one step's debt is not billed to the next. */
const PAUSE_MS = 500;

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
  const reasons: string[] = [];
  if (m.load.okPerSecond < rate * MIN_OK_FRACTION)
    reasons.push(`only ${Math.round(m.load.okPerSecond)} of ${rate} req/s answered 200`);
  if (m.failed > m.load.scheduled * MAX_FAILED_FRACTION)
    reasons.push(`${m.failed} of ${m.load.scheduled} requests failed`);
  if (m.load.latency.p99 > maxP99Ms) reasons.push(`p99 ${m.load.latency.p99.toFixed(1)} ms > ${maxP99Ms} ms`);
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

/** A step of the search: whether the server sustained that fraction of the probe rate. */
export interface Tried {
  readonly sustained: boolean;
}

/**
 * The highest fraction of the probe rate sustained, as the header says: 90%, a walk in 5% steps (up to
 * 100% or down to 70%), then the midpoint between the highest held and the lowest failed; below 70%, three
 * bisections of 20-70% and the floor. `failed`: fractions already tried and not sustained (the search
 * starts below the lowest of them).
 */
export async function searchBelowProbe<T extends Tried>(
  tryFraction: (fraction: number) => Promise<T>,
  failed: readonly number[] = [],
): Promise<T | undefined> {
  let best: T | undefined;
  let bestFraction = 0;
  let failedAt = failed.length > 0 ? Math.min(...failed) : Infinity;
  const attempt = async (fraction: number): Promise<boolean> => {
    const step = await tryFraction(fraction);
    if (step.sustained && fraction > bestFraction) {
      best = step;
      bestFraction = fraction;
    } else if (!step.sustained) failedAt = Math.min(failedAt, fraction);
    return step.sustained;
  };
  const round = (f: number): number => Math.round(f * 1000) / 1000;

  // The walk: up from 90% while steps hold, else down until one does.
  let fraction = Math.min(FIRST_FRACTION, round(failedAt - WALK_STEP));
  if (await attempt(fraction)) {
    const next = (): number => round(fraction + WALK_STEP);
    while (fraction < WALK_HIGHEST && next() < failedAt && (await attempt(next()))) fraction = next();
  } else {
    while (fraction > WALK_LOWEST && !(await attempt(round(fraction - WALK_STEP))))
      fraction = round(fraction - WALK_STEP);
  }
  if (best) {
    // The gap between the highest held and the lowest failed (one walking step), halved.
    if (failedAt !== Infinity) await attempt(round((bestFraction + failedAt) / 2));
    return best;
  }

  // Nothing held down to the walk's end: bisect what is left, then try the floor.
  let lo = LOWEST_FRACTION;
  let hi = failedAt;
  for (let i = 0; i < BISECTIONS; i++) {
    const mid = round((lo + hi) / 2);
    if (await attempt(mid)) lo = mid;
    else hi = mid;
  }
  if (!best) await attempt(LOWEST_FRACTION);
  return best;
}
