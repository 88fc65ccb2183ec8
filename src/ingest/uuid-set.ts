/**
 * A set of (project id, UUID) pairs with a fixed capacity, kept in one typed array: open addressing with
 * linear probing, five 32-bit words a slot (project id + 1, then the UUID's 128 bits). It exists for the
 * duplicate window, which remembers a million or more uuids: as strings in a `Set` they cost ~80 bytes each on
 * the JavaScript heap, every major GC marks them all, and each time the `Set` doubled it rehashed every entry
 * in one synchronous stretch (a 60–150 ms stall of capture at 25k events/s, seen in a CPU profile). Here a
 * pair costs 20–40 bytes off the heap, `add` never reallocates, and `clear` is one `fill`.
 *
 * Nothing is ever deleted, so probing needs no tombstones; the owner clears the set when `full`.
 */
export class UuidSet {
  readonly #capacity: number;
  readonly #limit: number;
  readonly #slots: Uint32Array;
  #size = 0;

  /** Room for `limit` pairs, at most two thirds of the slots filled so probes stay short. */
  constructor(limit: number) {
    this.#limit = Math.max(1, limit);
    this.#capacity = Math.ceil(this.#limit * 1.5) + 1;
    this.#slots = new Uint32Array(this.#capacity * 5);
  }

  get size(): number {
    return this.#size;
  }

  /** True once `limit` pairs are in: `add` must not be called again before `clear`. */
  get full(): boolean {
    return this.#size >= this.#limit;
  }

  has(projectId: number, uuid: string): boolean {
    return this.hasKey(uuidKey(projectId, uuid, SCRATCH));
  }

  /** Adds the pair; returns false when it was there already. */
  add(projectId: number, uuid: string): boolean {
    return this.addKey(uuidKey(projectId, uuid, SCRATCH));
  }

  /** `has` for a key made by `uuidKey` (one parse of the uuid for several sets), at `offset` in `key`. */
  hasKey(key: Uint32Array, offset = 0): boolean {
    return this.#find(key, offset) >= 0;
  }

  addKey(key: Uint32Array, offset = 0): boolean {
    const at = this.#find(key, offset);
    if (at >= 0) return false;
    if (this.full) throw new RangeError('UuidSet is full');
    const base = -at - 1;
    for (let w = 0; w < 5; w++) this.#slots[base + w] = key[offset + w]!;
    this.#size++;
    return true;
  }

  clear(): void {
    if (this.#size === 0) return;
    this.#slots.fill(0);
    this.#size = 0;
  }

  /** The slot offset of the pair when present, else `-(offset of the empty slot where it would go) - 1`. */
  #find(key: Uint32Array, o: number): number {
    const k0 = key[o]!;
    const k1 = key[o + 1]!;
    const k2 = key[o + 2]!;
    const k3 = key[o + 3]!;
    const k4 = key[o + 4]!;
    // The uuid's last 32 bits are random in every version that matters (v4, v7); the other words are mixed in
    // so that made-up uuids with equal tails do not all land on one slot.
    const mixed = (k4 ^ Math.imul(k3, 0x9e3779b1) ^ Math.imul(k0 ^ k1, 0x85ebca6b)) >>> 0;
    let slot = Math.floor((mixed / 4294967296) * this.#capacity);
    const slots = this.#slots;
    for (;;) {
      const base = slot * 5;
      const p = slots[base]!;
      if (p === 0) return -base - 1;
      if (
        p === k0 &&
        slots[base + 1] === k1 &&
        slots[base + 2] === k2 &&
        slots[base + 3] === k3 &&
        slots[base + 4] === k4
      )
        return base;
      slot = slot + 1 === this.#capacity ? 0 : slot + 1;
    }
  }
}

const SCRATCH = new Uint32Array(5);

/**
 * The five words a set keeps of a pair, written into `out` (pass a reused array: no allocation per call):
 * project id + 1, then the uuid's 128 bits.
 */
export function uuidKey(projectId: number, uuid: string, out: Uint32Array, offset = 0): Uint32Array {
  out[offset] = projectId + 1;
  wordsOf(uuid, out, offset);
  return out;
}

/**
 * Writes the 128 bits of a canonical UUID (`8-4-4-4-12` hex digits, either case) into `out[offset + 1..4]`. Anything
 * else (ingest only ever sees canonical uuids; this is a guard) is hashed into the same four words instead,
 * so it still has a stable identity.
 */
function wordsOf(uuid: string, out: Uint32Array, offset: number): void {
  if (uuid.length === 36) {
    let word = 0;
    let digits = 0;
    let w = offset + 1;
    let ok = true;
    for (let i = 0; i < 36; i++) {
      if (i === 8 || i === 13 || i === 18 || i === 23) {
        if (uuid.charCodeAt(i) !== 0x2d) ok = false;
        continue;
      }
      const v = hexValue(uuid.charCodeAt(i));
      if (v < 0) ok = false;
      word = (word << 4) | (v & 0xf);
      if (++digits === 8) {
        out[w++] = word;
        word = 0;
        digits = 0;
      }
    }
    if (ok) return;
  }
  // FNV-1a in four lanes with different seeds.
  for (let w = 1; w <= 4; w++) {
    let h = (0x811c9dc5 ^ Math.imul(w, 0x27d4eb2d)) >>> 0;
    for (let i = 0; i < uuid.length; i++) h = Math.imul(h ^ uuid.charCodeAt(i), 0x01000193);
    out[offset + w] = (h ^ uuid.length) >>> 0;
  }
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}
