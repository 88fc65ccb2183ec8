import type { Metrics } from '../../core/metrics.ts';
import { KvConflict } from '../../kv/cas-bucket.ts';
import { cacheKey } from '../persons/person-cache.ts';
import { PinnedLru } from '../persons/pinned-lru.ts';
import type { KvBucket } from './kv-bucket.ts';
import {
  absorbed,
  asLinkRecord,
  asPersonRecord,
  isAbsorbed,
  withLink,
  type LinkRecord,
  type PersonRecord,
} from './person-records.ts';
import type { Projection } from './projection.ts';
import { linkKey, personKey } from './state-keys.ts';

/** A person as this process last saw it, with the revision a write of it must be conditional on. */
export interface SeenPerson {
  readonly id: string;
  readonly record: PersonRecord;
  readonly revision: number;
  /** `record.ids` as a set, for the per-event check that an id's link is complete. */
  readonly ids: ReadonlySet<string>;
}

/** What one event's work carries through the reads and writes it makes. */
export interface EventContext {
  readonly project: number;
  /** The event's uuid: records it made say so, and it writes their rows again when it runs again. */
  readonly event: string;
  readonly rows: Projection;
  /**
   * Set when a record on the way was written by this event already, carrying its updates (a link it made to
   * join a person, a tombstone of its merge): an earlier attempt got that far, and completing the record
   * applies them, so the event must not apply them a second time.
   */
  carried: boolean;
}

export interface PersonChainsConfig {
  /** Persons and distinct ids kept in memory, each. */
  readonly cacheSize: number;
}

/** Forwards followed at most: chains are one or two hops (only unidentified persons are merged away). */
const MAX_HOPS = 64;

/**
 * Reads and writes of shared person records, cached, and the rule that makes partial changes safe: whoever
 * reaches a person through a change another event left half done completes it before using the person.
 *
 * A merge writes two records (the merged-away person's tombstone, then the absorbing person) and a new link
 * of a distinct id two (the link, then the person it joins); a crash or a race can fall between. The first
 * write decides the change and carries all it needs (the tombstone the merging event's updates, the link
 * its event's), so anyone reading through it can finish the second: a pending absorption is a tombstone whose
 * first distinct id its successor lacks; a pending link is an id its live person lacks. `live` and `personOf`
 * complete both before they answer, the ones nearest the live person first.
 *
 * The caches are kept current by the bucket's watch (`apply`); a write from a stale entry fails its condition
 * (KvConflict), the entry is dropped, and the event is worked out again from fresh reads.
 */
export class PersonChains {
  readonly #bucket: KvBucket;
  readonly #metrics: Metrics | undefined;
  readonly #cacheSize: number;
  #persons: PinnedLru<SeenPerson>;
  /** `project:distinct_id` → its link, or null: none when last read (a create finds out if that changed). */
  readonly #links: PinnedLru<LinkRecord | null>;

  constructor(config: PersonChainsConfig, deps: { bucket: KvBucket; metrics?: Metrics }) {
    this.#bucket = deps.bucket;
    this.#metrics = deps.metrics;
    this.#cacheSize = config.cacheSize;
    this.#persons = new PinnedLru({ max: config.cacheSize, isPinned: () => false });
    // Links never change once made, so they need no watch; a cached "none" is only ever acted on by a
    // create, which fails if the id was linked meanwhile.
    this.#links = new PinnedLru({ max: config.cacheSize, isPinned: () => false });
  }

  /** A watched change of a `p.` record: taken if its person is cached and it is newer. */
  apply(key: string, value: unknown, revision: number): void {
    const had = this.#persons.peek(key);
    if (!had || had.revision >= revision) return;
    if (value === undefined) this.#persons.delete(key);
    else this.#persons.set(key, seen(had.id, asPersonRecord(value), revision));
  }

  /** Forgets every cached person (the watch missed changes): they are read again on next use. */
  reset(): void {
    this.#persons = new PinnedLru({ max: this.#cacheSize, isPinned: () => false });
  }

  /** The cached live person of a distinct id with its link complete: what an event may use synchronously. */
  cached(project: number, distinctId: string): SeenPerson | undefined {
    const link = this.#links.get(cacheKey(project, distinctId));
    if (!link) return undefined;
    const p = this.#persons.get(personKey(project, link.person));
    return p && p.record.mergedInto === undefined && p.ids.has(distinctId) ? p : undefined;
  }

  /** Whether the link of a distinct id is cached (a person id, or known to have none). */
  hasLink(project: number, distinctId: string): boolean {
    return this.#links.peek(cacheKey(project, distinctId)) !== undefined;
  }

  /**
   * Reads the links of these distinct ids and the persons they lead to (forwards followed) that are not
   * cached, up to READS_IN_FLIGHT at once. Only a warm-up: what it cannot read is read again when used.
   */
  async load(project: number, distinctIds: readonly string[]): Promise<void> {
    const wanted = distinctIds.filter((d) => !this.hasLink(project, d));
    const links = await inRounds(wanted, (d) => this.#link(project, d));
    let next = new Set(links.flatMap((l) => (l ? [l.person] : [])));
    for (let hop = 0; next.size > 0 && hop < MAX_HOPS; hop++) {
      const missing = [...next].filter((id) => !this.#persons.peek(personKey(project, id)));
      const read = await inRounds(missing, (id) =>
        this.#person(project, id).catch((err: unknown) => {
          if (err instanceof KvConflict) return undefined;
          throw err;
        }),
      );
      next = new Set(read.flatMap((p) => (p?.record.mergedInto === undefined ? [] : [p.record.mergedInto])));
    }
    this.trim();
  }

  trim(): void {
    this.#persons.trim();
    this.#links.trim();
  }

  /**
   * The live person of a distinct id, or undefined when it has none: its link, then the chain of forwards
   * to the live person, completing on the way what other events left half done.
   */
  async personOf(ctx: EventContext, distinctId: string): Promise<SeenPerson | undefined> {
    const link = await this.#link(ctx.project, distinctId);
    if (!link) return undefined;
    if (link.event === ctx.event && link.identify === true) ctx.carried = true;
    const person = await this.live(ctx, link.person);
    if (!person.ids.has(distinctId)) {
      if (link.event !== ctx.event) this.#metrics?.ingestSharedCompletions.inc({ change: 'link' });
      return this.update(ctx, person, withLink(person.record, distinctId, link), [distinctId]);
    }
    // Made by this event in an earlier run (a crash before its rows were committed): write them again.
    if (link.event === ctx.event) {
      ctx.rows.person(person.id, person.record, person.revision);
      ctx.rows.link(distinctId, person.id, person.revision);
    }
    return person;
  }

  /** The live end of a person's chain, every absorption on the way completed. */
  async live(ctx: EventContext, personId: string, hops = 0): Promise<SeenPerson> {
    if (hops > MAX_HOPS) throw new Error(`person ${personId}: a chain of merges too long to follow`);
    const p = await this.#person(ctx.project, personId);
    const into = p.record.mergedInto;
    if (into === undefined) return p;
    if (p.record.lastEvent === ctx.event) ctx.carried = true;
    const successor = await this.live(ctx, into, hops + 1);
    if (isAbsorbed(p.record, successor.record)) {
      if (p.record.lastEvent === ctx.event) this.#absorptionRows(ctx, p, successor);
      return successor;
    }
    if (p.record.lastEvent !== ctx.event) this.#metrics?.ingestSharedCompletions.inc({ change: 'merge' });
    const next = await this.update(ctx, successor, absorbed(successor.record, p.record), []);
    this.#absorptionRows(ctx, p, next);
    return next;
  }

  /**
   * Writes `record` over `person` if it is still at the revision read, caches it, and adds its row (and the
   * rows of `linked` ids, now pointing at it). KvConflict when another write came first.
   */
  async update(
    ctx: EventContext,
    person: SeenPerson,
    record: PersonRecord,
    linked: readonly string[],
  ): Promise<SeenPerson> {
    const key = personKey(ctx.project, person.id);
    let revision: number;
    try {
      revision = await this.#bucket.update(key, record, person.revision);
    } catch (err) {
      if (err instanceof KvConflict) this.#lost(key);
      throw err;
    }
    const next = this.#remember(key, person.id, record, revision);
    ctx.rows.person(person.id, record, revision);
    for (const id of linked) ctx.rows.link(id, person.id, revision);
    return next;
  }

  /**
   * Makes a person and links `distinctId` to it (the record first: a link never leads nowhere). KvConflict
   * when the id was linked meanwhile; the person made for it is then deleted (nothing leads to it).
   */
  async create(
    ctx: EventContext,
    personId: string,
    record: PersonRecord,
    distinctId: string,
  ): Promise<SeenPerson> {
    const key = personKey(ctx.project, personId);
    const revision = await this.#bucket.create(key, record);
    try {
      await this.link(ctx, distinctId, { person: personId, event: ctx.event });
    } catch (err) {
      void this.#bucket.delete(key).catch(() => undefined);
      throw err;
    }
    const person = this.#remember(key, personId, record, revision);
    ctx.rows.person(personId, record, revision);
    ctx.rows.link(distinctId, personId, revision);
    return person;
  }

  /**
   * Deletes persons an erasure deletes from the bucket, their links and records, and from this process's
   * caches. (Another process's cached link to one goes once its person record's deletion reaches it; see
   * docs/operations.md, "Erasure".)
   */
  async forget(project: number, personIds: readonly string[], distinctIds: readonly string[]): Promise<void> {
    for (const id of distinctIds) {
      this.#links.delete(cacheKey(project, id));
      await this.#bucket.delete(linkKey(project, id));
    }
    for (const id of personIds) {
      this.#persons.delete(personKey(project, id));
      await this.#bucket.delete(personKey(project, id));
    }
  }

  /** Links a distinct id that has no link (a create). KvConflict when it has one now. */
  async link(ctx: EventContext, distinctId: string, link: LinkRecord): Promise<void> {
    const key = cacheKey(ctx.project, distinctId);
    try {
      await this.#bucket.create(linkKey(ctx.project, distinctId), link);
    } catch (err) {
      if (err instanceof KvConflict) {
        this.#links.delete(key);
        this.#metrics?.ingestSharedConflicts.inc({ record: 'link' });
      }
      throw err;
    }
    this.#links.set(key, link);
  }

  /** Rows of a completed absorption: the merged-away person deleted, its ids at the live person. */
  #absorptionRows(ctx: EventContext, gone: SeenPerson, successor: SeenPerson): void {
    ctx.rows.person(gone.id, gone.record, gone.revision);
    ctx.rows.person(successor.id, successor.record, successor.revision);
    for (const id of gone.record.ids) ctx.rows.link(id, successor.id, successor.revision);
  }

  /** A link, from the cache or the bucket (a missing one is cached as null). */
  async #link(project: number, distinctId: string): Promise<LinkRecord | undefined> {
    const key = cacheKey(project, distinctId);
    const cached = this.#links.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const e = await this.#bucket.get<unknown>(linkKey(project, distinctId));
    const link = e ? asLinkRecord(e.value) : null;
    this.#links.set(key, link);
    return link ?? undefined;
  }

  /** A person record, from the cache or the bucket. */
  async #person(project: number, personId: string): Promise<SeenPerson> {
    const key = personKey(project, personId);
    const cached = this.#persons.get(key);
    if (cached) return cached;
    const e = await this.#bucket.get<unknown>(key);
    // A link is written after its person, so a replica that has the link and not the person is behind:
    // the event is worked out again (and fails after its attempts, should the record really be missing).
    if (!e) throw new KvConflict(key);
    return this.#remember(key, personId, asPersonRecord(e.value), e.revision);
  }

  #remember(key: string, personId: string, record: PersonRecord, revision: number): SeenPerson {
    const had = this.#persons.peek(key);
    if (had && had.revision > revision) return had;
    const p = seen(personId, record, revision);
    this.#persons.set(key, p);
    return p;
  }

  /** A write from a stale read lost: the next read goes to the bucket. */
  #lost(key: string): void {
    this.#persons.delete(key);
    this.#metrics?.ingestSharedConflicts.inc({ record: 'person' });
  }
}

/** Reads made at once by `load`: a batch of new users must not put thousands of requests on the wire at once. */
const READS_IN_FLIGHT = 256;

async function inRounds<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let at = 0; at < items.length; at += READS_IN_FLIGHT)
    out.push(...(await Promise.all(items.slice(at, at + READS_IN_FLIGHT).map(read))));
  return out;
}

function seen(id: string, record: PersonRecord, revision: number): SeenPerson {
  return { id, record, revision, ids: new Set(record.ids) };
}
