import { PinnedLru } from './pinned-lru.ts';

/**
 * The ingest process's picture of persons: distinct id → person, bounded, least recently used out first.
 *
 * Two rules keep it truthful while the store lags behind it:
 * - one object per person: every distinct id of a person points at the same object (found through `byId`),
 *   so a change made through one id is seen through all of them;
 * - nothing with an uncommitted write is evicted (`pending > 0`): the store does not have it yet, so a
 *   reload would bring back the state from before the write.
 */
export interface Person {
  readonly projectId: number;
  readonly id: string;
  /** Replaced, never mutated: events already processed hold the old object as their person_properties. */
  properties: Record<string, unknown>;
  isIdentified: boolean;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** The ReplacingMergeTree version of its latest row; bumped on every change. */
  version: number;
  /** Distinct ids this process has pointed at it (the store may hold more, from before a restart). */
  readonly distinctIds: Set<string>;
  /** Cache entries pointing at it. */
  refs: number;
  /** Writes of its rows not yet committed. */
  pending: number;
  /**
   * All of those writes as one promise. An event that finds the person unchanged still waits for it, so
   * its batch is never answered before the person its row names is durable.
   */
  committing?: Promise<void>;
  /** Merged into another person; its row is written deleted. */
  deleted: boolean;
  /** A write failed: the store may not hold what this object says, so it must not be used again. */
  stale: boolean;
}

export function cacheKey(projectId: number, distinctId: string): string {
  return `${projectId}:${distinctId}`;
}

export class PersonCache {
  /** Key → person, or null for "the store has no person for this id". */
  readonly #entries: PinnedLru<Person | null>;
  readonly #byId = new Map<string, Person>();

  constructor(maxEntries: number) {
    this.#entries = new PinnedLru<Person | null>({
      max: maxEntries,
      isPinned: (p) => p !== null && p.pending > 0,
      onRemove: (_key, p) => {
        if (p === null) return;
        p.refs--;
        this.#release(p);
      },
    });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The cached person (or null: known to have none), or undefined when not cached or no longer usable. */
  get(key: string): Person | null | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry !== null && (entry.stale || entry.deleted)) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The live object of a person id, so a person loaded again through another id stays one object. */
  live(personId: string): Person | undefined {
    const p = this.#byId.get(personId);
    return p && !p.stale && !p.deleted ? p : undefined;
  }

  set(key: string, person: Person | null): void {
    if (person !== null) {
      person.refs++;
      this.#byId.set(person.id, person);
    }
    this.#entries.set(key, person);
  }

  /**
   * Drops every entry of these persons and distinct ids (an erasure) and marks the persons stale, so nothing
   * uses them again; returns their writes still in flight, to be waited for.
   */
  erase(projectId: number, personIds: readonly string[], distinctIds: readonly string[]): Promise<void>[] {
    const writes: Promise<void>[] = [];
    const drop = (p: Person): void => {
      p.stale = true;
      if (p.committing) writes.push(p.committing);
      for (const id of p.distinctIds) {
        const key = cacheKey(p.projectId, id);
        if (this.#entries.peek(key) === p) this.#entries.delete(key);
      }
    };
    for (const id of personIds) {
      const p = this.#byId.get(id);
      if (p && p.projectId === projectId) drop(p);
    }
    for (const id of distinctIds) {
      const key = cacheKey(projectId, id);
      const p = this.#entries.peek(key);
      if (p) drop(p);
      this.#entries.delete(key);
    }
    return writes;
  }

  /** Evicts down to the bound; called after a change has pinned what it wrote. */
  trim(): void {
    this.#entries.trim();
  }

  /** Marks a write under way for these persons (they and their entries stay cached until it settles). */
  pin(persons: readonly Person[]): void {
    for (const p of persons) {
      p.pending++;
      this.#byId.set(p.id, p);
    }
  }

  /** A write settled. When it failed, the persons are dropped so the next look-up reloads from the store. */
  unpin(persons: readonly Person[], failed: boolean): void {
    for (const p of persons) {
      p.pending--;
      if (failed) {
        p.stale = true;
        for (const id of p.distinctIds) {
          const key = cacheKey(p.projectId, id);
          if (this.#entries.peek(key) === p) this.#entries.delete(key);
        }
      }
      this.#release(p);
    }
  }

  #release(p: Person): void {
    if (p.refs <= 0 && p.pending <= 0 && this.#byId.get(p.id) === p) this.#byId.delete(p.id);
  }
}
