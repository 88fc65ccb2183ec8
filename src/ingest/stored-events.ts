import type { CapturedEvent, EventBatch } from '../core/event.ts';
import type { Store } from '../core/ports.ts';

/** Events looked up per query: their keys travel as query parameters (in the URL, over HTTP). */
const LOOKUP_EVENTS = 500;

/**
 * The events of `events` that the store holds already, as `project:uuid` keys. Each is looked up by the whole
 * sorting key of `events` — `(project_id, toDate(timestamp), event, cityHash64(distinct_id), uuid)`, all of
 * which the captured event carries — so the primary index finds it as a point (a granule or so per event,
 * whatever the table's size) rather than by reading every uuid of a project's day. No skip index is needed.
 */
export async function storedEvents(
  store: Pick<Store, 'query'>,
  events: readonly CapturedEvent[],
): Promise<Set<string>> {
  const stored = new Set<string>();
  for (let i = 0; i < events.length; i += LOOKUP_EVENTS) {
    const chunk = events.slice(i, i + LOOKUP_EVENTS);
    const rows = await store.query<{ project_id: string | number; u: string }>(
      `SELECT project_id, toString(uuid) AS u FROM events
       WHERE (project_id, toDate(timestamp), event, cityHash64(distinct_id), uuid) IN (
         SELECT (k.1, toDate(fromUnixTimestamp64Milli(k.2, 'UTC')), k.3, cityHash64(k.4), k.5)
         FROM (SELECT arrayJoin(arrayZip({p:Array(UInt64)}, {t:Array(Int64)}, {e:Array(String)},
                                         {d:Array(String)}, {u:Array(UUID)})) AS k))`,
      {
        p: chunk.map((e) => e.projectId),
        // As stored: whole milliseconds (store/ch-time.ts).
        t: chunk.map((e) => Math.floor(e.timestamp)),
        e: chunk.map((e) => e.event),
        d: chunk.map((e) => e.distinctId),
        u: chunk.map((e) => e.uuid),
      },
    );
    for (const r of rows) stored.add(`${r.project_id}:${r.u}`);
  }
  return stored;
}

/**
 * `batch` without the events the store holds. If any were held, the batch's warnings go too: they were
 * written with its events by the process that stored them.
 */
export async function withoutStored(
  store: Pick<Store, 'query'>,
  batch: EventBatch,
): Promise<{ batch: EventBatch; dropped: number }> {
  if (batch.events.length === 0) return { batch, dropped: 0 };
  const stored = await storedEvents(store, batch.events);
  if (stored.size === 0) return { batch, dropped: 0 };
  const events = batch.events.filter((e) => !stored.has(`${e.projectId}:${e.uuid}`));
  return { batch: { lane: batch.lane, events, warnings: [] }, dropped: batch.events.length - events.length };
}

/**
 * Keeps the order in which batches are handed to ingest's actors the order of the calls, while some batches
 * are first looked up in the store: a batch given while any is still waiting waits its turn behind them. The
 * lookups themselves run at once, side by side.
 */
export class HandOffOrder {
  #tail: Promise<unknown> = Promise.resolve();
  #waiting = 0;

  /** Whether a batch given now must wait its turn. */
  get busy(): boolean {
    return this.#waiting > 0;
  }

  /**
   * Calls `take` with `batch` (once it is ready) after every batch given before it has been taken; resolves
   * or rejects as `take`'s promise does, or rejects when `batch` does.
   */
  after<T>(batch: T | Promise<T>, take: (batch: T) => Promise<void>): Promise<void> {
    this.#waiting++;
    const turn = this.#tail.then(() => batch);
    const taken = turn.then(
      (b) => {
        this.#waiting--;
        return take(b);
      },
      (err: unknown) => {
        this.#waiting--;
        throw err;
      },
    );
    // Registered after `taken`'s callbacks, so the next turn begins once `take` has been called.
    this.#tail = turn.catch(() => undefined);
    return taken;
  }
}
