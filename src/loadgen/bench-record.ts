/**
 * The result file of `weir bench capture`: the run's parameters, its figures and its HDR histograms, as
 * JSON. `weir bench compare` reads two of them back, so the format is versioned and checked on read: a
 * file from elsewhere fails with what is wrong rather than as NaNs in a table.
 */
import { readFileSync } from 'node:fs';
import type { LatencySummary, LoadResult } from './load-generator.ts';
import type { MaxRateResult } from './max-throughput.ts';
import type { Mode } from './payloads.ts';

export const RECORD_KIND = 'weir-bench-capture';
export const RECORD_VERSION = 1;

export interface RunParameters {
  /** The capture endpoint's base URL (never its credentials). */
  readonly url: string;
  readonly mode: Mode;
  readonly eventsPerRequest: number;
  /** The offered rate of the fixed-rate run; with `max`, the highest rate sustained (null: none). */
  readonly rate: number | null;
  /** Whether the rate was found by the max-throughput search. */
  readonly max: boolean;
  /** Length of the run (with `max`: of each step), seconds. */
  readonly durationS: number;
  readonly connections: number;
  /** The p99 bound of the search, ms. */
  readonly maxP99Ms: number;
  readonly meanBodyBytes: number;
}

export interface RunFigures {
  readonly elapsedMs: number;
  readonly scheduled: number;
  readonly sent: number;
  /** Responses by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Requests lost with their connection, and the first reason seen. */
  readonly connectionErrors: number;
  readonly firstConnectionError?: string;
  /** Still unanswered when the run's drain ended. */
  readonly timedOut: number;
  /** Due but never written (every connection held until the end). */
  readonly unsent: number;
  readonly sentPerSecond: number;
  readonly okPerSecond: number;
  /** Events in requests answered 200, per second. */
  readonly okEventsPerSecond: number;
  /** From the time each request was due (open loop): what a client sees. */
  readonly latency: LatencySummary;
  /** From the write to the response: the server alone. */
  readonly service: LatencySummary;
  /** From due time to the write: the generator's lateness plus waiting for a free connection. */
  readonly sendLag: LatencySummary;
  readonly generatorCpuCores: number;
}

export interface SearchStep {
  /** The offered rate; null for the closed-loop probe. */
  readonly rate: number | null;
  readonly sustained: boolean;
  readonly reasons: readonly string[];
  readonly okPerSecond: number;
  readonly p99: number;
}

export interface BenchRecord {
  readonly kind: typeof RECORD_KIND;
  readonly version: typeof RECORD_VERSION;
  /** What compare and plots call this run. */
  readonly label: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly parameters: RunParameters;
  readonly figures: RunFigures;
  /** HdrHistogram V2 compressed, base64, of microseconds (hdr-histogram-js, HdrHistogram's other ports). */
  readonly histograms: { readonly latency: string; readonly service: string };
  /** With `max`: the probe and every step of the search. */
  readonly search?: readonly SearchStep[];
}

export function statusCounts(load: LoadResult): Record<string, number> {
  const statuses: Record<string, number> = {};
  if (load.ok) statuses['200'] = load.ok;
  if (load.unavailable) statuses['503'] = load.unavailable;
  for (const [status, n] of Object.entries(load.otherStatus)) statuses[status] = n;
  return statuses;
}

export function figures(load: LoadResult, eventsPerRequest: number): RunFigures {
  return {
    elapsedMs: Math.round(load.elapsedMs),
    scheduled: load.scheduled,
    sent: load.sent,
    statuses: statusCounts(load),
    connectionErrors: load.connectionErrors,
    ...(load.firstConnectionError === undefined ? {} : { firstConnectionError: load.firstConnectionError }),
    timedOut: load.timedOut,
    unsent: load.unsent,
    sentPerSecond: load.sentPerSecond,
    okPerSecond: load.okPerSecond,
    okEventsPerSecond: load.okPerSecond * eventsPerRequest,
    latency: load.latency,
    service: load.service,
    sendLag: load.sendLag,
    generatorCpuCores: load.generatorCpuCores,
  };
}

export function searchSteps(search: MaxRateResult): SearchStep[] {
  const probe: SearchStep = {
    rate: null,
    sustained: false,
    reasons: [],
    okPerSecond: search.probe.okPerSecond,
    p99: search.probe.latency.p99,
  };
  return [
    probe,
    ...search.steps.map((s) => ({
      rate: s.rate,
      sustained: s.sustained,
      reasons: s.reasons,
      okPerSecond: s.load.okPerSecond,
      p99: s.load.latency.p99,
    })),
  ];
}

/** Thrown when a file is not a result of `weir bench capture`; the message says which file and why. */
export class RecordError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function need(ok: boolean, path: string, what: string): void {
  if (!ok) throw new RecordError(`${path}: ${what}`);
}

/** Reads and checks a result file: the fields compare and the plot use must be there and of their type. */
export function readRecord(path: string): BenchRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new RecordError(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  need(isObject(parsed) && parsed['kind'] === RECORD_KIND, path, `not a ${RECORD_KIND} result file`);
  const r = parsed as Record<string, unknown>;
  need(r['version'] === RECORD_VERSION, path, `version ${String(r['version'])}, expected ${RECORD_VERSION}`);
  const f = r['figures'];
  const h = r['histograms'];
  need(isObject(r['parameters']), path, 'no parameters');
  need(isObject(f) && isObject(f['latency']) && isObject(f['statuses']), path, 'no figures');
  need(isObject(h) && typeof h['latency'] === 'string', path, 'no latency histogram');
  const latency = (f as Record<string, Record<string, unknown>>)['latency']!;
  for (const key of ['p50', 'p90', 'p99', 'p999', 'max', 'mean', 'count'])
    need(typeof latency[key] === 'number', path, `figures.latency.${key} is not a number`);
  for (const key of ['sent', 'sentPerSecond', 'okPerSecond', 'okEventsPerSecond'])
    need(typeof (f as Record<string, unknown>)[key] === 'number', path, `figures.${key} is not a number`);
  need(typeof r['label'] === 'string', path, 'no label');
  return parsed as BenchRecord;
}
