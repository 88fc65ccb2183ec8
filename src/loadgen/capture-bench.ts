/**
 * One `weir bench capture`: a fixed-rate open-loop run, or the max-throughput search, against any capture
 * endpoint that speaks PostHog's `/i/v0/e/` and `/batch/`, turned into a result record. The generator runs
 * in this process: the command does nothing else, so it has the event loop to itself.
 */
import { runLoad, type LoadResult } from './load-generator.ts';
import { searchMaxRate } from './max-throughput.ts';
import { buildPayloads, type Mode } from './payloads.ts';
import { figures, RECORD_KIND, RECORD_VERSION, searchSteps, type BenchRecord } from './bench-record.ts';

export interface CaptureBenchSpec {
  /** The capture endpoint's base URL: `http(s)://host[:port][/prefix]`. */
  readonly url: URL;
  readonly apiKey: string;
  readonly mode: Mode;
  readonly batchSize: number;
  /** Requests per second of a fixed-rate run; null searches the highest rate sustained (`--max`). */
  readonly rate: number | null;
  readonly durationMs: number;
  readonly connections: number;
  readonly maxP99Ms: number;
  readonly label: string;
}

/** After the schedule ends, how long backlogged and in-flight requests may still finish (the bench's 3 s). */
const DRAIN_MS = 3000;

/** The URL without credentials, query or fragment: what a result file may show. */
export function publicUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** Runs the benchmark; `progress` gets a line per run (the probe and each step of a search). */
export async function runCaptureBench(
  spec: CaptureBenchSpec,
  progress: (line: string) => void = () => undefined,
): Promise<BenchRecord> {
  const tls = spec.url.protocol === 'https:';
  const port = spec.url.port === '' ? (tls ? 443 : 80) : Number(spec.url.port);
  // URL keeps IPv6 literals in brackets; sockets want them bare.
  const host = spec.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const payloads = buildPayloads(spec.mode, {
    apiKey: spec.apiKey,
    host: spec.url.host,
    batchSize: spec.batchSize,
    basePath: spec.url.pathname.replace(/\/+$/, ''),
  });
  const base = {
    host,
    port,
    tls,
    mode: spec.mode,
    durationMs: spec.durationMs,
    connections: spec.connections,
    drainMs: DRAIN_MS,
    maxRequests: null,
  };
  const startedAt = new Date().toISOString();
  let load: LoadResult;
  let rate: number | null;
  let search: BenchRecord['search'];
  if (spec.rate !== null) {
    load = await runLoad({ ...base, rate: spec.rate }, payloads);
    rate = spec.rate;
  } else {
    const found = await searchMaxRate(base, payloads, spec.maxP99Ms, (stepRate, l, reasons) => {
      const what = stepRate === null ? 'probe (closed loop)' : `${stepRate} req/s`;
      const verdict =
        stepRate === null ? '' : reasons.length === 0 ? '  sustained' : `  not: ${reasons.join('; ')}`;
      progress(`${what}: ${Math.round(l.okPerSecond)} ok/s, p99 ${l.latency.p99} ms${verdict}`);
    });
    // Without a sustained step the record holds the probe: still the server's figures, under no bound.
    load = found.sustained?.load ?? found.probe;
    rate = found.sustained?.rate ?? null;
    search = searchSteps(found);
  }
  return {
    kind: RECORD_KIND,
    version: RECORD_VERSION,
    label: spec.label,
    startedAt,
    finishedAt: new Date().toISOString(),
    parameters: {
      url: publicUrl(spec.url),
      mode: spec.mode,
      eventsPerRequest: payloads.eventsPerRequest,
      rate,
      max: spec.rate === null,
      durationS: spec.durationMs / 1000,
      connections: spec.connections,
      maxP99Ms: spec.maxP99Ms,
      meanBodyBytes: payloads.meanBodyBytes,
    },
    figures: figures(load, payloads.eventsPerRequest),
    histograms: { latency: load.latencyHistogram, service: load.serviceHistogram },
    ...(search === undefined ? {} : { search }),
  };
}
