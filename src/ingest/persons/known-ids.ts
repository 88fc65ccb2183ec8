/**
 * Which keys may be in the store — `project:distinct_id` keys that have a person, or (an instance of its
 * own) `project:index:key` keys of stored groups: a Bloom filter, loaded from the store at start and told
 * of every key this process stores after. Ingest asks it before looking a key up: a key it has certainly
 * never seen (every new visitor's first event, a new group's first `$groupidentify`) needs no lookup, so
 * that event is not held up by the engine. On the embedded store one statement runs at a time, so a lookup
 * waited for whatever query was running — for seconds behind a long one — and a new user's events with it;
 * and each lookup cost the engine milliseconds, which capped how fast new users were taken in.
 *
 * It is only right while this process is the store's one writer (`Store.soleWriter`: the embedded store,
 * whose data directory it holds locked): a person another process wrote would be missing from the filter,
 * and its distinct id taken for a new one. Until the load has finished, every key counts as possibly known.
 *
 * A Bloom filter errs one way only: a key it has never been given can be reported as possibly there
 * (~1% of new keys each level; they are looked up, as before), never the other way round. It grows by
 * levels, each four times the size of the last, so it needs no sizing up front: 1 M keys take 1.2 MB.
 * Kept in typed arrays, off the JavaScript heap, like UuidSet.
 */
export class KnownIds {
  readonly #levels: BloomLevel[] = [new BloomLevel(FIRST_LEVEL_KEYS)];
  #ready = false;
  #size = 0;

  /** Whether the load finished: only then does `mightHave` answer false. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Keys added (a key added twice counts twice, though it is kept once). */
  get size(): number {
    return this.#size;
  }

  /** False only when the key has certainly never had a person; always true before the load finished. */
  mightHave(key: string): boolean {
    if (!this.#ready) return true;
    const h1 = hash1(key);
    const h2 = hash2(key);
    for (const level of this.#levels) if (level.has(h1, h2)) return true;
    return false;
  }

  /**
   * Adds a key. One the filter reports already (ingest re-adds a known user's key each time it loads the
   * person again after the cache let it go) takes up no room: a level then fills with distinct keys only.
   */
  add(key: string): void {
    this.#size++;
    const h1 = hash1(key);
    const h2 = hash2(key);
    for (const level of this.#levels) if (level.has(h1, h2)) return;
    let last = this.#levels.at(-1)!;
    if (last.full) {
      last = new BloomLevel(last.capacity * 4);
      this.#levels.push(last);
    }
    last.add(h1, h2);
  }

  /**
   * Adds every key of `pages` (the store's keys, read page by page), then marks the filter ready. Keys
   * given a person meanwhile are added by the caller as they happen, so nothing falls between.
   */
  async load(pages: AsyncIterable<readonly string[]>): Promise<void> {
    for await (const keys of pages) for (const key of keys) this.add(key);
    this.#ready = true;
  }
}

/** Keys the first level is sized for. */
const FIRST_LEVEL_KEYS = 1 << 20;
/** Probes a key: with ~9.6 bits a key, a false positive rate of ~1%. */
const PROBES = 7;
const BITS_PER_KEY = 9.6;

class BloomLevel {
  readonly capacity: number;
  readonly #bits: Uint32Array;
  readonly #m: number;
  #count = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#m = Math.ceil(capacity * BITS_PER_KEY);
    this.#bits = new Uint32Array(Math.ceil(this.#m / 32));
  }

  get full(): boolean {
    return this.#count >= this.capacity;
  }

  add(h1: number, h2: number): void {
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + Math.imul(i, h2)) >>> 0;
      const at = bit % this.#m;
      this.#bits[at >>> 5]! |= 1 << (at & 31);
    }
    this.#count++;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < PROBES; i++) {
      const at = ((h1 + Math.imul(i, h2)) >>> 0) % this.#m;
      if ((this.#bits[at >>> 5]! & (1 << (at & 31))) === 0) return false;
    }
    return true;
  }
}

/** FNV-1a over the UTF-16 code units, finished with a murmur3 mix so that nearby keys spread. */
function hash1(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return fmix(h);
}

/** A second hash, independent of the first; odd, so never 0 (the probes `h1 + i·h2` would all be one bit). */
function hash2(key: string): number {
  let h = 0x9747b28c;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x5bd1e995) ^ (h >>> 15);
  return (fmix(h) | 1) >>> 0;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
