import type { CapturedEvent, IngestionWarning } from '../../core/event.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Row, Store } from '../../core/ports.ts';
import { uuidv7 } from '../../core/uuid.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { BatchedLoader } from './batched-loader.ts';
import type { KnownIds } from './known-ids.ts';
import { cacheKey, PersonCache, type Person } from './person-cache.ts';
import { distinctIdRow, personRow, PersonRepository, type StoredPerson } from './person-repository.ts';
import { applyPropertyUpdates, type MergeRequest } from './person-rules.ts';
import { allCommitted, writeState } from './state-writes.ts';
import { eventMerge, validMerge } from './event-merge.ts';
import { eventWarning, PERSON_WARNINGS } from './warnings.ts';

export interface PersonStateConfig {
  /** Distinct ids kept in memory (more only while their writes are in flight). */
  readonly cacheSize: number;
}

export interface PersonStateDeps {
  readonly store: Store;
  readonly writer: BatchWriter;
  /** Keys that may have a person: those it rules out are not looked up. Only for a store's sole writer. */
  readonly knownIds?: KnownIds;
  readonly metrics?: Metrics;
}

/** What processing an event did to its person. */
export interface PersonOutcome {
  readonly person: Person;
  readonly warning?: IngestionWarning;
  /** Commit of the rows written, when anything changed. */
  readonly written?: Promise<void>;
}

/** Rounds of load-then-apply before giving up; more than two means other actors keep changing the ids. */
const MAX_ATTEMPTS = 8;
/** Erased person ids remembered (oldest out first). */
const MAX_ERASED = 1_000_000;
const NOTHING_LOADED: ReadonlyMap<string, StoredPerson> = new Map();

/**
 * Persons of identified events (SPEC §2): resolves an event's distinct id to its person (made on first
 * sight), merges on `$identify` / `$create_alias`, applies `$set` / `$set_once` / `$unset`, and writes the
 * changed rows. State lives in a bounded cache in front of the store.
 *
 * Concurrency: the actors that call this run interleaved, and a merge touches two distinct ids that may
 * belong to different actors. So every change is made in two phases: first await the loads, then read
 * the cache again and apply the whole change synchronously. Nothing can interleave with the second
 * phase, and what it reads is current, because everything another actor changed meanwhile is in the
 * cache (pinned until committed) and the cache is consulted before anything loaded.
 */
export class PersonState {
  readonly #cache: PersonCache;
  readonly #repository: PersonRepository;
  readonly #loader: BatchedLoader<StoredPerson>;
  readonly #knownIds: KnownIds | undefined;
  readonly #metrics: Metrics | undefined;
  readonly #writer: BatchWriter;
  /** Persons being erased, by id: the store's rows of them are no person. */
  readonly #erased = new Set<string>();

  constructor(config: PersonStateConfig, deps: PersonStateDeps) {
    this.#cache = new PersonCache(config.cacheSize);
    this.#repository = new PersonRepository(deps.store);
    this.#loader = new BatchedLoader({ maxKeys: 10_000 }, (keys) => this.#repository.byDistinctIds(keys));
    this.#knownIds = deps.knownIds;
    this.#metrics = deps.metrics;
    this.#writer = deps.writer;
  }

  /**
   * Forgets persons being erased: nothing cached of them is used again, and a person the store still holds
   * (until the erasure deletes it) is taken for none, so their distinct ids get new persons. Resolves when
   * the writes of theirs already under way are committed, after which none is made.
   */
  async forget(
    projectId: number,
    personIds: readonly string[],
    distinctIds: readonly string[],
  ): Promise<void> {
    for (const id of personIds) this.#erased.add(id);
    // Bounded: an erasure's store delete is done within minutes, after which the store has no such person.
    while (this.#erased.size > MAX_ERASED) this.#erased.delete(this.#erased.values().next().value!);
    await Promise.allSettled(this.#cache.erase(projectId, personIds, distinctIds));
  }

  /**
   * Loads the persons of a batch's distinct ids in one query, so its events mostly hit the cache.
   * Synchronous when nothing must be looked up (every id cached, or certainly new).
   */
  prefetch(events: readonly CapturedEvent[]): Promise<void> | void {
    const misses = new Set<string>();
    for (const e of events) {
      if (e.properties['$process_person_profile'] === false) continue;
      for (const key of this.#keysOf(e, validMerge(e)))
        if (this.#cache.get(key) === undefined) misses.add(key);
    }
    if (misses.size === 0) return;
    const lookups = this.#lookupsOf([...misses]);
    if (lookups.length === 0) return this.#resolveAll(misses, NOTHING_LOADED);
    return this.#loader.load(lookups).then((loaded) => this.#resolveAll(misses, loaded));
  }

  #resolveAll(keys: ReadonlySet<string>, loaded: ReadonlyMap<string, StoredPerson>): void {
    for (const key of keys) this.#resolve(key, loaded);
    this.#cache.trim();
  }

  /**
   * Whether `prefetch` and `process` can take the event without the store: it has no person profile, or it
   * merges nothing and its distinct id is cached or certainly has no person yet.
   */
  ready(event: CapturedEvent): boolean {
    if (event.properties['$process_person_profile'] === false) return true;
    if (validMerge(event)) return false;
    const key = cacheKey(event.projectId, event.distinctId);
    if (this.#cache.get(key) !== undefined) return true;
    const known = this.#knownIds;
    return known !== undefined && known.ready && !known.mightHave(key);
  }

  /**
   * Synchronous when it can be — an ordinary event whose distinct id is cached, the common case — so the
   * pipeline does not pay a promise per event; otherwise loads what it needs first.
   */
  process(event: CapturedEvent): PersonOutcome | Promise<PersonOutcome> {
    const { valid, warning } = eventMerge(event);
    if (!valid) {
      const cached = this.#cache.get(cacheKey(event.projectId, event.distinctId));
      if (cached !== undefined) {
        const outcome = this.#update(event, cached, warning);
        this.#cache.trim();
        return outcome;
      }
    }
    return this.#load(event, valid, warning);
  }

  async #load(
    event: CapturedEvent,
    valid: MergeRequest | undefined,
    warning: IngestionWarning | undefined,
  ): Promise<PersonOutcome> {
    const keys = this.#keysOf(event, valid);
    let otherIds: { readonly personId: string; readonly ids: readonly string[] } | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const misses = keys.filter((k) => this.#cache.get(k) === undefined);
      const lookups = this.#lookupsOf(misses);
      const loaded = lookups.length > 0 ? await this.#loader.load(lookups) : NOTHING_LOADED;
      // From here to the return (or `continue`) nothing is awaited: the change is applied atomically.
      // An id that was cached before the load but was evicted during it was not loaded: go round again.
      if (keys.some((k) => !misses.includes(k) && this.#cache.get(k) === undefined)) continue;
      const into = this.#resolve(keys[0]!, loaded);
      const other = valid ? this.#resolve(keys[1]!, loaded) : null;
      if (
        valid &&
        into &&
        other &&
        into !== other &&
        !other.isIdentified &&
        otherIds?.personId !== other.id
      ) {
        // The merged-away person's distinct ids all move; the store knows those from before this process.
        const ids = await this.#repository.distinctIdsOf(event.projectId, other.id);
        otherIds = { personId: other.id, ids };
        continue;
      }
      const outcome = valid
        ? this.#merge(event, valid, into, other, otherIds?.ids ?? [])
        : this.#update(event, into, warning);
      // Only now, with what was written pinned, may the cache shrink back to its bound.
      this.#cache.trim();
      return outcome;
    }
    throw new Error(`person of ${event.distinctId} kept changing while it was being merged`);
  }

  /** The keys of `misses` the store may have a person for; the others certainly have none. */
  #lookupsOf(misses: readonly string[]): readonly string[] {
    const known = this.#knownIds;
    const lookups = known?.ready ? misses.filter((k) => known.mightHave(k)) : misses;
    if (lookups.length > 0) this.#metrics?.ingestPersonLookups.inc({ result: 'looked_up' }, lookups.length);
    if (lookups.length < misses.length)
      this.#metrics?.ingestPersonLookups.inc({ result: 'new' }, misses.length - lookups.length);
    return lookups;
  }

  /** Caches the person of a key, and tells KnownIds that the key has one (it is, or is about to be, stored). */
  #remember(key: string, person: Person | null): void {
    if (person !== null) this.#knownIds?.add(key);
    this.#cache.set(key, person);
  }

  #keysOf(event: CapturedEvent, merge: MergeRequest | undefined): string[] {
    const keys = [cacheKey(event.projectId, event.distinctId)];
    if (merge) keys.push(cacheKey(event.projectId, merge.other));
    return keys;
  }

  /** The person of a key: the cache first (it is ahead of the store), else what was loaded. Caches the answer. */
  #resolve(key: string, loaded: ReadonlyMap<string, StoredPerson>): Person | null {
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached;
    const found = loaded.get(key);
    const stored = found && !this.#erased.has(found.id) ? found : undefined;
    let person: Person | null = null;
    if (stored) {
      person = this.#cache.live(stored.id) ?? {
        projectId: Number(key.slice(0, key.indexOf(':'))),
        id: stored.id,
        properties: stored.properties,
        isIdentified: stored.isIdentified,
        createdAt: stored.createdAt,
        version: stored.version,
        distinctIds: new Set(),
        refs: 0,
        pending: 0,
        deleted: false,
        stale: false,
      };
      person.distinctIds.add(key.slice(key.indexOf(':') + 1));
    }
    this.#remember(key, person);
    return person;
  }

  #create(event: CapturedEvent, distinctIds: readonly string[], identified: boolean): Person {
    const person: Person = {
      projectId: event.projectId,
      id: uuidv7(),
      properties: {},
      isIdentified: identified,
      createdAt: event.timestamp,
      version: 0,
      distinctIds: new Set(distinctIds),
      refs: 0,
      pending: 0,
      deleted: false,
      stale: false,
    };
    for (const id of distinctIds) this.#remember(cacheKey(event.projectId, id), person);
    return person;
  }

  /** An ordinary event: the person of its distinct id (made when there is none) and its property updates. */
  #update(event: CapturedEvent, found: Person | null, warning?: IngestionWarning): PersonOutcome {
    const person = found ?? this.#create(event, [event.distinctId], false);
    const next = applyPropertyUpdates(person.properties, event.properties);
    if (found && next === person.properties) return { person, warning, written: person.committing };
    person.properties = next;
    if (found) person.version++;
    const ids = found ? [] : [distinctIdRow(person, event.distinctId)];
    return { person, warning, written: this.#write([person], [personRow(person)], ids) };
  }

  /**
   * `$identify` / `$create_alias` (PostHog's rules): with no person on either side, one is made for both
   * ids; with one, the other id joins it; with two, `other`'s person is merged into `into`'s — unless it
   * is identified already, which is refused with a warning (merging two known users is never what an
   * identify call means). Either way the result is identified.
   */
  #merge(
    event: CapturedEvent,
    merge: MergeRequest,
    into: Person | null,
    other: Person | null,
    otherStoredIds: readonly string[],
  ): PersonOutcome {
    let person: Person;
    let warning: IngestionWarning | undefined;
    const touched: Person[] = [];
    const personRows: Row[] = [];
    let joined: readonly string[] = [];
    let floor = 0;
    if (!into && !other) {
      person = this.#create(event, [merge.into, merge.other], true);
      joined = [merge.into, merge.other];
    } else if (!into || !other) {
      person = (into ?? other)!;
      const id = into ? merge.other : merge.into;
      this.#attach(person, [id]);
      joined = [id];
    } else if (into === other) {
      person = into;
    } else if (other.isIdentified) {
      person = into;
      warning = eventWarning(event, PERSON_WARNINGS.alreadyIdentified, {
        sourcePersonDistinctId: merge.other,
        targetPersonDistinctId: merge.into,
      });
    } else {
      person = into;
      // On a key both have, the kept person's value wins (PostHog); the event's updates apply after.
      person.properties = { ...other.properties, ...into.properties };
      person.createdAt = Math.min(into.createdAt, other.createdAt);
      const moved = new Set([...otherStoredIds, ...other.distinctIds]);
      other.deleted = true;
      other.version++;
      personRows.push(personRow(other));
      touched.push(other);
      this.#attach(person, [...moved]);
      joined = [...moved];
      floor = other.version;
    }
    const created = !into && !other;
    const next = applyPropertyUpdates(person.properties, event.properties);
    const changed = created || joined.length > 0 || !person.isIdentified || next !== person.properties;
    if (!changed) return { person, warning, written: person.committing };
    person.properties = next;
    person.isIdentified = true;
    if (!created) person.version = Math.max(person.version, floor) + 1;
    personRows.push(personRow(person));
    touched.push(person);
    const idRows = joined.map((id) => distinctIdRow(person, id));
    return { person, warning, written: this.#write(touched, personRows, idRows) };
  }

  #attach(person: Person, distinctIds: readonly string[]): void {
    for (const id of distinctIds) {
      person.distinctIds.add(id);
      this.#remember(cacheKey(person.projectId, id), person);
    }
  }

  /**
   * Writes the rows and returns what the event must wait for: these rows, and any earlier write of the
   * same persons still in flight (an earlier pdi row may be the one this person depends on).
   */
  #write(persons: Person[], personRows: readonly Row[], idRows: readonly Row[]): Promise<void> | undefined {
    this.#cache.pin(persons);
    const written = writeState(
      this.#writer,
      [
        { table: 'persons', rows: personRows },
        { table: 'person_distinct_ids', rows: idRows },
      ],
      (failed) => this.#cache.unpin(persons, failed),
    );
    for (const p of persons) {
      const all = allCommitted([p.committing, written])!;
      p.committing = all;
      const clear = (): void => {
        if (p.committing === all) p.committing = undefined;
      };
      all.then(clear, clear);
    }
    return allCommitted(persons.map((p) => p.committing));
  }
}
