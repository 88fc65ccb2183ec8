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

/**
 * Answers each request once every lane it has events on is settled (`lanes`: one promise per lane, as the
 * merged batches were handed on); a failure reaches the request as `failure` makes it. Resolves when every
 * request is answered. Requests on one lane (most) are answered together, from one callback on their lane,
 * rather than each through promises of its own.
 */
export function settleByLane(
  requests: readonly WaitingRequest[],
  lanes: ReadonlyMap<Lane, Promise<void>>,
  failure: (err: unknown) => unknown = (err) => err,
): Promise<void> {
  const oneLane = new Map<Lane, WaitingRequest[]>();
  const answered: Promise<void>[] = [];
  for (const w of requests) {
    if (w.batches.length === 1) {
      const lane = w.batches[0]!.lane;
      const same = oneLane.get(lane);
      if (same) same.push(w);
      else oneLane.set(lane, [w]);
      continue;
    }
    answered.push(
      Promise.all(w.batches.map((b) => lanes.get(b.lane) ?? Promise.resolve())).then(
        () => w.resolve(),
        (err: unknown) => w.reject(failure(err)),
      ),
    );
  }
  for (const [lane, same] of oneLane) {
    answered.push(
      (lanes.get(lane) ?? Promise.resolve()).then(
        () => {
          for (const w of same) w.resolve();
        },
        (err: unknown) => {
          for (const w of same) w.reject(failure(err));
        },
      ),
    );
  }
  return Promise.all(answered).then(() => undefined);
}
