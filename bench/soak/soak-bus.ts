/**
 * One bus's soak, on a fresh Weir: the max-rate search for single and batch (the capture bench's, on the
 * same Weir), then both modes at once at their share of it for the soak's length, memory sampled all the
 * while; then, once the store has caught up, what was acknowledged against what was stored, counted twice
 * (Weir's ingest counter and a count through the query API).
 */
import type { GeneratorClient } from '../capture/generator-client.ts';
import { OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import type { BenchContext } from '../capture/measure.ts';
import { startNats } from '../capture/nats-server.ts';
import { parseOptions as parseCaptureOptions, type BenchOptions } from '../capture/options.ts';
import { probeCeiling, runMaxThroughput } from '../capture/scenario-max-throughput.ts';
import type { ServerLog } from '../capture/targets.ts';
import { diffCounters, readWeirCounters, type WeirCounters } from '../capture/weir-metrics.ts';
import { processCpuSeconds } from '../capture/child-processes.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import { MemorySampler, memoryTrend, type MemorySample, type Trend } from './memory.ts';
import type { SoakBus, SoakOptions } from './options.ts';
import { MODES, soakLoad, totals, type ModeTotals, type SoakRun } from './soak-load.ts';
import { startSoakWeir, type SoakWeir } from './soak-weir.ts';

/** The most the memory of the soak's last part may grow, in % of its mean per minute. */
export const MAX_TREND_PERCENT_PER_MINUTE = 1;
/** The window the trend is fitted over: the last 5 minutes, or the last half of a shorter soak. */
const TREND_WINDOW_S = 300;
/** Longest wait for the store to catch up, before the soak and after it. */
const CATCH_UP_MS = 120_000;
const POLL_MS = 250;

export interface SoakGenerators {
  readonly single: GeneratorClient;
  readonly batch: GeneratorClient;
}

export interface MaxRate {
  readonly mode: Mode;
  /** Requests/s the closed-loop probe got answered (or, over JetStream, stored). */
  readonly probe: number;
  /** The highest step sustained; undefined when none was. */
  readonly sustained: number | undefined;
  /** What the soak's rate is a share of: the sustained rate, or half the probe when nothing held. */
  readonly used: number;
  readonly steps: readonly { rate: number; sustained: boolean; reasons: readonly string[] }[];
}

export interface StoredCheck {
  readonly acknowledgedEvents: number;
  /** weir_ingest_events_total's increase over the soak. */
  readonly storedByCounter: number;
  /** `SELECT count() FROM events` after the soak less before it; undefined when the query failed. */
  readonly storedByQuery: number | undefined;
  readonly queryError: string | undefined;
  /** Time from the end of the load until both counts stopped short of nothing (or the deadline). */
  readonly catchUpMs: number;
  readonly caughtUp: boolean;
}

export interface BusResult {
  readonly bus: SoakBus;
  readonly startedAt: string;
  readonly maxRates: readonly MaxRate[];
  readonly rates: Readonly<Record<Mode, number>>;
  readonly soakSeconds: number;
  readonly runs: readonly SoakRun[];
  readonly totals: readonly ModeTotals[];
  readonly stored: StoredCheck;
  /** Weir's own counters over the soak (capture statuses, drops, insert errors). */
  readonly weir: WeirCounters;
  readonly weirCpuCores: number | undefined;
  readonly natsCpuCores: number | undefined;
  readonly otherCpuCores: number | undefined;
  readonly stealCpuCores: number | undefined;
  readonly samples: readonly MemorySample[];
  readonly trend: Trend | undefined;
  /** Whether the search ran on a Weir of its own (--fresh), not on the one soaked. */
  readonly freshWeir: boolean;
  readonly anonTrend: Trend | undefined;
  readonly brkTrend: Trend | undefined;
  readonly heapTrend: Trend | undefined;
  readonly log: ServerLog;
  readonly exit: number | string;
  readonly checks: { readonly stored: boolean; readonly noErrors: boolean; readonly memory: boolean };
}

/** What the soak measured while Weir ran; the memory verdict and the log come once it has stopped. */
type Measured = Omit<
  BusResult,
  'freshWeir' | 'samples' | 'trend' | 'anonTrend' | 'brkTrend' | 'heapTrend' | 'log' | 'exit' | 'checks'
>;

export interface SoakContext {
  readonly options: SoakOptions;
  readonly generators: SoakGenerators;
  progress(line: string): void;
}

/** The capture bench's options with the soak's search settings, for its max-rate search. */
function searchOptions(options: SoakOptions): BenchOptions {
  const defaults = parseCaptureOptions([]);
  if (defaults === 'help') throw new Error('unreachable');
  return {
    ...defaults,
    stepMs: options.stepSeconds * 1000,
    maxP99Ms: options.maxP99Ms,
    connections: options.connections,
  };
}

async function searchMax(ctx: SoakContext, weir: SoakWeir, mode: Mode): Promise<MaxRate> {
  const bench: BenchContext = {
    generator: ctx.generators.single,
    options: searchOptions(ctx.options),
    // A shared machine: wait a little for quiet, and make a contended failing step again a few times.
    quiet: new QuietGate(20_000, 5_000, 4),
    progress: (line) => ctx.progress(line),
  };
  ctx.progress(`${weir.bus}: max-rate search, ${mode}`);
  const result = await runMaxThroughput(bench, weir, mode);
  const probe = probeCeiling(result.saturation);
  const sustained = result.sustained?.rate;
  return {
    mode,
    probe,
    sustained,
    used: sustained ?? Math.round(probe / 2),
    steps: result.steps.map((s) => ({ rate: s.rate, sustained: s.sustained, reasons: s.reasons })),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls until `done` holds or the deadline passes; resolves with the last value and whether it held.
 * Catching up is waited for, never slept on.
 */
async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<{ value: T; held: boolean; ms: number }> {
  const started = performance.now();
  for (;;) {
    const value = await read();
    if (done(value)) return { value, held: true, ms: performance.now() - started };
    if (performance.now() - started >= timeoutMs)
      return { value, held: false, ms: performance.now() - started };
    await sleep(POLL_MS);
  }
}

interface StoreCounts {
  readonly counters: WeirCounters;
  readonly rows: number | undefined;
  readonly queryError: string | undefined;
}

async function storeCounts(weir: SoakWeir): Promise<StoreCounts> {
  const counters = await readWeirCounters(weir.baseUrl);
  try {
    return { counters, rows: await weir.countEvents(), queryError: undefined };
  } catch (err) {
    return { counters, rows: undefined, queryError: err instanceof Error ? err.message : String(err) };
  }
}

/** Statuses other than 200 in a record of counts by status. */
function errorStatuses(statuses: Readonly<Record<string, number>>): number {
  return Object.entries(statuses).reduce((n, [code, count]) => n + (code === '200' ? 0 : count), 0);
}

/** What the search found: each mode's max, and the soak's rates (each mode's share of its max). */
interface Found {
  readonly maxRates: readonly MaxRate[];
  readonly rates: Readonly<Record<Mode, number>>;
}

interface OnWeir<T> {
  readonly value: T;
  readonly samples: MemorySample[];
  readonly log: ServerLog;
  readonly exit: number | string;
}

/** Runs `body` on a fresh Weir (and nats-server) sampled from its start; both are stopped whatever happens. */
async function onFreshWeir<T>(
  ctx: SoakContext,
  bus: SoakBus,
  body: (weir: SoakWeir, sampler: MemorySampler) => Promise<T>,
): Promise<OnWeir<T>> {
  const nats = bus === 'jetstream' ? await startNats() : undefined;
  try {
    const weir = await startSoakWeir(bus, nats);
    const sampler = new MemorySampler(weir.pid, weir.baseUrl, ctx.options.sampleSeconds * 1000, nats?.pid);
    sampler.start();
    let value: T;
    let exit: number | string;
    try {
      value = await body(weir, sampler);
    } finally {
      await sampler.stop();
      exit = await weir.stop();
    }
    return { value, samples: sampler.samples(), log: weir.log(), exit };
  } finally {
    await nats?.stop();
  }
}

export async function soakBus(ctx: SoakContext, bus: SoakBus): Promise<BusResult> {
  const startedAt = new Date().toISOString();
  // With --fresh the search runs on a Weir of its own: saturation leaves memory that malloc keeps, and a
  // soak that starts below that high-water mark can grow into it unseen.
  const given = ctx.options.rates;
  const searched = given
    ? { maxRates: [], rates: given }
    : ctx.options.fresh
      ? (await onFreshWeir(ctx, bus, (weir) => searchRates(ctx, weir))).value
      : undefined;
  const run = await onFreshWeir(ctx, bus, async (weir, sampler) =>
    soakAt(ctx, weir, sampler, startedAt, searched ?? (await searchRates(ctx, weir))),
  );
  const measured = run.value;
  const samples = run.samples;
  const from = measured.soakSeconds - Math.min(TREND_WINDOW_S, measured.soakSeconds / 2);
  const trend = memoryTrend(samples, from);
  const anonTrend = memoryTrend(samples, from, (s) => s.rssAnonBytes);
  const brkTrend = memoryTrend(samples, from, (s) => s.brkHeapBytes);
  const heapTrend = memoryTrend(samples, from, (s) => s.heapUsedBytes);
  const { stored } = measured;
  const checks = {
    stored:
      stored.storedByCounter === stored.acknowledgedEvents &&
      stored.storedByQuery === stored.acknowledgedEvents,
    noErrors:
      measured.totals.every((t) => t.failed === 0 && errorStatuses(t.statuses) === 0) &&
      errorStatuses(measured.weir.requestsByStatus) === 0 &&
      measured.weir.insertErrors === 0,
    memory: trend !== undefined && trend.percentPerMinute <= MAX_TREND_PERCENT_PER_MINUTE,
  };
  return {
    ...measured,
    freshWeir: ctx.options.fresh,
    samples,
    trend,
    anonTrend,
    brkTrend,
    heapTrend,
    log: run.log,
    exit: run.exit,
    checks,
  };
}

async function searchRates(ctx: SoakContext, weir: SoakWeir): Promise<Found> {
  const maxRates: MaxRate[] = [];
  for (const mode of MODES) maxRates.push(await searchMax(ctx, weir, mode));
  const rates = Object.fromEntries(
    maxRates.map((m) => [m.mode, Math.max(1, Math.round((m.used * ctx.options.fraction) / 2))]),
  ) as Record<Mode, number>;
  return { maxRates, rates };
}

async function soakAt(
  ctx: SoakContext,
  weir: SoakWeir,
  sampler: MemorySampler,
  startedAt: string,
  { maxRates, rates }: Found,
): Promise<Measured> {
  const { options } = ctx;

  // The search's leftovers are stored before the soak begins, so the soak's counts are its own.
  await weir.settle(CATCH_UP_MS);
  const before = await pollUntil(
    () => storeCounts(weir),
    (c) => c.rows === c.counters.storedEvents,
    CATCH_UP_MS,
  );
  ctx.progress(
    `${weir.bus}: soak for ${options.minutes} min at single ${rates.single} req/s + batch ${rates.batch} req/s ` +
      `(${rates.single + rates.batch * 100} events/s)`,
  );

  const pids = [...weir.pids, ctx.generators.single.pid, ctx.generators.batch.pid];
  const natsPid = weir.pids[1];
  const cpuBefore = {
    weir: processCpuSeconds(weir.pid),
    nats: natsPid === undefined ? undefined : processCpuSeconds(natsPid),
  };
  const machine = new OtherLoadProbe(pids);
  const loadStarted = performance.now();
  sampler.startSoak();
  const runs = await soakLoad({
    port: weir.port,
    rates,
    generators: ctx.generators,
    totalMs: options.minutes * 60_000,
    runMs: options.runSeconds * 1000,
    connections: options.connections,
    onRound: (round) =>
      ctx.progress(
        round
          .map(
            (r) =>
              `  ${weir.bus} ${r.mode} @ ${r.rate} req/s from ${r.startedAt} s: ${r.ok} ok, ${r.failed} failed, ` +
              `p99 ${r.p99} ms, max ${r.max} ms`,
          )
          .join('\n'),
      ),
  });
  sampler.setPhase('drain');
  const soakSeconds = (performance.now() - loadStarted) / 1000;
  const cpu = (before: number | undefined, pid: number | undefined): number | undefined => {
    const after = pid === undefined ? undefined : processCpuSeconds(pid);
    return before === undefined || after === undefined ? undefined : (after - before) / soakSeconds;
  };
  const weirCpuCores = cpu(cpuBefore.weir, weir.pid);
  const natsCpuCores = cpu(cpuBefore.nats, natsPid);
  const otherCpuCores = machine.otherCores();
  const stealCpuCores = machine.stealCores();

  const modeTotals = MODES.map((mode) => totals(mode, rates[mode], runs));
  const acknowledgedEvents = modeTotals.reduce((n, t) => n + t.acknowledgedEvents, 0);
  const settleStarted = performance.now();
  await weir.settle(CATCH_UP_MS);
  const baseRows = before.value.rows ?? 0;
  const baseStored = before.value.counters.storedEvents;
  const after = await pollUntil(
    () => storeCounts(weir),
    (c) =>
      c.counters.storedEvents - baseStored >= acknowledgedEvents &&
      c.rows !== undefined &&
      c.rows - baseRows >= c.counters.storedEvents - baseStored,
    Math.max(1000, CATCH_UP_MS - (performance.now() - settleStarted)),
  );
  const stored: StoredCheck = {
    acknowledgedEvents,
    storedByCounter: after.value.counters.storedEvents - baseStored,
    storedByQuery:
      after.value.rows === undefined || before.value.rows === undefined
        ? undefined
        : after.value.rows - before.value.rows,
    queryError: after.value.queryError ?? before.value.queryError,
    catchUpMs: performance.now() - settleStarted,
    caughtUp: after.held,
  };
  ctx.progress(
    `${weir.bus}: acknowledged ${acknowledgedEvents} events, stored ${stored.storedByCounter} (counter), ` +
      `${stored.storedByQuery} (count()), caught up ${after.held ? 'in' : 'NOT within'} ${Math.round(stored.catchUpMs)} ms`,
  );
  return {
    bus: weir.bus,
    startedAt,
    maxRates,
    rates,
    soakSeconds,
    runs,
    totals: modeTotals,
    stored,
    weir: diffCounters(after.value.counters, before.value.counters),
    weirCpuCores,
    natsCpuCores,
    otherCpuCores,
    stealCpuCores,
  };
}
