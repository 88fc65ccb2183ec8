/**
 * The tables one actor holds, bounded by their bytes, least recently used out first. A table is small in
 * number (one per materialized version) and large in bytes, so a plain Map in recency order is enough: a
 * `get` moves its entry to the end, which at a few thousand runs a second costs nothing next to the run.
 */
export class TableCache<V> {
  readonly #capacity: number;
  readonly #entries = new Map<string, { readonly value: V; readonly bytes: number }>();
  #bytes = 0;

  /** `capacity`: most bytes held at once. */
  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity);
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Tables held. */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The table, now the most recently used; undefined when not held. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /**
   * Holds `value` of `bytes` as the most recently used, evicting the least recently used until it fits.
   * A table larger than the whole capacity is not held at all (holding it would break the bound); the
   * caller serves it once and drops it. Returns how many tables were evicted, and whether `value` is held.
   */
  set(key: string, value: V, bytes: number): { evicted: number; held: boolean } {
    this.delete(key);
    if (bytes > this.#capacity) return { evicted: 0, held: false };
    let evicted = 0;
    for (const [oldest] of this.#entries) {
      if (this.#bytes + bytes <= this.#capacity) break;
      this.delete(oldest);
      evicted++;
    }
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    return { evicted, held: true };
  }

  /** Drops the table; true when it was held. */
  delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
    return true;
  }
}
