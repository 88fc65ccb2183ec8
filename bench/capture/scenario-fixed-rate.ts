/**
 * Scenario: open-loop load at one fixed rate (single-event 5,000 req/s by default; batch 500 req/s, i.e.
 * 50,000 events/s). Answers "what latency does a client see at this load?", and, second by second, whether
 * that latency holds or the server stalls now and then.
 *
 * It is preceded by a "first sight" warm-up: closed loop until every distinct id has been sent once. The
 * first event of a distinct id makes Weir create a person, which costs far more than a known id's event;
 * left in the measured run, that one-off cost would be all it measured. The warm-up's own throughput is
 * kept and reported, as the rate at which Weir takes in new users.
 */
import type { Second } from '../../src/loadgen/load-generator.ts';
import { describe, measure, type BenchContext, type Measurement, type RunSpec } from './measure.ts';
import { DISTINCT_IDS, EVENTS_PER_BATCH, type Mode } from '../../src/loadgen/payloads.ts';
import type { Target } from './targets.ts';

export interface FixedRateResult {
  readonly rate: number;
  /** The first-sight warm-up (every distinct id once, closed loop), unless it was skipped. */
  readonly firstSight: Measurement | undefined;
  readonly measurement: Measurement;
  /** Median of the per-second p99s: the latency of a typical second. */
  readonly typicalSecondP99: number | undefined;
  /** The second with the highest p99. */
  readonly worstSecond: Second | undefined;
  /** Seconds whose p99 was over 3× the typical second's (and over 5 ms): stalls, not noise. */
  readonly stalls: readonly Second[];
}

const STALL_FACTOR = 3;
const STALL_FLOOR_MS = 5;

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Seconds after the schedule ended hold only the drain, a few stragglers: not a second of traffic. */
function scheduledSeconds(m: Measurement): Second[] {
  const end = Math.ceil(m.load.spec.durationMs / 1000);
  return m.load.timeline.filter((s) => s.second < end);
}

export function analyzeSeconds(m: Measurement): Omit<FixedRateResult, 'rate' | 'measurement' | 'firstSight'> {
  const seconds = scheduledSeconds(m);
  const typical = median(seconds.map((s) => s.p99));
  let worst: Second | undefined;
  for (const s of m.load.timeline) if (!worst || s.p99 > worst.p99) worst = s;
  const limit = Math.max(STALL_FLOOR_MS, (typical ?? 0) * STALL_FACTOR);
  return {
    typicalSecondP99: typical,
    worstSecond: worst,
    stalls: seconds.filter((s) => s.p99 > limit),
  };
}

export async function runFixedRate(
  bench: BenchContext,
  target: Target,
  mode: Mode,
  rate: number,
  alongside?: RunSpec['alongside'],
): Promise<FixedRateResult> {
  const { warmupMs, durationMs } = bench.options;
  let firstSight: Measurement | undefined;
  if (warmupMs > 0) {
    const maxRequests = mode === 'single' ? DISTINCT_IDS : DISTINCT_IDS / EVENTS_PER_BATCH;
    // Not made again on contention: a second pass would no longer see new ids.
    firstSight = await measure(bench, target, {
      mode,
      rate: null,
      durationMs: warmupMs,
      maxRequests,
      retryIf: () => false,
    });
    bench.progress(`  1st sight ${describe(firstSight)}`);
  }
  const measurement = await measure(bench, target, { mode, rate, durationMs, alongside });
  const seconds = analyzeSeconds(measurement);
  const stalls = seconds.stalls.map((s) => `s${s.second} p99 ${s.p99} ms`).join(', ');
  bench.progress(`  fixed     ${describe(measurement)}${stalls ? `\n           stalls: ${stalls}` : ''}`);
  return { rate, firstSight, measurement, ...seconds };
}
