/**
 * CPU use of the whole machine versus the benchmark's own processes. This 2-core machine is shared (other
 * work, test suites, may run at any time), and a run that loses a core to someone else measures that, not
 * Weir. So each run records how much CPU went elsewhere, and the runner waits, within a budget, for a
 * quiet machine before it measures.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { processCpuSeconds } from './child-processes.ts';

/** Other load above this many cores during a run marks it contended in the report. */
export const CONTENDED_CORES = 0.25;
/** A one-second window with less other load than this counts as quiet. */
const QUIET_CORES = 0.15;
const QUIET_WINDOW_MS = 1000;

interface MachineTicks {
  /** Ticks the guest's CPUs ran something (steal not included). */
  readonly busy: number;
  /** Ticks the hypervisor ran someone else while this guest had work (`steal`). */
  readonly steal: number;
  readonly total: number;
}

/** Aggregate CPU ticks since boot from /proc/stat (undefined off Linux). */
function machineTicks(): MachineTicks | undefined {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const f = first.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0); // idle + iowait
    const steal = f[7] ?? 0;
    return Number.isFinite(total) ? { busy: total - idle - steal, steal, total } : undefined;
  } catch {
    return undefined;
  }
}

function ownCpuSeconds(pids: readonly number[]): number | undefined {
  const self = process.cpuUsage();
  let sum = (self.user + self.system) / 1e6;
  for (const pid of pids) {
    const s = processCpuSeconds(pid);
    if (s === undefined) return undefined;
    sum += s;
  }
  return sum;
}

/** Measures, over an interval, the cores used by processes other than the runner and `pids`. */
export class OtherLoadProbe {
  readonly #pids: readonly number[];
  readonly #ticks: MachineTicks | undefined;
  readonly #own: number | undefined;
  readonly #started = performance.now();

  constructor(pids: readonly number[]) {
    this.#pids = pids;
    this.#ticks = machineTicks();
    this.#own = ownCpuSeconds(pids);
  }

  /**
   * Cores the hypervisor gave to other guests while this machine had work (`steal` in /proc/stat), since the
   * probe began. A virtual machine's cores are shared with its neighbours: a run that lost a tenth of its
   * CPU this way measured that, not Weir (seen here: 1-10% of the CPU in runs minutes apart).
   */
  stealCores(): number | undefined {
    return this.#machineCores((t) => t.steal);
  }

  /** Cores used by everything else since the probe began; undefined when /proc cannot tell. */
  otherCores(): number | undefined {
    const machineCores = this.#machineCores((t) => t.busy);
    const own = ownCpuSeconds(this.#pids);
    if (machineCores === undefined || own === undefined || this.#own === undefined) return undefined;
    const seconds = (performance.now() - this.#started) / 1000;
    return Math.max(0, machineCores - (own - this.#own) / seconds);
  }

  /**
   * The cores the machine spent on one kind of ticks since the probe began: their share of all ticks × the
   * core count, whatever the tick rate. Undefined when /proc cannot tell, or under half a second (/proc counts
   * in 10 ms ticks: the difference would be noise).
   */
  #machineCores(kind: (ticks: MachineTicks) => number): number | undefined {
    const ticks = machineTicks();
    const seconds = (performance.now() - this.#started) / 1000;
    if (!ticks || !this.#ticks || seconds < 0.5) return undefined;
    const total = ticks.total - this.#ticks.total;
    if (total <= 0) return undefined;
    return ((kind(ticks) - kind(this.#ticks)) / total) * os.cpus().length;
  }
}

/** Waits for a quiet machine, spending at most what is left of a shared budget across the whole run. */
export class QuietGate {
  #budgetMs: number;
  readonly #maxPerWaitMs: number;
  #retries: number;

  /** `retries`: how many contended runs may be made again, over the whole benchmark. */
  constructor(totalBudgetMs: number, maxPerWaitMs: number, retries: number) {
    this.#budgetMs = totalBudgetMs;
    this.#maxPerWaitMs = maxPerWaitMs;
    this.#retries = retries;
  }

  /** Spends one retry if any is left. */
  takeRetry(): boolean {
    if (this.#retries <= 0) return false;
    this.#retries--;
    return true;
  }

  /** Resolves with how long it waited, once a one-second window was quiet or the allowance ran out. */
  async wait(pids: readonly number[]): Promise<number> {
    const started = performance.now();
    const allowance = Math.min(this.#budgetMs, this.#maxPerWaitMs);
    while (performance.now() - started < allowance) {
      const probe = new OtherLoadProbe(pids);
      await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
      const other = probe.otherCores();
      if (other === undefined || other < QUIET_CORES) break;
    }
    const waited = performance.now() - started;
    this.#budgetMs = Math.max(0, this.#budgetMs - waited);
    return waited;
  }
}
