/**
 * A bounded map, least recently used out first (approximately: see below), that never evicts an entry its
 * owner marks pinned. Ingest pins state whose write is not committed yet: evicting it would let a reload from
 * the store bring back the state from before the write.
 *
 * Eviction happens only in `trim`, never in `set`: a change sets its entries first and pins them after,
 * and an entry must not be evicted in between. Callers trim once the change is pinned.
 *
 * Recency is kept the CLOCK way: `get` sets a flag on the entry rather than moving it to the end of the map.
 * Moving it (a `Map` delete and set) on every lookup made the map rehash its whole table every few thousand
 * lookups, each time a new table of hundreds of kilobytes that went straight to the old generation, a share of
 * capture's main thread and of its major GCs. `trim` walks the map oldest first,
 * gives a used entry a second chance (clears its flag) and evicts the first unused, unpinned ones.
 */
export interface PinnedLruOptions<V> {
  /** Entries kept at most (more only while they are pinned). */
  readonly max: number;
  readonly isPinned: (value: V) => boolean;
  /** Called whenever an entry leaves: evicted, deleted, or replaced by `set`. */
  readonly onRemove?: (key: string, value: V) => void;
}

interface Slot<V> {
  readonly value: V;
  /** Used since `trim` last passed it (set and get both count). */
  used: boolean;
}

export class PinnedLru<V extends NonNullable<unknown> | null> {
  readonly #options: PinnedLruOptions<V>;
  /** Map order is the order entries were set in. */
  readonly #entries = new Map<string, Slot<V>>();

  constructor(options: PinnedLruOptions<V>) {
    this.#options = { ...options, max: Math.max(1, options.max) };
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, marked as just used; undefined when absent (so a value is never `undefined` itself). */
  get(key: string): V | undefined {
    const slot = this.#entries.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.value;
  }

  /** The value without marking it used. */
  peek(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    this.#entries.set(key, { value, used: true });
  }

  delete(key: string): void {
    const slot = this.#entries.get(key);
    if (slot === undefined) return;
    this.#entries.delete(key);
    this.#options.onRemove?.(key, slot.value);
  }

  /**
   * Evicts unpinned entries down to the bound (or as near as pins allow): oldest first, each used one given
   * a second chance. Two passes at most: the first clears every flag it passes.
   */
  trim(): void {
    if (this.#entries.size <= this.#options.max) return;
    let excess = this.#entries.size - this.#options.max;
    for (let pass = 0; pass < 2 && excess > 0; pass++) {
      for (const [key, slot] of this.#entries) {
        if (excess <= 0) break;
        if (this.#options.isPinned(slot.value)) continue;
        if (slot.used) {
          slot.used = false;
          continue;
        }
        this.delete(key);
        excess--;
      }
    }
  }
}
