/**
 * End-to-end lag of the JetStream mode: capture's 200 → the row visible in the store. While the generator
 * loads Weir, a sampler sends one tagged event (its own request, its own uuid) every `intervalMs` and
 * records when it was sent and when it was answered, in wall-clock microseconds. chDB allows one process per
 * data directory, so visibility is not polled while ingest runs: once ingest has stopped, `weir sql` reads
 * each tagged row's `_inserted_at` — set when the embedded store applied the row's block from its commit log
 * to the table, i.e. when it became visible — and the lag is that minus the ack time (one machine, one clock).
 *
 * The same query over every event the generator sent during the run gives a second, larger sample: capture's
 * receive time (`created_at`, milliseconds) → `_inserted_at`, i.e. without the HTTP response's way back.
 */
import { randomUUID } from 'node:crypto';
import { histogram, summarize, type LatencySummary } from '../../src/loadgen/load-generator.ts';
import { MODE_PATH } from '../../src/loadgen/payloads.ts';
import { API_KEY } from './bench-key.ts';

export const LAG_EVENT = '$bench_lag';
const LAG_DISTINCT_ID = 'bench-lag-sampler';
const REQUEST_TIMEOUT_MS = 10_000;

export interface LagSample {
  readonly uuid: string;
  /** Wall clock, microseconds since the epoch. */
  readonly sentAtUs: number;
  /** When the 200 came back; undefined if it was not a 200. */
  readonly ackedAtUs: number | undefined;
  readonly status: number;
}

export interface LagResult {
  readonly intervalMs: number;
  readonly sent: number;
  /** Samples answered 200. */
  readonly acked: number;
  /** Of those, rows found in the store; acked − visible were lost. */
  readonly visible: number;
  /** Ack → row visible, ms. */
  readonly lag: LatencySummary;
  /** Send → row visible, ms: the lag plus the sampler's own capture latency. */
  readonly sendToVisible: LatencySummary;
  /** The sampler's capture latency (send → 200), ms. */
  readonly capture: LatencySummary;
  /** Every generator event received during the run: capture's receive time → row visible, ms. */
  readonly allEvents: LatencySummary | undefined;
}

function wallClockUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/** Sends the tagged events, one every `intervalMs`, each without waiting for the previous answer. */
export class LagSampler {
  readonly #url: string;
  readonly #pending = new Set<Promise<void>>();
  readonly #samples: LagSample[] = [];
  readonly #timer: NodeJS.Timeout;
  readonly intervalMs: number;
  /** Wall-clock µs of the first and last send: the window of the run. */
  readonly startedAtUs = wallClockUs();
  #stoppedAtUs = 0;

  private constructor(baseUrl: string, intervalMs: number) {
    this.#url = `${baseUrl}${MODE_PATH.single}`;
    this.intervalMs = intervalMs;
    this.#timer = setInterval(() => this.#track(this.#send()), intervalMs);
  }

  /** A first, untimed event makes the sampler's person, so the samples measure a known user, as the load does. */
  static async start(baseUrl: string, intervalMs: number): Promise<LagSampler> {
    await post(`${baseUrl}${MODE_PATH.single}`, randomUUID(), `${LAG_EVENT}_warmup`);
    return new LagSampler(baseUrl, intervalMs);
  }

  get window(): { fromUs: number; toUs: number } {
    return { fromUs: this.startedAtUs, toUs: this.#stoppedAtUs || wallClockUs() };
  }

  /** Stops sending and resolves with every sample once the last answer is in. */
  async stop(): Promise<LagSample[]> {
    clearInterval(this.#timer);
    this.#stoppedAtUs = wallClockUs();
    await Promise.all(this.#pending);
    return [...this.#samples];
  }

  #track(p: Promise<void>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async #send(): Promise<void> {
    const uuid = randomUUID();
    const sentAtUs = wallClockUs();
    const status = await post(this.#url, uuid, LAG_EVENT);
    this.#samples.push({ uuid, sentAtUs, ackedAtUs: status === 200 ? wallClockUs() : undefined, status });
  }
}

/** One capture request of one tagged event; resolves with the status (0: no answer). */
async function post(url: string, uuid: string, event: string): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: API_KEY, event, uuid, distinct_id: LAG_DISTINCT_ID, properties: {} }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Runs SQL on the stopped Weir's data directory. */
export type SqlRunner = <T>(sql: string) => Promise<T[]>;

function summarizeMs(valuesMs: readonly number[]): LatencySummary {
  const h = histogram();
  // Clamped at 1 µs: a row applied before the 200 reached the sampler (possible, not likely) counts as 0.
  for (const v of valuesMs) h.recordValue(Math.max(1, Math.round(v * 1000)));
  return summarize(h);
}

/** Reads the tagged rows' `_inserted_at` (and the run's other events') from the store and computes the lags. */
export async function lagResult(
  samples: readonly LagSample[],
  window: { fromUs: number; toUs: number },
  intervalMs: number,
  sql: SqlRunner,
): Promise<LagResult> {
  const rows = await sql<{ u: string; t: string }>(
    `SELECT toString(uuid) AS u, toString(toUnixTimestamp64Micro(min(_inserted_at))) AS t
     FROM events WHERE event = '${LAG_EVENT}' GROUP BY uuid`,
  );
  const insertedAt = new Map(rows.map((r) => [r.u, Number(r.t)]));
  const lags: number[] = [];
  const sendToVisible: number[] = [];
  const capture: number[] = [];
  let acked = 0;
  for (const s of samples) {
    if (s.ackedAtUs === undefined) continue;
    acked++;
    capture.push((s.ackedAtUs - s.sentAtUs) / 1000);
    const visibleAt = insertedAt.get(s.uuid);
    if (visibleAt === undefined) continue;
    lags.push((visibleAt - s.ackedAtUs) / 1000);
    sendToVisible.push((visibleAt - s.sentAtUs) / 1000);
  }
  const [all] = await sql<{ n: string; q: number[]; mx: string; mean: number }>(
    `SELECT toString(count()) AS n, quantiles(0.5, 0.9, 0.99, 0.999)(lag) AS q, toString(max(lag)) AS mx,
            avg(lag) AS mean
     FROM (SELECT toUnixTimestamp64Micro(_inserted_at) - toUnixTimestamp64Micro(created_at) AS lag, event, created_at
           FROM events)
     WHERE event != '${LAG_EVENT}'
       AND created_at BETWEEN fromUnixTimestamp64Micro(${window.fromUs}) AND fromUnixTimestamp64Micro(${window.toUs})`,
  );
  const allEvents =
    all && Number(all.n) > 0
      ? {
          p50: all.q[0]! / 1000,
          p90: all.q[1]! / 1000,
          p99: all.q[2]! / 1000,
          p999: all.q[3]! / 1000,
          max: Number(all.mx) / 1000,
          mean: all.mean / 1000,
          count: Number(all.n),
        }
      : undefined;
  return {
    intervalMs,
    sent: samples.length,
    acked,
    visible: lags.length,
    lag: summarizeMs(lags),
    sendToVisible: summarizeMs(sendToVisible),
    capture: summarizeMs(capture),
    allEvents,
  };
}
