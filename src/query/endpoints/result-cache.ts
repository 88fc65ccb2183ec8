/**
 * Results of endpoint runs, in memory, bounded in bytes: least recently used entries go first once the
 * bound is reached. An entry is kept whatever its age (each endpoint says how old a result it serves, and
 * may change its mind); it goes when space is needed or its endpoint changes.
 */

export interface CachedResult<T> {
  readonly value: T;
  /** When the run that made it started (ms since the epoch): what it can have seen. */
  readonly startedAt: number;
}

interface Entry<T> extends CachedResult<T> {
  readonly endpointId: string;
  readonly bytes: number;
}

export interface ResultCacheOptions {
  /** Bytes all entries may take together (as their JSON length, a close proxy of their weight). */
  readonly maxBytes: number;
}

export class ResultCache<T> {
  readonly #maxBytes: number;
  /** In order of use, least recent first (a Map iterates in insertion order). */
  readonly #entries = new Map<string, Entry<T>>();
  #bytes = 0;

  constructor(options: ResultCacheOptions) {
    this.#maxBytes = options.maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry for `key`, marked as just used. */
  get(key: string): CachedResult<T> | undefined {
    const entry = this.#entries.get(key);
    if (entry) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  /**
   * Keeps `value` unless a result of a later run is already there, or it alone would take more than an
   * eighth of the bound (one huge result must not flush every other endpoint's).
   */
  set(key: string, endpointId: string, value: T, bytes: number, startedAt: number): void {
    const existing = this.#entries.get(key);
    if (existing && existing.startedAt > startedAt) return;
    if (existing) this.#remove(key, existing);
    if (bytes > this.#maxBytes / 8) return;
    this.#entries.set(key, { value, startedAt, endpointId, bytes });
    this.#bytes += bytes;
    for (const [k, e] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#remove(k, e);
    }
  }

  /** Drops every result of an endpoint. */
  invalidate(endpointId: string): void {
    for (const [k, e] of this.#entries) if (e.endpointId === endpointId) this.#remove(k, e);
  }

  #remove(key: string, entry: Entry<T>): void {
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}
