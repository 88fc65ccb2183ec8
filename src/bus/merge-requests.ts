import type { CapturedEvent, EventBatch, IngestionWarning, Lane } from '../core/event.ts';

/** A capture request's batches, held by a bus until they are handed on; settled with the request's outcome. */
export interface WaitingRequest {
  readonly batches: readonly EventBatch[];
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The batches of several requests as one batch per lane, events and warnings in arrival order (both buses
 * hand on the requests of a turn, or of a flight, together). A single request's batches are returned as they
 * are.
 */
export function mergeByLane(requests: readonly WaitingRequest[]): EventBatch[] {
  if (requests.length === 1) return [...requests[0]!.batches];
  const lanes = new Map<Lane, { events: CapturedEvent[]; warnings: IngestionWarning[] }>();
  for (const w of requests) {
    for (const b of w.batches) {
      let merged = lanes.get(b.lane);
      if (!merged) {
        merged = { events: [], warnings: [] };
        lanes.set(b.lane, merged);
      }
      for (const e of b.events) merged.events.push(e);
      for (const x of b.warnings) merged.warnings.push(x);
    }
  }
  return [...lanes].map(([lane, merged]) => ({ lane, ...merged }));
}
