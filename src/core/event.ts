/** What travels from capture to ingest. Plain data only: it crosses the bus as JSON. */

/** The path an event takes through ingest (SPEC §2: live, overflow after spike detection, historical). */
export type Lane = 'live' | 'overflow' | 'historical';

export const LANES: readonly Lane[] = ['live', 'overflow', 'historical'];

/** An event as capture hands it on: validated and normalised (SPEC §2 "What capture normalises"). */
export interface CapturedEvent {
  readonly projectId: number;
  /** Lower-case UUID; the event's identity end to end. */
  readonly uuid: string;
  readonly event: string;
  readonly distinctId: string;
  /** Event time, milliseconds since the epoch, after skew correction and clamping. */
  readonly timestamp: number;
  readonly properties: Record<string, unknown>;
  /** Time capture received the request, milliseconds since the epoch. */
  readonly receivedAt: number;
}

/** A problem met while capturing or ingesting an event, stored where a query can read it. */
export interface IngestionWarning {
  readonly projectId: number;
  /** Stable snake_case kind, e.g. `event_dropped_missing_distinct_id`, `timestamp_clamped`. */
  readonly type: string;
  readonly source: 'capture' | 'ingest';
  readonly details: Record<string, unknown>;
  readonly timestamp: number;
}

/** One hand-off from capture to the bus: events of one lane of one request. */
export interface EventBatch {
  readonly lane: Lane;
  readonly events: readonly CapturedEvent[];
  readonly warnings: readonly IngestionWarning[];
}
