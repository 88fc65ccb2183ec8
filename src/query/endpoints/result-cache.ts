/**
 * Results of endpoint runs, in memory, bounded in bytes: least recently used entries go first once the
 * bound is reached. As CLOCK does it: a hit only marks its entry used, which costs a cached run nothing,
 * and the entries are put in order of use when space is needed (a used one moves behind the others,
 * unmarked). An entry is kept whatever its age (each endpoint says how old a result it serves, and may
 * change its mind); it goes when space is needed or its endpoint changes.
 */

export interface CachedResult<T> {
  readonly value: T;
  /** When the run that made it started (ms since the epoch): what it can have seen. */
  readonly startedAt: number;
}

interface Entry<T> extends CachedResult<T> {
  readonly endpointId: string;
  readonly bytes: number;
  /** Got since it last moved. */
  used: boolean;
}

export interface ResultCacheOptions {
  /** Bytes all entries may take together (as their JSON length, a close proxy of their weight). */
  readonly maxBytes: number;
}

export class ResultCache<T> {
  readonly #maxBytes: number;
  /** In order of use, least recent first (a Map iterates in insertion order), but for `used` marks. */
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
    if (entry) entry.used = true;
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
    this.#entries.set(key, { value, startedAt, endpointId, bytes, used: false });
    this.#bytes += bytes;
    // Ends: a used entry moves once, unmarked, and is met again (a Map's iteration sees what is added).
    for (const [k, e] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      if (k === key) continue;
      if (e.used) {
        e.used = false;
        this.#entries.delete(k);
        this.#entries.set(k, e);
      } else this.#remove(k, e);
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
