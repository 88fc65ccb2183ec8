/**
 * The search for the highest request rate a server sustains under a p99 bound. A closed-loop probe (every
 * connection sends again as soon as it is answered) finds where the server saturates; open-loop runs then
 * search below that rate: at least 97% of the offered rate answered 200, at most 0.1% of requests failed,
 * and p99 (measured from the due time) within the bound. A closed-loop figure alone would flatter a server
 * that stalls, since a stalled closed loop simply stops offering load.
 *
 * The search (searchBelowProbe) tries 90% of the probe first. From there it walks in steps of 5% of the
 * probe — up to 100% while steps hold, down to 70% until one holds — and then tries the midpoint of the gap
 * between the highest step held and the lowest failed: a server's figure is within 2.5% of the probe rate
 * of the highest rate it sustains, in at most six steps, whichever side of 90% that is. Below 70% it
 * bisects 20-70% three times.
 */
import { runLoad, type LoadResult, type LoadSpec } from './load-generator.ts';
import type { Payloads } from './payloads.ts';

export const FIRST_FRACTION = 0.9;
/** The walk from the first step, up or down, in fractions of the probe rate. */
const WALK_STEP = 0.05;
const WALK_HIGHEST = 1.0;
const WALK_LOWEST = 0.7;
const LOWEST_FRACTION = 0.2;
export const BISECTIONS = 3;
const MIN_OK_FRACTION = 0.97;
const MAX_FAILED_FRACTION = 0.001;
/** Below this a saturation probe found a broken server, not a slow one: there is nothing to search. */
export const MIN_SEARCH_RATE = 50;
/** Lets the server settle (GC, store merges) between steps so one step's debt is not billed to the next. */
export const PAUSE_MS = 500;

/** Requests not answered 200 for any reason: 503, other status, lost connection, timeout, never sent. */
export function failedRequests(load: LoadResult): number {
  const otherStatuses = Object.values(load.otherStatus).reduce((a, b) => a + b, 0);
  return load.unavailable + otherStatuses + load.connectionErrors + load.timedOut + load.unsent;
}

/** Why a run at `rate` does not count as sustained; empty when it does. */
export function judgeLoad(load: LoadResult, rate: number, maxP99Ms: number): string[] {
  const reasons: string[] = [];
  const failed = failedRequests(load);
  if (load.okPerSecond < rate * MIN_OK_FRACTION)
    reasons.push(`only ${Math.round(load.okPerSecond)} of ${rate} req/s answered 200`);
  if (failed > load.scheduled * MAX_FAILED_FRACTION)
    reasons.push(`${failed} of ${load.scheduled} requests failed`);
  if (load.latency.p99 > maxP99Ms) reasons.push(`p99 ${load.latency.p99.toFixed(1)} ms > ${maxP99Ms} ms`);
  return reasons;
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

export interface Step {
  readonly rate: number;
  readonly sustained: boolean;
  /** Why the step was not sustained; empty when it was. */
  readonly reasons: readonly string[];
  readonly load: LoadResult;
}

export interface MaxRateResult {
  /** The closed-loop run whose answered rate the search starts from. */
  readonly probe: LoadResult;
  readonly steps: readonly Step[];
  /** The highest step sustained, if any. */
  readonly sustained: Step | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Probes `base`'s server closed loop, then searches open loop for the highest rate sustained within
 * `maxP99Ms`, each step as long as `base.durationMs`. `onStep` sees the probe (rate null) and each step.
 */
export async function searchMaxRate(
  base: Omit<LoadSpec, 'rate'>,
  payloads: Payloads,
  maxP99Ms: number,
  onStep: (rate: number | null, load: LoadResult, reasons: readonly string[]) => void = () => undefined,
): Promise<MaxRateResult> {
  const probe = await runLoad({ ...base, rate: null }, payloads);
  onStep(null, probe, []);
  const steps: Step[] = [];
  const ceiling = probe.okPerSecond;
  if (ceiling < MIN_SEARCH_RATE) return { probe, steps, sustained: undefined };
  const sustained = await searchBelowProbe(async (fraction): Promise<Step> => {
    await sleep(PAUSE_MS);
    const rate = Math.round(ceiling * fraction);
    const load = await runLoad({ ...base, rate }, payloads);
    const reasons = judgeLoad(load, rate, maxP99Ms);
    onStep(rate, load, reasons);
    const step: Step = { rate, sustained: reasons.length === 0, reasons, load };
    steps.push(step);
    return step;
  });
  return { probe, steps, sustained };
}
