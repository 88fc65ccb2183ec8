import { UuidSet, uuidKey } from './uuid-set.ts';

/** What identifies an event to the window: its uuid within its project. */
export interface EventKey {
  readonly projectId: number;
  readonly uuid: string;
}

/**
 * Remembers the uuids of events recently committed (or being committed) so that a retried request — same
 * uuids — never makes a second row. Two generations bound the memory: when the current one fills, it becomes
 * the previous one and the oldest generation is forgotten, so between `size` and `2 × size` uuids are
 * remembered. The generations are fixed-size tables off the JavaScript heap (see `UuidSet`); only the
 * uuids whose commit is under way are held as strings. With size 0 nothing is remembered once committed,
 * but copies that arrive while the first is being committed still wait for it rather than make a second row.
 */
export class DedupWindow {
  #current: UuidSet | undefined;
  #previous: UuidSet | undefined;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Scratch for the parsed key of the uuid at hand. */
  readonly #words = new Uint32Array(5);

  constructor(size: number) {
    if (size > 0) {
      this.#current = new UuidSet(size);
      this.#previous = new UuidSet(size);
    }
  }

  /**
   * `committed` when the event is stored already; a promise when an earlier copy is being committed right
   * now (the duplicate is durable when that settles); `new` otherwise. Looks only: `claim` is what ingest uses.
   */
  check(key: EventKey): 'new' | 'committed' | Promise<void> {
    return this.#inFlight.get(keyText(key)) ?? (this.#committed(key) ? 'committed' : 'new');
  }

  /**
   * Sorts `events` into the ones new to the window, which `commit` now claims, and copies of events stored
   * already (dropped) or being committed (their commit is in `waits`: the copy is durable when it settles).
   * A later copy — in these events or another call's — finds the claim and waits for `commit`. Once `commit`
   * succeeds the claimed events count as stored; if it fails they are forgotten, so a retry is stored.
   * One pass, one key text per event: this runs for every event ingest takes.
   */
  claim<E extends EventKey>(
    events: readonly E[],
    commit: Promise<void>,
  ): { readonly fresh: E[]; readonly waits: Promise<void>[] } {
    const fresh: E[] = [];
    const waits: Promise<void>[] = [];
    const names: string[] = [];
    // Each uuid is parsed once, into the slot its event would take: the words serve the lookups now and the
    // commit's callbacks later, which so need not keep the events themselves.
    const keys = this.#current ? new Uint32Array(events.length * 5) : undefined;
    for (const e of events) {
      const name = keyText(e);
      const earlier = this.#inFlight.get(name);
      if (earlier !== undefined) {
        // The same uuid twice in these events is one event, claimed by the first copy.
        if (earlier !== commit) waits.push(earlier);
        continue;
      }
      if (keys && this.#committedKey(uuidKey(e.projectId, e.uuid, keys, fresh.length * 5), fresh.length * 5))
        continue;
      this.#inFlight.set(name, commit);
      fresh.push(e);
      names.push(name);
    }
    if (names.length > 0) this.#settleWith(commit, names, keys);
    return { fresh, waits };
  }

  #settleWith(commit: Promise<void>, names: readonly string[], keys: Uint32Array | undefined): void {
    commit.then(
      () => {
        for (let i = 0; i < names.length; i++) {
          this.#inFlight.delete(names[i]!);
          if (keys) this.#rememberKey(keys, i * 5);
        }
      },
      () => {
        for (const name of names) this.#inFlight.delete(name);
      },
    );
  }

  #committed(key: EventKey): boolean {
    return (
      this.#current !== undefined && this.#committedKey(uuidKey(key.projectId, key.uuid, this.#words), 0)
    );
  }

  #committedKey(words: Uint32Array, offset: number): boolean {
    if (!this.#current || !this.#previous) return false;
    return this.#current.hasKey(words, offset) || this.#previous.hasKey(words, offset);
  }

  /** Records an event as stored (also used to warm the window from the store at start). */
  remember(key: EventKey): void {
    if (this.#current) this.#rememberKey(uuidKey(key.projectId, key.uuid, this.#words), 0);
  }

  #rememberKey(words: Uint32Array, offset: number): void {
    if (!this.#current || !this.#previous) return;
    if (this.#current.full) {
      const oldest = this.#previous;
      oldest.clear();
      this.#previous = this.#current;
      this.#current = oldest;
    }
    // Not looked up in the previous generation first: a uuid in both costs one slot, a lookup costs a cache miss.
    this.#current.addKey(words, offset);
  }

  /** Uuids remembered as stored (in flight not counted). */
  get size(): number {
    return (this.#current?.size ?? 0) + (this.#previous?.size ?? 0);
  }
}

/** An event's key as one string (the in-flight map's key, and any per-batch set's). */
function keyText(key: EventKey): string {
  return `${key.projectId}:${key.uuid}`;
}
