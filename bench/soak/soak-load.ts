/**
 * The soak's load: single events and batches at once, each from its own load-generator process, open loop
 * at a fixed rate for the whole soak. One generator run is one IPC call with a deadline, so the soak is
 * made of consecutive runs of a few tens of seconds per generator, started together; each run's figures
 * are kept, and the soak's are their sums.
 */
import type { GeneratorClient } from '../capture/generator-client.ts';
import { eventsPerRequest } from '../capture/measure.ts';
import { HOST } from '../capture/targets.ts';
import type { LoadResult } from '../../src/loadgen/load-generator.ts';
import { failedRequests } from '../../src/loadgen/max-throughput.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';

/** How long requests may still finish after a run's schedule ends (as bench:capture's default). */
const DRAIN_MS = 3000;
/** A run shorter than this at the end of the soak is not worth its connection set-up. */
const MIN_RUN_MS = 2000;
/** Seconds between two requests on one connection, at the soak's rate (see connectionsFor). */
const CONNECTION_REUSE_S = 4;

/**
 * Keep-alive connections for a rate. The generator uses its connections in turn, so each must carry a
 * request more often than Weir's keep-alive timeout (uWS: 10 s) closes an idle one — a request written as
 * the server closes it is lost, the generator's doing, not Weir's — while still riding out a stall of a few
 * seconds at the full rate.
 */
export function connectionsFor(rate: number, most: number): number {
  return Math.max(2, Math.min(most, Math.round(rate * CONNECTION_REUSE_S)));
}

export const MODES: readonly Mode[] = ['single', 'batch'];

/** One generator run of the soak, without its histograms. */
export interface SoakRun {
  readonly mode: Mode;
  /** Seconds since the soak began, when the run was asked for. */
  readonly startedAt: number;
  readonly rate: number;
  readonly connections: number;
  readonly durationMs: number;
  readonly elapsedMs: number;
  readonly scheduled: number;
  readonly sent: number;
  readonly ok: number;
  /** Responses by status code, 200 included. */
  readonly statuses: Readonly<Record<string, number>>;
  readonly connectionErrors: number;
  readonly firstConnectionError: string | undefined;
  readonly timedOut: number;
  readonly unsent: number;
  /** Requests not answered 200 for any reason. */
  readonly failed: number;
  readonly okPerSecond: number;
  /** Milliseconds, from due time. */
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly generatorCpuCores: number;
}

function summarizeRun(mode: Mode, startedAt: number, load: LoadResult): SoakRun {
  const statuses: Record<string, number> = { ...load.otherStatus };
  if (load.ok > 0) statuses['200'] = load.ok;
  if (load.unavailable > 0) statuses['503'] = load.unavailable;
  return {
    mode,
    startedAt,
    rate: load.spec.rate ?? 0,
    connections: load.spec.connections,
    durationMs: load.spec.durationMs,
    elapsedMs: load.elapsedMs,
    scheduled: load.scheduled,
    sent: load.sent,
    ok: load.ok,
    statuses,
    connectionErrors: load.connectionErrors,
    firstConnectionError: load.firstConnectionError,
    timedOut: load.timedOut,
    unsent: load.unsent,
    failed: failedRequests(load),
    okPerSecond: load.okPerSecond,
    p50: load.latency.p50,
    p99: load.latency.p99,
    p999: load.latency.p999,
    max: load.latency.max,
    generatorCpuCores: load.generatorCpuCores,
  };
}

/** A mode's runs added up. */
export interface ModeTotals {
  readonly mode: Mode;
  readonly rate: number;
  readonly runs: number;
  readonly scheduled: number;
  readonly sent: number;
  readonly ok: number;
  /** Events in requests answered 200: what Weir acknowledged as stored (or published). */
  readonly acknowledgedEvents: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly connectionErrors: number;
  readonly timedOut: number;
  readonly unsent: number;
  readonly failed: number;
  /** The worst run's p99 and max, ms. */
  readonly worstP99: number;
  readonly max: number;
}

export function totals(mode: Mode, rate: number, runs: readonly SoakRun[]): ModeTotals {
  const mine = runs.filter((r) => r.mode === mode);
  const sum = (f: (r: SoakRun) => number): number => mine.reduce((a, r) => a + f(r), 0);
  const statuses: Record<string, number> = {};
  for (const r of mine)
    for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  const ok = sum((r) => r.ok);
  return {
    mode,
    rate,
    runs: mine.length,
    scheduled: sum((r) => r.scheduled),
    sent: sum((r) => r.sent),
    ok,
    acknowledgedEvents: ok * eventsPerRequest(mode),
    statuses,
    connectionErrors: sum((r) => r.connectionErrors),
    timedOut: sum((r) => r.timedOut),
    unsent: sum((r) => r.unsent),
    failed: sum((r) => r.failed),
    worstP99: Math.max(0, ...mine.map((r) => r.p99)),
    max: Math.max(0, ...mine.map((r) => r.max)),
  };
}

export interface SoakLoadSpec {
  readonly port: number;
  readonly rates: Readonly<Record<Mode, number>>;
  readonly generators: Readonly<Record<Mode, GeneratorClient>>;
  readonly totalMs: number;
  readonly runMs: number;
  /** The most keep-alive connections a generator holds (fewer at low rates: connectionsFor). */
  readonly connections: number;
  /** Called after each round of runs (one per mode). */
  readonly onRound: (runs: readonly SoakRun[]) => void;
}

/**
 * Runs both modes side by side until `totalMs` of wall time has passed since the call; each round's length
 * is what is left, at most `runMs`, so set-up and drain between rounds do not lengthen the soak.
 */
export async function soakLoad(spec: SoakLoadSpec): Promise<SoakRun[]> {
  const started = performance.now();
  const runs: SoakRun[] = [];
  for (;;) {
    const left = spec.totalMs - (performance.now() - started);
    if (left < MIN_RUN_MS) break;
    const durationMs = Math.round(Math.min(spec.runMs, left));
    const startedAt = Math.round((performance.now() - started) / 100) / 10;
    const round = await Promise.all(
      MODES.map(async (mode) => {
        const { result } = await spec.generators[mode].run({
          host: HOST,
          port: spec.port,
          mode,
          rate: spec.rates[mode],
          durationMs,
          connections: connectionsFor(spec.rates[mode], spec.connections),
          drainMs: DRAIN_MS,
          maxRequests: null,
        });
        return summarizeRun(mode, startedAt, result);
      }),
    );
    runs.push(...round);
    spec.onRound(round);
  }
  return runs;
}
