/**
 * A map from (project id, UUID) pairs to a 32-bit value, with a fixed capacity, kept in typed arrays: open
 * addressing with linear probing. It exists for the duplicate window, which remembers a million or more
 * uuids: as strings in a `Set` they lived on the JavaScript heap, every major GC marked them all, and each
 * time the `Set` doubled it rehashed every entry in one synchronous stretch, a stall of capture. Here a pair
 * is a few words off the heap, `insert` never reallocates, and `clear` is one `fill` per array.
 *
 * Each slot has a tag (a 32-bit hash of its key, never 0; 0 marks an empty slot) in an array of its own, so a
 * probe reads 4 bytes a slot and compares the key's five words only where the tag matches. Lookups of uuids
 * that are not there — every new event, in each of the window's two generations — so touch one cache line
 * of the small tag array instead of the keys' array, five times its size.
 *
 * Nothing is ever deleted, so probing needs no tombstones; the owner clears the set when `full`.
 */
export class UuidSet {
  readonly #capacity: number;
  readonly #limit: number;
  readonly #tags: Uint32Array;
  /** Five words a slot: project id + 1, then the UUID's 128 bits. */
  readonly #keys: Uint32Array;
  readonly #values: Uint32Array;
  #size = 0;

  /** Room for `limit` pairs, at most two thirds of the slots filled so probes stay short. */
  constructor(limit: number) {
    this.#limit = Math.max(1, limit);
    this.#capacity = Math.ceil(this.#limit * 1.5) + 1;
    this.#tags = new Uint32Array(this.#capacity);
    this.#keys = new Uint32Array(this.#capacity * 5);
    this.#values = new Uint32Array(this.#capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** True once `limit` pairs are in: the owner should `clear` it before adding more. */
  get full(): boolean {
    return this.#size >= this.#limit;
  }

  has(projectId: number, uuid: string): boolean {
    return this.find(uuidKey(projectId, uuid, SCRATCH)) >= 0;
  }

  /** Adds the pair (value 0); returns false when it was there already. */
  add(projectId: number, uuid: string): boolean {
    const key = uuidKey(projectId, uuid, SCRATCH);
    if (this.find(key) >= 0) return false;
    if (this.full) throw new RangeError('UuidSet is full');
    this.insert(key, 0, 0);
    return true;
  }

  /**
   * The slot of a key made by `uuidKey` (at `offset` in `key`); when absent, a negative number (`-slot - 1` of the
   * empty slot it would take, which `insert` can be given so as not to probe again).
   */
  find(key: Uint32Array, offset = 0): number {
    const k0 = key[offset]!;
    const k1 = key[offset + 1]!;
    const k2 = key[offset + 2]!;
    const k3 = key[offset + 3]!;
    const k4 = key[offset + 4]!;
    const tag = tagOf(k0, k1, k3, k4);
    const tags = this.#tags;
    const keys = this.#keys;
    let slot = this.#home(tag);
    for (;;) {
      const t = tags[slot]!;
      if (t === 0) return -slot - 1;
      if (t === tag) {
        const base = slot * 5;
        if (
          keys[base] === k0 &&
          keys[base + 1] === k1 &&
          keys[base + 2] === k2 &&
          keys[base + 3] === k3 &&
          keys[base + 4] === k4
        )
          return slot;
      }
      slot = slot + 1 === this.#capacity ? 0 : slot + 1;
    }
  }

  /**
   * Reads the first slot `find` would look at for a key made by `uuidKey`, and returns what it read. Finding
   * many keys is a cache miss a key (the tables are tens of MB); touching all of their slots first, in a
   * loop of nothing else, lets the processor wait for those misses side by side rather than one by one.
   */
  touch(key: Uint32Array, offset: number): number {
    return this.#tags[this.#home(tagOf(key[offset]!, key[offset + 1]!, key[offset + 3]!, key[offset + 4]!))]!;
  }
  /**
   * Adds a key that `find` says is absent, with `value`; returns its slot. `absent` is what that `find`
   * returned, when nothing was inserted or cleared since. The owner goes by `full`, but a few keys past the
   * limit are taken (up to the slots there are, less one that stays empty to end every probe).
   */
  insert(key: Uint32Array, offset: number, value: number, absent?: number): number {
    if (this.#size >= this.#capacity - 1) throw new RangeError('UuidSet is full');
    const k0 = key[offset]!;
    const tag = tagOf(k0, key[offset + 1]!, key[offset + 3]!, key[offset + 4]!);
    const tags = this.#tags;
    let slot: number;
    if (absent !== undefined && absent < 0) slot = -absent - 1;
    else {
      slot = this.#home(tag);
      while (tags[slot] !== 0) slot = slot + 1 === this.#capacity ? 0 : slot + 1;
    }
    tags[slot] = tag;
    const base = slot * 5;
    for (let w = 0; w < 5; w++) this.#keys[base + w] = key[offset + w]!;
    this.#values[slot] = value;
    this.#size++;
    return slot;
  }

  valueAt(slot: number): number {
    return this.#values[slot]!;
  }

  setValue(slot: number, value: number): void {
    this.#values[slot] = value;
  }

  clear(): void {
    if (this.#size === 0) return;
    this.#tags.fill(0);
    this.#keys.fill(0);
    this.#values.fill(0);
    this.#size = 0;
  }

  #home(tag: number): number {
    return Math.floor((tag / 4294967296) * this.#capacity);
  }
}

/**
 * The uuid's last 32 bits are random in every version that matters (v4, v7); the other words are mixed in so
 * that made-up uuids with equal tails do not all land on one slot. The result is finished with murmur3's
 * mixer because a slot is chosen by the tag's high bits: uuids that differ only in their low bits (numbered
 * ones, as some exports and tools write) otherwise all started their probes in one region, and a historical
 * import of such uuids spent most of its time probing. Never 0, which marks an empty slot.
 */
export function tagOf(k0: number, k1: number, k3: number, k4: number): number {
  let h = k4 ^ Math.imul(k3, 0x9e3779b1) ^ Math.imul(k0 ^ k1, 0x85ebca6b);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h | 1) >>> 0;
}

const SCRATCH = new Uint32Array(5);

/**
 * The five words a set keeps of a pair, written into `out` at `offset` (pass a reused array: no allocation per
 * call): project id + 1, then the uuid's 128 bits.
 */
export function uuidKey(projectId: number, uuid: string, out: Uint32Array, offset = 0): Uint32Array {
  out[offset] = projectId + 1;
  wordsOf(uuid, out, offset);
  return out;
}

/** Hex digit values by UTF-16 code unit; -1 for anything else. */
const HEX = new Int8Array(65536).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x61 + i] = 10 + i;
  HEX[0x41 + i] = 10 + i;
}
/** Where the 32 hex digits of a canonical uuid are. */
const DIGITS = Uint8Array.from([
  0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32,
  33, 34, 35,
]);

/**
 * Writes the 128 bits of a canonical UUID (`8-4-4-4-12` hex digits, either case) into `out[offset + 1..4]`. Anything
 * else (ingest only ever sees canonical uuids; this is a guard) is hashed into the same four words instead,
 * so it still has a stable identity.
 */
function wordsOf(uuid: string, out: Uint32Array, offset: number): void {
  if (
    uuid.length === 36 &&
    uuid.charCodeAt(8) === 0x2d &&
    uuid.charCodeAt(13) === 0x2d &&
    uuid.charCodeAt(18) === 0x2d &&
    uuid.charCodeAt(23) === 0x2d
  ) {
    // A digit that is not hex makes `bad` negative.
    let bad = 0;
    for (let w = 0; w < 4; w++) {
      let word = 0;
      for (let d = w * 8; d < w * 8 + 8; d++) {
        const v = HEX[uuid.charCodeAt(DIGITS[d]!)]!;
        bad |= v;
        word = (word << 4) | v;
      }
      out[offset + 1 + w] = word;
    }
    if (bad >= 0) return;
  }
  // FNV-1a in four lanes with different seeds.
  for (let w = 1; w <= 4; w++) {
    let h = (0x811c9dc5 ^ Math.imul(w, 0x27d4eb2d)) >>> 0;
    for (let i = 0; i < uuid.length; i++) h = Math.imul(h ^ uuid.charCodeAt(i), 0x01000193);
    out[offset + w] = (h ^ uuid.length) >>> 0;
  }
}
