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
  /**
   * The event's properties; but when `propertiesJson` is set, only those of INGEST_PROPERTY_KEYS it has (the
   * ones ingest reads), the rest being in the text.
   */
  readonly properties: Record<string, unknown>;
  /** Time capture received the request, milliseconds since the epoch. */
  readonly receivedAt: number;
  /**
   * All the properties as JSON text, for an event that came over the JetStream bus: ingest stores the text as
   * it came rather than parse every property and write it again (codec.ts).
   */
  readonly propertiesJson?: string;
}

/**
 * The properties ingest reads (persons, groups, person mode, and those stored as columns of their own:
 * sessions, autocapture elements). A step that reads another must add it here: over the bus, `properties`
 * holds only these.
 */
export const INGEST_PROPERTY_KEYS: readonly string[] = [
  '$process_person_profile',
  '$set',
  '$set_once',
  '$unset',
  '$anon_distinct_id',
  'alias',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  '$session_id',
  '$window_id',
  '$elements_chain',
  '$elements',
];

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

/** What ingest is told of a batch besides its content: where it has been. */
export interface BatchOrigin {
  /**
   * Some of its events may be stored already: the bus delivered it before, perhaps to a process that stored
   * it and died before acknowledging it (a partition taken over, a redelivery). Ingest drops those first.
   */
  readonly maybeStored?: boolean;
}
