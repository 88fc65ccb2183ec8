/**
 * Timing of one operation on one input: run it in a loop long enough to rise above the timer's grain,
 * several rounds, and keep the median round, so a GC pause or a JIT tier-up in one round does not decide.
 */
export interface Timing {
  /** Microseconds per call, median of the rounds. */
  readonly us: number;
  readonly calls: number;
}

export function time(fn: () => unknown, options: { minRoundMs: number; rounds: number }): Timing {
  let perRound = 1;
  for (;;) {
    const started = performance.now();
    for (let i = 0; i < perRound; i++) fn();
    if (performance.now() - started >= options.minRoundMs || perRound >= 1 << 20) break;
    perRound *= 2;
  }
  const rounds: number[] = [];
  for (let r = 0; r < options.rounds; r++) {
    const started = performance.now();
    for (let i = 0; i < perRound; i++) fn();
    rounds.push(((performance.now() - started) * 1000) / perRound);
  }
  rounds.sort((a, b) => a - b);
  return { us: rounds[Math.floor(rounds.length / 2)]!, calls: perRound * (options.rounds + 1) };
}

/** The nearest-rank percentile of `values` (0 < p ≤ 100). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
