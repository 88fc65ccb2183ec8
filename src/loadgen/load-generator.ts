/**
 * The load generator: open loop at a fixed rate (request i is due at t0 + i/rate whether or not earlier
 * ones were answered) or closed loop (each connection sends again as soon as it is answered, to find
 * saturation). Open-loop latency is measured from the time a request was due, not from when a connection
 * became free to send it, so a stalled server is charged for every request it delayed — the correction
 * for coordinated omission that wrk2 makes.
 */
import { build, encodeIntoCompressedBase64, type Histogram } from 'hdr-histogram-js';
import { HttpConnection, type ConnectionListener } from './http-connection.ts';
import type { Mode, Payloads } from './payloads.ts';

export interface LoadSpec {
  readonly host: string;
  readonly port: number;
  /** HTTPS. @default false */
  readonly tls?: boolean;
  readonly mode: Mode;
  /** Requests per second (open loop), or null for closed loop on every connection. */
  readonly rate: number | null;
  readonly durationMs: number;
  readonly connections: number;
  /** After the schedule ends, how long backlogged and in-flight requests may still finish. */
  readonly drainMs: number;
  /** Closed loop only: stop after this many requests, even before durationMs (null: no limit). */
  readonly maxRequests: number | null;
}

export interface LatencySummary {
  /** Milliseconds. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
  readonly count: number;
}

/** One second of a run, by when responses arrived: shows stalls that the whole-run percentiles average away. */
export interface Second {
  /** Seconds since the run began (0-based). */
  readonly second: number;
  /** Responses that arrived in this second, and how many were not 200. */
  readonly responses: number;
  readonly failed: number;
  /** Milliseconds, from due time. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface LoadResult {
  readonly spec: LoadSpec;
  /** From the first due time to the last response (or the drain deadline). */
  readonly elapsedMs: number;
  /** Requests that fell due (open loop) or were started (closed loop). */
  readonly scheduled: number;
  readonly sent: number;
  /** Due but never written: the server held every connection until the drain deadline. */
  readonly unsent: number;
  readonly ok: number;
  /** 503: Weir's back-pressure; neither a success nor a transport error. */
  readonly unavailable: number;
  /** Other statuses by code. */
  readonly otherStatus: Readonly<Record<string, number>>;
  /** Requests lost with their connection, and why (first reason seen). */
  readonly connectionErrors: number;
  readonly firstConnectionError: string | undefined;
  /** Still unanswered at the drain deadline. */
  readonly timedOut: number;
  /** Responses with status 200 per second. */
  readonly okPerSecond: number;
  /** Requests written per second: the generator's own achieved send rate. */
  readonly sentPerSecond: number;
  /** From due time to response (open loop); equals `service` in closed loop. */
  readonly latency: LatencySummary;
  /** From the write to the response: what the server alone took. */
  readonly service: LatencySummary;
  /** From due time to the write: the generator's lateness plus waiting for a free connection. */
  readonly sendLag: LatencySummary;
  readonly timeline: readonly Second[];
  /** The latency histogram, HdrHistogram compressed base64 (microseconds), for later plots. */
  readonly latencyHistogram: string;
  /** The service-time histogram, encoded the same way. */
  readonly serviceHistogram: string;
  /** CPU the generator used, in cores (1.0 = one core busy for the whole run). */
  readonly generatorCpuCores: number;
}

const CONNECT_TIMEOUT_MS = 5000;
const TICK_MS = 1;

export function histogram(digits: 2 | 3 = 3): Histogram {
  // Microseconds, growing as needed: a stalled server can take seconds.
  return build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: digits,
    autoResize: true,
  });
}

/**
 * Free connections, first in first out. Round-robin keeps every connection in use: with a stack, the
 * connections at the bottom would sit idle at low rates until the server's keep-alive timeout (uWS: 10 s)
 * closes them, and a request written just as one closes is lost — a generator artifact, not a server fault.
 */
class IdleQueue {
  #items: HttpConnection[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(conn: HttpConnection): void {
    this.#items.push(conn);
  }

  shift(): HttpConnection | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const conn = this.#items[this.#head++];
    // Compact now and then so the array does not grow with every request of a long run.
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return conn;
  }
}

class Timeline {
  readonly #histograms: Histogram[] = [];
  readonly #failed: number[] = [];

  record(second: number, latencyUs: number, failed: boolean): void {
    // Two digits are plenty to spot a stall, and keep one histogram per second small.
    (this.#histograms[second] ??= histogram(2)).recordValue(latencyUs);
    if (failed) this.#failed[second] = (this.#failed[second] ?? 0) + 1;
  }

  seconds(): Second[] {
    const ms = (us: number): number => Math.round(us) / 1000;
    const out: Second[] = [];
    for (let i = 0; i < this.#histograms.length; i++) {
      const h = this.#histograms[i];
      if (!h) continue;
      out.push({
        second: i,
        responses: h.totalCount,
        failed: this.#failed[i] ?? 0,
        p50: ms(h.getValueAtPercentile(50)),
        p99: ms(h.getValueAtPercentile(99)),
        max: ms(h.maxValue),
      });
    }
    return out;
  }
}

/** Percentiles of a histogram of microseconds, in milliseconds. */
export function summarize(h: Histogram): LatencySummary {
  const ms = (us: number): number => Math.round(us) / 1000;
  return {
    p50: ms(h.getValueAtPercentile(50)),
    p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)),
    p999: ms(h.getValueAtPercentile(99.9)),
    max: ms(h.maxValue),
    mean: ms(h.mean),
    count: h.totalCount,
  };
}

function toMicros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

/** Runs one load spec to completion; never runs longer than durationMs + drainMs (plus connect time). */
export async function runLoad(spec: LoadSpec, payloads: Payloads): Promise<LoadResult> {
  const latency = histogram();
  const service = histogram();
  const sendLag = histogram();
  const timeline = new Timeline();
  const requests = payloads.requests;
  const otherStatus: Record<string, number> = {};
  const conns: HttpConnection[] = [];
  const idle = new IdleQueue();
  const openLoop = spec.rate !== null;
  const interval = spec.rate === null ? 0 : 1000 / spec.rate;
  const total = spec.rate === null ? 0 : Math.floor((spec.rate * spec.durationMs) / 1000);
  // A server that drops connections gets them back, but only so often: a crashed one must end the run.
  let reconnectsLeft = spec.connections;

  let t0 = 0;
  let scheduleEnd = 0;
  let deadline = 0;
  let due = 0; // open loop: requests that have fallen due so far
  let sent = 0;
  let inFlight = 0;
  let ok = 0;
  let unavailable = 0;
  let connectionErrors = 0;
  let firstConnectionError: string | undefined;
  let lastResponseAt = 0;
  let finished = false;
  let finish: () => void = () => undefined;

  const limit = openLoop ? Number.POSITIVE_INFINITY : (spec.maxRequests ?? Number.POSITIVE_INFINITY);
  const sending = (now: number): boolean => now < scheduleEnd && sent < limit;
  const isDone = (now: number): boolean =>
    inFlight === 0 && (openLoop ? now >= scheduleEnd && sent >= due : !sending(now));

  const send = (conn: HttpConnection, intendedAt: number, now: number): void => {
    sendLag.recordValue(toMicros(now - intendedAt));
    conn.send(requests[sent % requests.length]!, intendedAt, now);
    sent++;
    inFlight++;
  };

  /**
   * Open loop: release what has fallen due and hand it to free connections, oldest first. Called from the
   * timer and from every response, so at high rates a due request waits for the next response rather than
   * the next millisecond tick.
   */
  const dispatch = (now: number): void => {
    due = Math.min(total, Math.floor((now - t0) / interval) + 1);
    while (sent < due && idle.size > 0 && now < deadline) {
      const conn = idle.shift()!;
      if (!conn.closed) send(conn, t0 + sent * interval, now);
    }
  };

  /** A fresh connection takes up the work of one that closed (unless the run ended while it connected). */
  const adopt = (conn: HttpConnection): void => {
    if (finished) {
      conn.destroy();
      return;
    }
    conns.push(conn);
    const now = performance.now();
    if (openLoop) {
      idle.push(conn);
      dispatch(now);
    } else if (sending(now)) send(conn, now, now);
  };

  const listener: ConnectionListener = {
    onResponse(conn, status) {
      const now = performance.now();
      inFlight--;
      lastResponseAt = now;
      const micros = toMicros(now - conn.intendedAt);
      latency.recordValue(micros);
      timeline.record(Math.floor((now - t0) / 1000), micros, status !== 200);
      service.recordValue(toMicros(now - conn.sentAt));
      if (status === 200) ok++;
      else if (status === 503) unavailable++;
      else otherStatus[status] = (otherStatus[status] ?? 0) + 1;
      if (openLoop) {
        idle.push(conn);
        dispatch(now);
      } else if (sending(now)) send(conn, now, now);
      if (isDone(now)) finish();
    },
    onClosed(_conn, hadRequest, reason) {
      const now = performance.now();
      if (hadRequest) {
        inFlight--;
        connectionErrors++;
      }
      firstConnectionError ??= reason;
      if (now < scheduleEnd && reconnectsLeft-- > 0) {
        HttpConnection.open(spec.host, spec.port, listener, CONNECT_TIMEOUT_MS, spec.tls).then(
          adopt,
          (err: Error) => {
            firstConnectionError ??= err.message;
          },
        );
      }
      if (isDone(now)) finish();
    },
  };

  try {
    for (let i = 0; i < spec.connections; i++)
      conns.push(await HttpConnection.open(spec.host, spec.port, listener, CONNECT_TIMEOUT_MS, spec.tls));
  } catch (err) {
    for (const conn of conns) conn.destroy();
    throw err;
  }

  const cpuBefore = process.cpuUsage();
  t0 = performance.now();
  scheduleEnd = t0 + spec.durationMs;
  deadline = scheduleEnd + spec.drainMs;

  const done = new Promise<void>((resolve) => (finish = resolve));
  let timer: NodeJS.Timeout | undefined;
  if (openLoop) {
    for (const conn of conns) idle.push(conn);
    // Timers fire at best every millisecond; each tick releases every request that fell due since the
    // last one, each stamped with its own due time, so the tick granularity never hides latency (it adds
    // up to a tick of the generator's own lateness, which the report shows as send lag).
    const tick = (): void => {
      const now = performance.now();
      dispatch(now);
      if (now < scheduleEnd) timer = setTimeout(tick, TICK_MS);
      else if (isDone(now)) finish();
    };
    tick();
  } else {
    for (const conn of conns) if (sending(t0)) send(conn, t0, t0);
  }
  const hardStop = setTimeout(finish, spec.durationMs + spec.drainMs);
  await done;
  finished = true;
  clearTimeout(timer);
  clearTimeout(hardStop);

  const cpu = process.cpuUsage(cpuBefore);
  const end = performance.now();
  const timedOut = inFlight;
  for (const conn of conns) conn.destroy();
  // A run cut short by maxRequests is timed as it ran; any other spans at least its schedule.
  const ran = (lastResponseAt || end) - t0;
  const elapsedMs = sent >= limit ? Math.max(1, ran) : Math.max(spec.durationMs, ran);
  const scheduled = openLoop ? due : sent;
  return {
    spec,
    elapsedMs,
    scheduled,
    sent,
    unsent: scheduled - sent,
    ok,
    unavailable,
    otherStatus,
    connectionErrors,
    firstConnectionError,
    timedOut,
    okPerSecond: (ok * 1000) / elapsedMs,
    sentPerSecond: (sent * 1000) / elapsedMs,
    latency: summarize(latency),
    service: summarize(service),
    sendLag: summarize(sendLag),
    timeline: timeline.seconds(),
    latencyHistogram: encodeIntoCompressedBase64(latency),
    serviceHistogram: encodeIntoCompressedBase64(service),
    generatorCpuCores: (cpu.user + cpu.system) / 1000 / (end - t0),
  };
}
