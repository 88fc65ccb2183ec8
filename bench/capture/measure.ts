/**
 * One measured run against one server: the server's counters and CPU before and after, the generator's
 * run in between. Every scenario is made of these, so every figure in the report is computed one way.
 */
import type { GeneratorClient, GeneratorRun } from './generator-client.ts';
import type { LoadResult } from '../../src/loadgen/load-generator.ts';
import { failedRequests } from '../../src/loadgen/max-throughput.ts';
import { CONTENDED_CORES, OtherLoadProbe, type QuietGate } from './machine-load.ts';
import type { BenchOptions } from './options.ts';
import { EVENTS_PER_BATCH, type Mode } from '../../src/loadgen/payloads.ts';
import { HOST, type Target, type TargetKind } from './targets.ts';
import { diffCounters, type WeirCounters } from './weir-metrics.ts';

export interface BenchContext {
  readonly generator: GeneratorClient;
  readonly options: BenchOptions;
  readonly quiet: QuietGate;
  /** Progress lines, to stderr, so stdout holds only the results. */
  progress(line: string): void;
}

export interface Measurement {
  readonly target: TargetKind;
  readonly mode: Mode;
  readonly load: LoadResult;
  readonly meanBodyBytes: number;
  /** Events in requests answered 200, per second. */
  readonly okEventsPerSecond: number;
  /**
   * Events Weir committed during the run, per second (weir_ingest_events_total); undefined for bare uWS.
   * With a bus between capture and ingest, counted until ingest caught up (at most `catchUpAllowanceMs`
   * after the run) and divided by the run's time plus that catch-up.
   */
  readonly storedEventsPerSecond: number | undefined;
  /** With a bus: how long after the run ingest took to store everything answered 200; undefined without. */
  readonly catchUpMs: number | undefined;
  /** With a bus: whether ingest caught up within the allowance (if not, the rate was not sustained). */
  readonly caughtUp: boolean | undefined;
  /** With a bus: how long ingest was given to catch up (catchUpAllowance of the run's duration). */
  readonly catchUpAllowanceMs: number | undefined;
  /** Requests not answered 200 for any reason: 503, other status, lost connection, timeout, never sent. */
  readonly failed: number;
  /** Server CPU during the run, in cores (2.0 = both cores of this machine). */
  readonly serverCpuCores: number | undefined;
  /** The same by process, for a server made of several (capture, ingest, nats-server). */
  readonly serverCpuByRole: Readonly<Record<string, number | undefined>>;
  /** What Weir's counters moved by during the run. */
  readonly weir: WeirCounters | undefined;
  /** Cores used by processes other than the bench's own during the run (other work on a shared machine). */
  readonly otherCpuCores: number | undefined;
  /** Cores the hypervisor gave to other guests during the run (see `OtherLoadProbe.stealCores`). */
  readonly stealCpuCores: number | undefined;
  /**
   * The server was still busy with an earlier run's work when this one began (it did not settle within
   * SETTLE_TIMEOUT_MS): its stored figure includes some of that work.
   */
  readonly startedBehind: boolean;
  /** Time spent waiting for a quiet machine before the run. */
  readonly quietWaitMs: number;
  /** 2 when the first attempt was contended and the run was made again. */
  readonly attempts: number;
}

const MIN_CPU_SECONDS = 0.5;

/** The longest a run waits for the server to finish an earlier run's leftovers. */
const SETTLE_TIMEOUT_MS = 30_000;

/**
 * With a bus: how long after a run ingest may take to store what was answered 200 and still count as
 * keeping up — a tenth of the run (at least 250 ms, for the pipeline's own latency): ingest then stored at
 * least ~90% as fast as capture acknowledged. A fixed second would pass a 3-second step offered a third
 * more than ingest takes.
 */
export function catchUpAllowance(durationMs: number): number {
  return Math.max(250, Math.round(durationMs / 10));
}

export function contended(m: Measurement): boolean {
  return (m.otherCpuCores ?? 0) + (m.stealCpuCores ?? 0) > CONTENDED_CORES;
}

/** One run to measure. */
export interface RunSpec {
  readonly mode: Mode;
  /** Requests per second (open loop), or null for closed loop. */
  readonly rate: number | null;
  readonly durationMs: number;
  /** Closed loop only: stop after this many requests. */
  readonly maxRequests?: number;
  /** Whether a contended run should be made again; by default, always. */
  readonly retryIf?: (m: Measurement) => boolean;
  /** Something to run exactly while the generator does (started just before it, stopped just after). */
  readonly alongside?: { start(): Promise<void>; stop(): Promise<void> };
}

export function eventsPerRequest(mode: Mode): number {
  return mode === 'single' ? 1 : EVENTS_PER_BATCH;
}

/**
 * Runs the generator against `target`: open loop at `rate` req/s, or closed loop when rate is null. A run
 * that lost CPU to other work and whose outcome `retryIf` dislikes is made once more, after waiting for
 * quiet; the report says so.
 */
export async function measure(bench: BenchContext, target: Target, run: RunSpec): Promise<Measurement> {
  const first = await measureOnce(bench, target, run, 1);
  const retry = run.retryIf ?? (() => true);
  if (!contended(first) || !retry(first) || !bench.quiet.takeRetry()) return first;
  bench.progress(
    `  (other work took ${first.otherCpuCores?.toFixed(2)} cores and the hypervisor ` +
      `${first.stealCpuCores?.toFixed(2)} during that run: once more)`,
  );
  return measureOnce(bench, target, run, 2);
}

async function measureOnce(
  bench: BenchContext,
  target: Target,
  run: RunSpec,
  attempts: number,
): Promise<Measurement> {
  const { mode, rate, durationMs } = run;
  const startedBehind = !(await target.settle(SETTLE_TIMEOUT_MS));
  const pids = [...target.pids, bench.generator.pid];
  const quietWaitMs = await bench.quiet.wait(pids);
  const probe = new OtherLoadProbe(pids);
  const before = await target.snapshot();
  await run.alongside?.start();
  let generated: GeneratorRun;
  try {
    generated = await bench.generator.run({
      host: HOST,
      port: target.port,
      mode,
      rate,
      durationMs,
      connections: bench.options.connections,
      drainMs: bench.options.drainMs,
      maxRequests: run.maxRequests ?? null,
    });
  } finally {
    await run.alongside?.stop();
  }
  const { result: load, meanBodyBytes } = generated;
  let catchUpMs: number | undefined;
  let caughtUp: boolean | undefined;
  const catchUpAllowanceMs = target.decoupled ? catchUpAllowance(durationMs) : undefined;
  if (catchUpAllowanceMs !== undefined) {
    const started = performance.now();
    caughtUp = await target.settle(catchUpAllowanceMs);
    catchUpMs = performance.now() - started;
  }
  const after = await target.snapshot();
  const otherCpuCores = probe.otherCores();
  const stealCpuCores = probe.stealCores();
  const seconds = (load.elapsedMs + (catchUpMs ?? 0)) / 1000;
  const weir = after.weir && before.weir ? diffCounters(after.weir, before.weir) : undefined;
  // /proc counts CPU in 10 ms ticks: over a run shorter than half a second the figure would be noise.
  const cores = (a: number | undefined, b: number | undefined): number | undefined =>
    a !== undefined && b !== undefined && seconds >= MIN_CPU_SECONDS ? (a - b) / seconds : undefined;
  const serverCpuByRole: Record<string, number | undefined> = {};
  for (const [role, cpu] of Object.entries(after.cpuSecondsByRole))
    serverCpuByRole[role] = cores(cpu, before.cpuSecondsByRole[role]);
  return {
    target: target.kind,
    mode,
    load,
    meanBodyBytes,
    okEventsPerSecond: (load.ok * eventsPerRequest(mode)) / (load.elapsedMs / 1000),
    storedEventsPerSecond: weir ? weir.storedEvents / seconds : undefined,
    catchUpMs,
    caughtUp,
    catchUpAllowanceMs,
    failed: failedRequests(load),
    serverCpuCores: cores(after.cpuSeconds, before.cpuSeconds),
    serverCpuByRole,
    weir,
    otherCpuCores,
    stealCpuCores,
    startedBehind,
    quietWaitMs,
    attempts,
  };
}

/** One line of progress for the console while a run goes on. */
export function describe(m: Measurement): string {
  const rate = m.load.spec.rate === null ? 'closed loop' : `${m.load.spec.rate} req/s`;
  const stored =
    m.storedEventsPerSecond === undefined ? '' : `, ${Math.round(m.storedEventsPerSecond)} ev/s stored`;
  const caughtUp =
    m.caughtUp === undefined
      ? ''
      : m.caughtUp
        ? ` (caught up in ${Math.round(m.catchUpMs ?? 0)} ms)`
        : ` (ingest NOT caught up ${m.catchUpAllowanceMs} ms after)`;
  const roles = Object.entries(m.serverCpuByRole)
    .map(([role, cores]) => `${role} ${cores?.toFixed(2)}`)
    .join(' ');
  return (
    `${m.target} ${m.mode} @ ${rate}: ${Math.round(m.load.okPerSecond)} ok/s${stored}${caughtUp}, ` +
    `p50 ${m.load.latency.p50} ms, p99 ${m.load.latency.p99} ms, p99.9 ${m.load.latency.p999} ms, ` +
    `failed ${m.failed}, cpu server ${m.serverCpuCores?.toFixed(2)}${roles ? ` (${roles})` : ''} ` +
    `gen ${m.load.generatorCpuCores.toFixed(2)} other ${m.otherCpuCores?.toFixed(2)} ` +
    `steal ${m.stealCpuCores?.toFixed(2)}`
  );
}
