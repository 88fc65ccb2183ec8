/**
 * Weir's own counters, read from `GET /metrics` before and after a run. "Stored" in the benchmark means
 * committed to the store, which only `weir_ingest_events_total` knows; a 200 says the same per request, and
 * the bench reports both so a gap between them shows.
 */

export interface WeirCounters {
  /** weir_ingest_events_total, summed over lanes. */
  readonly storedEvents: number;
  readonly storedByLane: Readonly<Record<string, number>>;
  /** weir_capture_requests_total by status. */
  readonly requestsByStatus: Readonly<Record<string, number>>;
  /** Group-committed store inserts by table: how many, their rows, their total duration in seconds. */
  readonly inserts: Readonly<Record<string, number>>;
  readonly insertRows: Readonly<Record<string, number>>;
  readonly insertSeconds: Readonly<Record<string, number>>;
  readonly insertErrors: number;
  readonly droppedEvents: number;
  /** weir_ingest_pending_events: accepted, not yet committed (a gauge: not diffed). */
  readonly pendingEvents: number;
  /**
   * Event-loop delay p99 and max in seconds since the previous scrape (prom-client resets its histogram on
   * every scrape, so the read after a run covers that run): a store call that blocks the loop shows here.
   */
  readonly eventLoopLagP99: number;
  readonly eventLoopLagMax: number;
  /** weir_bus_published_messages_total: JetStream messages capture published (0 embedded). */
  readonly publishedMessages: number;
}

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

function sum(samples: readonly Sample[], name: string): number {
  let total = 0;
  for (const s of samples) if (s.name === name) total += s.value;
  return total;
}

function byLabel(samples: readonly Sample[], name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const key = s.labels[label];
    if (s.name === name && key !== undefined) out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

export async function readWeirCounters(baseUrl: string): Promise<WeirCounters> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const samples = parse(await res.text());
  return {
    storedEvents: sum(samples, 'weir_ingest_events_total'),
    storedByLane: byLabel(samples, 'weir_ingest_events_total', 'lane'),
    requestsByStatus: byLabel(samples, 'weir_capture_requests_total', 'status'),
    inserts: byLabel(samples, 'weir_store_insert_duration_seconds_count', 'table'),
    insertRows: byLabel(samples, 'weir_store_insert_rows_sum', 'table'),
    insertSeconds: byLabel(samples, 'weir_store_insert_duration_seconds_sum', 'table'),
    insertErrors: sum(samples, 'weir_store_insert_errors_total'),
    droppedEvents: sum(samples, 'weir_capture_events_dropped_total'),
    pendingEvents: sum(samples, 'weir_ingest_pending_events'),
    eventLoopLagP99: sum(samples, 'weir_nodejs_eventloop_lag_p99_seconds'),
    eventLoopLagMax: sum(samples, 'weir_nodejs_eventloop_lag_max_seconds'),
    publishedMessages: sum(samples, 'weir_bus_published_messages_total'),
  };
}

function diffRecord(
  after: Readonly<Record<string, number>>,
  before: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] ?? 0);
    if (delta !== 0) out[key] = delta;
  }
  return out;
}

/** What happened between two reads. */
export function diffCounters(after: WeirCounters, before: WeirCounters): WeirCounters {
  return {
    storedEvents: after.storedEvents - before.storedEvents,
    storedByLane: diffRecord(after.storedByLane, before.storedByLane),
    requestsByStatus: diffRecord(after.requestsByStatus, before.requestsByStatus),
    inserts: diffRecord(after.inserts, before.inserts),
    insertRows: diffRecord(after.insertRows, before.insertRows),
    insertSeconds: diffRecord(after.insertSeconds, before.insertSeconds),
    insertErrors: after.insertErrors - before.insertErrors,
    droppedEvents: after.droppedEvents - before.droppedEvents,
    pendingEvents: after.pendingEvents,
    eventLoopLagP99: after.eventLoopLagP99,
    eventLoopLagMax: after.eventLoopLagMax,
    publishedMessages: after.publishedMessages - before.publishedMessages,
  };
}
