/**
 * Runs of the endpoint three ways, each at 1 and 50 callers, in one run of the benchmark:
 * - direct: `refresh: "direct"`, the raw events through the engine (what the endpoint costs unmaterialized);
 * - materialized: `refresh: "force"`, which skips the cache but is answered from the materialization;
 * - cached: `refresh: "cache"`, every value's answer already cached (each sent once before timing).
 * The callers (bench/endpoints/load.ts, in their own process, closed loop over keep-alive HTTP) send the
 * variable values in turn, so consecutive runs differ. Before each scenario the runner waits, within a
 * budget, for a quiet machine; the CPU that went elsewhere while it was timed is recorded beside it.
 */
import { runCallers } from '../endpoints/callers.ts';
import type { QuietGate } from '../capture/machine-load.ts';
import { KEY, runBody, variableValues, type BenchClient, type Refresh } from './endpoint.ts';

export type Mode = 'direct' | 'materialized' | 'cached';
export const REFRESH: Readonly<Record<Mode, Refresh>> = {
  direct: 'direct',
  materialized: 'force',
  cached: 'cache',
};

export interface RunsRow {
  readonly mode: Mode;
  readonly callers: number;
  readonly requests: number;
  /** Distinct variable values sent in turn. */
  readonly values: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly perSecond: number;
  /** Cores: Weir's process (pool threads and engine included), the callers', everything else, steal. */
  readonly weirCpu: number;
  readonly callerCpu: number;
  readonly otherCores: number | undefined;
  readonly stealCores: number | undefined;
  /** Milliseconds waited for a quiet machine first. */
  readonly waitedMs: number;
  readonly statuses: Record<string, number>;
}

export interface RunsPlan {
  readonly mode: Mode;
  readonly callers: number;
  readonly requests: number;
  /** Untimed requests first (connections, JIT); a direct run costs seconds at 50 callers, so fewer. */
  readonly warmup: number;
}

export async function measureRuns(client: BenchClient, plan: RunsPlan, gate: QuietGate): Promise<RunsRow> {
  const values = variableValues();
  const bodies = values.map((v) => runBody(v, REFRESH[plan.mode]));
  if (plan.mode === 'cached') for (const v of values) await client.run(v, 'cache');
  const waitedMs = await gate.wait([]);
  const { result, weirCpu, otherCores, stealCores } = await runCallers({
    url: client.runUrl,
    key: KEY,
    body: bodies[0]!,
    bodies,
    concurrency: plan.callers,
    requests: plan.requests,
    warmup: plan.warmup,
  });
  const sorted = result.latenciesMs;
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    mode: plan.mode,
    callers: plan.callers,
    requests: sorted.length,
    values: bodies.length,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: sorted[sorted.length - 1]!,
    perSecond: sorted.length / result.seconds,
    weirCpu,
    callerCpu: result.cpuCores,
    otherCores,
    stealCores,
    waitedMs,
    statuses: result.statuses,
  };
}
