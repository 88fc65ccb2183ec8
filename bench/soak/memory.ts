/**
 * Weir's memory over a soak: resident memory from /proc (every thread's, so chDB's allocations outside the
 * JS heap count) and the JS heap from Weir's own /metrics, sampled on a fixed grid; and the trend the soak
 * is judged by, a least-squares slope over the last part of the run in % of the mean per minute.
 */
import { readFileSync } from 'node:fs';

export type Phase = 'search' | 'soak' | 'drain';

export interface MemorySample {
  /** Seconds since the soak's load began (negative during the max-rate search before it). */
  readonly t: number;
  readonly phase: Phase;
  /** VmRSS of Weir's process; RssAnon is the part no file backs (heaps, chDB's arenas). */
  readonly rssBytes: number | undefined;
  readonly rssAnonBytes: number | undefined;
  /**
   * The resident part of the `[heap]` mapping: glibc malloc's main arena (native allocations of Node and its
   * addons), apart from V8's heap and other anonymous maps — where to look when RssAnon grows and the JS heap
   * does not.
   */
  readonly brkHeapBytes: number | undefined;
  /** From /metrics (prom-client's default metrics); undefined when the scrape failed. */
  readonly heapUsedBytes: number | undefined;
  readonly heapTotalBytes: number | undefined;
  readonly externalBytes: number | undefined;
  /** nats-server's VmRSS, on the JetStream soak. */
  readonly natsRssBytes: number | undefined;
}

/** VmRSS and RssAnon of a process in bytes, from /proc/PID/status (undefined off Linux or once it exited). */
export function residentMemory(pid: number): { rss: number | undefined; anon: number | undefined } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string): number | undefined => {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    return { rss: kib('VmRSS'), anon: kib('RssAnon') };
  } catch {
    return { rss: undefined, anon: undefined };
  }
}

/** The resident bytes of a process's `[heap]` mapping, from /proc/PID/smaps (undefined when unreadable). */
export function brkHeapResident(pid: number): number | undefined {
  try {
    const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
    const at = smaps.search(/ \[heap\]\n/);
    if (at < 0) return 0;
    const m = /^Rss:\s+(\d+) kB/m.exec(smaps.slice(at));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** One gauge of the Prometheus text, summed over its series (the heap space gauges have one each). */
function gauge(text: string, name: string): number | undefined {
  let total: number | undefined;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'gm')))
    total = (total ?? 0) + Number(m[1]);
  return total;
}

async function heapFigures(
  baseUrl: string,
): Promise<Pick<MemorySample, 'heapUsedBytes' | 'heapTotalBytes' | 'externalBytes'>> {
  try {
    const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return {
      heapUsedBytes: gauge(text, 'weir_nodejs_heap_size_used_bytes'),
      heapTotalBytes: gauge(text, 'weir_nodejs_heap_size_total_bytes'),
      externalBytes: gauge(text, 'weir_nodejs_external_memory_bytes'),
    };
  } catch {
    return { heapUsedBytes: undefined, heapTotalBytes: undefined, externalBytes: undefined };
  }
}

/**
 * Samples every `intervalMs` on a grid counted from its start, so a slow scrape delays one sample, not
 * every later one. The soak's time origin is set by `startSoak()`; until then times are relative to the
 * sampler's start and are shifted once the origin is known.
 */
export class MemorySampler {
  readonly #pid: number;
  readonly #baseUrl: string;
  readonly #natsPid: number | undefined;
  readonly #intervalMs: number;
  readonly #started = performance.now();
  readonly #raw: { at: number; sample: Omit<MemorySample, 't'> }[] = [];
  #origin: number | undefined;
  #phase: Phase = 'search';
  #timer: NodeJS.Timeout | undefined;
  #ticks = 0;
  #stopped = false;
  #inFlight: Promise<void> = Promise.resolve();

  constructor(pid: number, baseUrl: string, intervalMs: number, natsPid?: number) {
    this.#pid = pid;
    this.#baseUrl = baseUrl;
    this.#intervalMs = intervalMs;
    this.#natsPid = natsPid;
  }

  start(): void {
    this.#tick();
  }

  /** The soak's load begins now: t = 0, and samples from here on are the soak's. */
  startSoak(): void {
    this.#origin = performance.now();
    this.#phase = 'soak';
    // One sample at the origin, so the trend window starts with a point.
    this.#inFlight = this.#inFlight.then(() => this.#sample());
  }

  setPhase(phase: Phase): void {
    this.#phase = phase;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#inFlight;
  }

  samples(): MemorySample[] {
    const origin = this.#origin ?? this.#started;
    return this.#raw
      .map(({ at, sample }) => ({ t: Math.round((at - origin) / 100) / 10, ...sample }))
      .sort((a, b) => a.t - b.t);
  }

  #tick(): void {
    if (this.#stopped) return;
    this.#inFlight = this.#inFlight.then(() => this.#sample());
    this.#ticks++;
    const next = this.#started + this.#ticks * this.#intervalMs;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, next - performance.now()));
  }

  async #sample(): Promise<void> {
    if (this.#stopped) return;
    const at = performance.now();
    const phase = this.#phase;
    const { rss, anon } = residentMemory(this.#pid);
    const nats = this.#natsPid === undefined ? undefined : residentMemory(this.#natsPid).rss;
    const heap = await heapFigures(this.#baseUrl);
    this.#raw.push({
      at,
      sample: {
        phase,
        rssBytes: rss,
        rssAnonBytes: anon,
        brkHeapBytes: brkHeapResident(this.#pid),
        natsRssBytes: nats,
        ...heap,
      },
    });
  }
}

export interface Trend {
  /** The window the slope was fitted over, seconds since the soak began. */
  readonly from: number;
  readonly to: number;
  readonly samples: number;
  readonly meanBytes: number;
  readonly slopeBytesPerMinute: number;
  /** The slope in % of the window's mean per minute; the soak passes when it is at most 1. */
  readonly percentPerMinute: number;
  /**
   * The slope's standard error in the same unit: how far sample-to-sample noise alone moves it. A short
   * window's slope is mostly noise; this says how much.
   */
  readonly standardErrorPercent: number;
}

/**
 * The least-squares slope of one figure over the soak samples at or after `fromSeconds`; undefined with
 * fewer than three points (two always fit exactly, and say nothing about noise).
 */
export function memoryTrend(
  samples: readonly MemorySample[],
  fromSeconds: number,
  figure: (s: MemorySample) => number | undefined = (s) => s.rssBytes,
): Trend | undefined {
  const points = samples
    .filter((s) => s.phase === 'soak' && s.t >= fromSeconds)
    .map((s) => ({ x: s.t / 60, y: figure(s) }))
    .filter((p): p is { x: number; y: number } => p.y !== undefined);
  if (points.length < 3) return undefined;
  const n = points.length;
  const meanX = points.reduce((a, p) => a + p.x, 0) / n;
  const meanY = points.reduce((a, p) => a + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.x - meanX) * (p.y - meanY);
    sxx += (p.x - meanX) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  let residuals = 0;
  for (const p of points) residuals += (p.y - meanY - slope * (p.x - meanX)) ** 2;
  const standardError = sxx === 0 ? 0 : Math.sqrt(residuals / (n - 2) / sxx);
  return {
    from: points[0]!.x * 60,
    to: points[n - 1]!.x * 60,
    samples: n,
    meanBytes: meanY,
    slopeBytesPerMinute: slope,
    percentPerMinute: (slope / meanY) * 100,
    standardErrorPercent: (standardError / meanY) * 100,
  };
}
