import { UuidSet, uuidKey } from './uuid-set.ts';

/** What identifies an event to the window: its uuid within its project. */
export interface EventKey {
  readonly projectId: number;
  readonly uuid: string;
}

/** The value of an entry whose claim failed: the uuid is not stored, and a copy may claim it again. */
const FORGOTTEN = 0;
/** Generations of a window that remembers nothing once committed: sized for events in flight only. */
const IN_FLIGHT_ONLY = 1 << 18;

interface Claim {
  readonly commit: Promise<void>;
  /** The claimed uuids as `uuidKey` words, five per event, `count` of them. */
  readonly keys: Uint32Array;
  count: number;
}

/**
 * Remembers the uuids of events recently committed (or being committed) so that a retried request — same
 * uuids — never makes a second row. Two generations bound the memory: when the current one fills, it becomes
 * the previous one and the oldest generation is forgotten, so between `size` and `2 × size` uuids are
 * remembered. The generations are fixed-size tables off the JavaScript heap (see `UuidSet`).
 *
 * A uuid is entered when it is claimed, not when its commit succeeds, with the number of its claim as the
 * entry's value: a claim still in `#claims` is being committed (a copy waits for it); one no longer there
 * succeeded (a copy is dropped); a failed claim sets its entries to `FORGOTTEN`. So one table lookup per
 * generation serves both questions, and an event costs no string and no `Map` entry. With size 0 nothing is
 * remembered once committed, but copies that arrive while the first is being committed still wait for it
 * rather than make a second row.
 */
export class DedupWindow {
  #current: UuidSet;
  #previous: UuidSet;
  readonly #remember: boolean;
  /** Claims being committed, by number. */
  readonly #claims = new Map<number, Claim>();
  #lastClaim = 0;
  /** Scratch for the parsed key of the uuid at hand. */
  readonly #words = new Uint32Array(5);

  constructor(size: number) {
    this.#remember = size > 0;
    const limit = size > 0 ? size : IN_FLIGHT_ONLY;
    this.#current = new UuidSet(limit);
    this.#previous = new UuidSet(limit);
  }

  /**
   * `committed` when the event is stored already; a promise when an earlier copy is being committed right
   * now (the duplicate is durable when that settles); `new` otherwise. Looks only: `claim` is what ingest uses.
   */
  check(key: EventKey): 'new' | 'committed' | Promise<void> {
    const words = uuidKey(key.projectId, key.uuid, this.#words);
    let owner = this.#ownerIn(this.#current, words, 0);
    if (owner < 0) owner = this.#ownerIn(this.#previous, words, 0);
    if (owner < 0 || owner === FORGOTTEN) return 'new';
    return this.#claims.get(owner)?.commit ?? (this.#remember ? 'committed' : 'new');
  }

  /**
   * Sorts `events` into the ones new to the window, which `commit` now claims, and copies of events stored
   * already (dropped) or being committed (their commit is in `waits`: the copy is durable when it settles).
   * A later copy — in these events or another call's — finds the claim and waits for `commit`. Once `commit`
   * succeeds the claimed events count as stored; if it fails they are forgotten, so a retry is stored.
   */
  claim<E extends EventKey>(
    events: readonly E[],
    commit: Promise<void>,
  ): { readonly fresh: E[]; readonly waits: Promise<void>[] } {
    const fresh: E[] = [];
    const waits: Promise<void>[] = [];
    const id = this.#nextClaim();
    // Each uuid is parsed once: the words serve the lookups now and a failed commit's callback later, which
    // so need not keep the events themselves. An event's words move down to the slot of its place among
    // the fresh ones (they differ only after a copy was dropped).
    const keys = new Uint32Array(events.length * 5);
    for (let i = 0; i < events.length; i++) uuidKey(events[i]!.projectId, events[i]!.uuid, keys, i * 5);
    if (events.length > 1) this.#touch(keys);
    // Registered before its uuids are entered, so that a generation turned over while they are (a claim of
    // more events than a generation holds) puts back the ones entered so far.
    const claim: Claim = { commit, keys, count: 0 };
    this.#claims.set(id, claim);
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      const at = fresh.length * 5;
      if (at !== i * 5) keys.copyWithin(at, i * 5, i * 5 + 5);
      let table = this.#current;
      let slot = table.find(keys, at);
      const absent = slot;
      if (slot < 0) {
        table = this.#previous;
        slot = table.find(keys, at);
      }
      if (slot >= 0) {
        const owner = table.valueAt(slot);
        // The same uuid twice in these events is one event, claimed by the first copy.
        if (owner === id) continue;
        const earlier = this.#claims.get(owner);
        if (earlier) {
          waits.push(earlier.commit);
          continue;
        }
        if (owner !== FORGOTTEN && this.#remember) continue;
        if (table === this.#current) {
          table.setValue(slot, id);
          fresh.push(e);
          claim.count = fresh.length;
          continue;
        }
      }
      this.#enter(keys, at, id, absent);
      fresh.push(e);
      claim.count = fresh.length;
    }
    if (fresh.length === 0) this.#claims.delete(id);
    else {
      commit.then(
        () => this.#claims.delete(id),
        () => {
          this.#claims.delete(id);
          this.#forget(id, claim);
        },
      );
    }
    return { fresh, waits };
  }

  /**
   * Touches the first slot of every key in both generations before any is looked up (see `UuidSet.touch`):
   * with the turn's events claimed together (~20-50 at tens of thousands of requests a second), their
   * cache misses then overlap. Returns the sum of what it read, which nobody needs: the reads are the point
   * (V8 keeps them whether or not the sum is used; measured).
   */
  #touch(keys: Uint32Array): number {
    let sum = 0;
    for (let at = 0; at < keys.length; at += 5)
      sum = (sum + this.#current.touch(keys, at) + this.#previous.touch(keys, at)) | 0;
    return sum;
  }

  /** Records an event as stored (also used to warm the window from the store at start). */
  remember(key: EventKey): void {
    if (!this.#remember) return;
    const words = uuidKey(key.projectId, key.uuid, this.#words);
    if (this.#entered(words, 0)) return;
    this.#enter(words, 0, this.#nextClaim());
  }

  /** Uuids remembered, including those being committed (none when the window is off). */
  get size(): number {
    return this.#remember ? this.#current.size + this.#previous.size : 0;
  }

  #nextClaim(): number {
    // Numbers wrap long after an entry made with one is gone: the tables hold at most 2 × size claims.
    let id = this.#lastClaim === 0xffffffff ? 1 : this.#lastClaim + 1;
    while (this.#claims.has(id)) id = id === 0xffffffff ? 1 : id + 1;
    this.#lastClaim = id;
    return id;
  }

  /** Whether either generation has the key. */
  #entered(words: Uint32Array, offset: number): boolean {
    return this.#current.find(words, offset) >= 0 || this.#previous.find(words, offset) >= 0;
  }

  /** The value of the key's entry in `table`, or -1 when it has none. */
  #ownerIn(table: UuidSet, words: Uint32Array, offset: number): number {
    const slot = table.find(words, offset);
    return slot >= 0 ? table.valueAt(slot) : -1;
  }

  /**
   * Enters an absent key into the current generation, first making room if it is full. `absent` is what
   * the current generation's `find` said of it, if nothing changed since.
   */
  #enter(words: Uint32Array, offset: number, id: number, absent?: number): void {
    if (this.#current.full) {
      this.#rotate();
      this.#current.insert(words, offset, id);
    } else this.#current.insert(words, offset, id, absent);
  }

  /**
   * The current generation becomes the previous one; the oldest is forgotten, except for the entries of
   * claims still being committed, which go back into the new current generation.
   */
  #rotate(): void {
    const oldest = this.#previous;
    oldest.clear();
    this.#previous = this.#current;
    this.#current = oldest;
    // Stops at the limit: more uuids being committed at once than a generation holds (not seen in practice;
    // the store refuses new work long before) would lose only the wait of a copy that arrives meanwhile.
    for (const [id, claim] of this.#claims) {
      for (let at = 0; at < claim.count * 5; at += 5) {
        if (this.#current.full) return;
        if (this.#entered(claim.keys, at)) continue;
        this.#current.insert(claim.keys, at, id);
      }
    }
  }

  /** A failed claim's entries no longer stand for stored events. */
  #forget(id: number, claim: Claim): void {
    for (let at = 0; at < claim.count * 5; at += 5) {
      for (const table of [this.#current, this.#previous]) {
        const slot = table.find(claim.keys, at);
        if (slot >= 0 && table.valueAt(slot) === id) table.setValue(slot, FORGOTTEN);
      }
    }
  }
}
