/**
 * Remembers the uuids of events recently committed (or being committed) so that a retried request — same
 * uuids — never makes a second row. Two generations of sets bound the memory: when the current one fills,
 * it becomes the previous one and the oldest generation is forgotten, so between `size` and `2 × size`
 * uuids are remembered.
 */
export class DedupWindow {
  readonly #size: number;
  #current = new Set<string>();
  #previous = new Set<string>();
  #inFlight = new Map<string, Promise<void>>();

  constructor(size: number) {
    this.#size = size;
  }

  /**
   * `committed` when the key is stored already; a promise when an earlier copy is being committed right
   * now (the duplicate is durable when that settles); `new` otherwise.
   */
  check(key: string): 'new' | 'committed' | Promise<void> {
    if (this.#size === 0) return 'new';
    if (this.#current.has(key) || this.#previous.has(key)) return 'committed';
    return this.#inFlight.get(key) ?? 'new';
  }

  /** Records keys whose commit is under way; they count as stored once it succeeds, and are forgotten if it fails. */
  track(keys: readonly string[], commit: Promise<void>): void {
    if (this.#size === 0 || keys.length === 0) return;
    for (const k of keys) this.#inFlight.set(k, commit);
    commit.then(
      () => {
        for (const k of keys) {
          this.#inFlight.delete(k);
          this.remember(k);
        }
      },
      () => {
        for (const k of keys) this.#inFlight.delete(k);
      },
    );
  }

  /** Records a key as stored (also used to warm the window from the store at start). */
  remember(key: string): void {
    if (this.#size === 0) return;
    if (this.#current.size >= this.#size) {
      this.#previous = this.#current;
      this.#current = new Set();
    }
    this.#current.add(key);
  }

  get size(): number {
    return this.#current.size + this.#previous.size;
  }
}

/** The key of an event in the window: its uuid within its project. */
export function dedupKey(projectId: number, uuid: string): string {
  return `${projectId}:${uuid}`;
}
