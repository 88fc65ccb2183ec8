/**
 * A bounded map, least recently used out first, that never evicts an entry its owner marks pinned. Ingest
 * pins state whose write is not committed yet: evicting it would let a reload from the store bring back
 * the state from before the write.
 *
 * Eviction happens only in `trim`, never in `set`: a change sets its entries first and pins them after,
 * and an entry must not be evicted in between. Callers trim once the change is pinned.
 */
export interface PinnedLruOptions<V> {
  /** Entries kept at most (more only while they are pinned). */
  readonly max: number;
  readonly isPinned: (value: V) => boolean;
  /** Called whenever an entry leaves: evicted, deleted, or replaced by `set`. */
  readonly onRemove?: (key: string, value: V) => void;
}

export class PinnedLru<V extends NonNullable<unknown> | null> {
  readonly #options: PinnedLruOptions<V>;
  /** Map order is recency order: the first entry is the least recently used. */
  readonly #entries = new Map<string, V>();

  constructor(options: PinnedLruOptions<V>) {
    this.#options = { ...options, max: Math.max(1, options.max) };
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, marked as just used; undefined when absent (so a value is never `undefined` itself). */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** The value without marking it used. */
  peek(key: string): V | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: V): void {
    this.delete(key);
    this.#entries.set(key, value);
  }

  delete(key: string): void {
    const value = this.#entries.get(key);
    if (value === undefined) return;
    this.#entries.delete(key);
    this.#options.onRemove?.(key, value);
  }

  /** Evicts the least recently used unpinned entries down to the bound (or as near as pins allow). */
  trim(): void {
    if (this.#entries.size <= this.#options.max) return;
    let excess = this.#entries.size - this.#options.max;
    for (const [key, value] of this.#entries) {
      if (excess <= 0) break;
      if (this.#options.isPinned(value)) continue;
      this.delete(key);
      excess--;
    }
  }
}
