import { UuidSet, uuidKey } from './uuid-set.ts';

/** What identifies an event to the window: its uuid within its project. */
export interface EventKey {
  readonly projectId: number;
  readonly uuid: string;
}

/**
 * Remembers the uuids of events recently committed (or being committed) so that a retried request — same
 * uuids — never makes a second row. Two generations bound the memory: when the current one fills, it becomes
 * the previous one and the oldest generation is forgotten, so between `size` and `2 × size` uuids are
 * remembered. The generations are fixed-size tables off the JavaScript heap (see `UuidSet`); only the
 * uuids whose commit is under way are held as strings.
 */
export class DedupWindow {
  readonly #size: number;
  #current: UuidSet | undefined;
  #previous: UuidSet | undefined;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Scratch for the parsed key of the uuid at hand. */
  readonly #words = new Uint32Array(5);

  constructor(size: number) {
    this.#size = size;
    if (size > 0) {
      this.#current = new UuidSet(size);
      this.#previous = new UuidSet(size);
    }
  }

  /**
   * `committed` when the event is stored already; a promise when an earlier copy is being committed right
   * now (the duplicate is durable when that settles); `new` otherwise.
   */
  check(key: EventKey): 'new' | 'committed' | Promise<void> {
    if (!this.#current || !this.#previous) return 'new';
    const words = uuidKey(key.projectId, key.uuid, this.#words);
    if (this.#current.hasKey(words) || this.#previous.hasKey(words)) return 'committed';
    return this.#inFlight.get(keyText(key)) ?? 'new';
  }

  /** Records events whose commit is under way; they count as stored once it succeeds, and are forgotten if it fails. */
  track(keys: readonly EventKey[], commit: Promise<void>): void {
    if (this.#size === 0 || keys.length === 0) return;
    const names = keys.map(keyText);
    for (const k of names) this.#inFlight.set(k, commit);
    commit.then(
      () => {
        for (let i = 0; i < keys.length; i++) {
          this.#inFlight.delete(names[i]!);
          this.remember(keys[i]!);
        }
      },
      () => {
        for (const k of names) this.#inFlight.delete(k);
      },
    );
  }

  /** Records an event as stored (also used to warm the window from the store at start). */
  remember(key: EventKey): void {
    if (!this.#current || !this.#previous) return;
    if (this.#current.full) {
      const oldest = this.#previous;
      oldest.clear();
      this.#previous = this.#current;
      this.#current = oldest;
    }
    // Not looked up in the previous generation first: a uuid in both costs one slot, a lookup costs a cache miss.
    this.#current.addKey(uuidKey(key.projectId, key.uuid, this.#words));
  }

  /** Uuids remembered as stored (in flight not counted). */
  get size(): number {
    return (this.#current?.size ?? 0) + (this.#previous?.size ?? 0);
  }
}

/** An event's key as one string (the in-flight map's key, and any per-batch set's). */
export function keyText(key: EventKey): string {
  return `${key.projectId}:${key.uuid}`;
}
