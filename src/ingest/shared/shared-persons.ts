import type { CapturedEvent, IngestionWarning } from '../../core/event.ts';
import type { Metrics } from '../../core/metrics.ts';
import { uuidv7 } from '../../core/uuid.ts';
import { KvConflict } from '../../kv/cas-bucket.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { applyPropertyUpdates, type MergeRequest } from '../persons/person-rules.ts';
import type { PersonOutcome, Persons } from '../persons/persons.ts';
import { allCommitted } from '../persons/state-writes.ts';
import { eventMerge, validMerge } from '../persons/event-merge.ts';
import { eventWarning, PERSON_WARNINGS } from '../persons/warnings.ts';
import type { KvBucket } from './kv-bucket.ts';
import { PersonChains, type EventContext, type SeenPerson } from './person-chains.ts';
import {
  changeOf,
  mergedAway,
  newPerson,
  withChange,
  withLink,
  type LinkRecord,
  type PropertyChange,
} from './person-records.ts';
import { Committing, Projection } from './projection.ts';

export interface SharedPersonsConfig {
  /** Persons and distinct ids kept in memory, each. */
  readonly cacheSize: number;
}

export interface SharedPersonsDeps {
  readonly bucket: KvBucket;
  readonly writer: BatchWriter;
  readonly metrics?: Metrics;
}

/**
 * Rounds of read-then-write of one event before it fails (its batch is then retried). Each lost round means
 * another write to one of its records landed first, so this is only reached under a storm.
 */
const MAX_ATTEMPTS = 64;

/**
 * Persons of identified events when several ingest processes share them (issue 28; the rules are
 * PersonState's, SPEC §2): the state lives in the shared KV bucket and changes by compare-and-set; the store's
 * `persons` and `person_distinct_ids` rows are its projection, written after. The argument that several
 * processes end with what one would have is docs/persons-across-processes.md.
 *
 * An event whose person is cached, live, and unchanged by it is taken synchronously, as PersonState takes a
 * cached one; every other reads what it lacks and writes conditionally, and on a lost condition is worked out
 * again from fresh reads.
 */
export class SharedPersons implements Persons {
  readonly #chains: PersonChains;
  readonly #writer: BatchWriter;
  readonly #committing = new Committing();

  constructor(config: SharedPersonsConfig, deps: SharedPersonsDeps) {
    this.#chains = new PersonChains(config, deps);
    this.#writer = deps.writer;
  }

  /** A change of a `p.` record seen by the bucket's watch (made by any process). */
  apply(key: string, value: unknown, revision: number): void {
    this.#chains.apply(key, value, revision);
  }

  /** The watch was started again: what is cached may have missed changes. */
  reset(): void {
    this.#chains.reset();
  }

  prefetch(events: readonly CapturedEvent[]): Promise<void> | void {
    const misses = new Map<number, Set<string>>();
    const want = (project: number, distinctId: string): void => {
      if (this.#chains.hasLink(project, distinctId)) return;
      let ids = misses.get(project);
      if (!ids) misses.set(project, (ids = new Set()));
      ids.add(distinctId);
    };
    for (const e of events) {
      if (e.properties['$process_person_profile'] === false) continue;
      want(e.projectId, e.distinctId);
      const merge = validMerge(e);
      if (merge) want(e.projectId, merge.other);
    }
    if (misses.size === 0) return;
    return Promise.all([...misses].map(([project, ids]) => this.#chains.load(project, [...ids]))).then(
      () => undefined,
    );
  }

  ready(event: CapturedEvent): boolean {
    if (event.properties['$process_person_profile'] === false) return true;
    if (validMerge(event)) return false;
    return this.#unchanged(event) !== undefined;
  }

  process(event: CapturedEvent): PersonOutcome | Promise<PersonOutcome> {
    const { valid, warning } = eventMerge(event);
    if (!valid) {
      const p = this.#unchanged(event);
      if (p)
        return {
          person: { id: p.id, properties: p.record.properties },
          warning,
          written: this.#committing.get(p.id),
        };
    }
    return this.#run(event, valid, warning);
  }

  forget(projectId: number, personIds: readonly string[], distinctIds: readonly string[]): Promise<void> {
    return this.#chains.forget(projectId, personIds, distinctIds);
  }

  /** The cached person of an event that changes nothing about it (the common case), else undefined. */
  #unchanged(event: CapturedEvent): SeenPerson | undefined {
    const p = this.#chains.cached(event.projectId, event.distinctId);
    if (!p || p.record.lastEvent === event.uuid) return undefined;
    return applyPropertyUpdates(p.record.properties, event.properties) === p.record.properties
      ? p
      : undefined;
  }

  async #run(
    event: CapturedEvent,
    merge: MergeRequest | undefined,
    warning: IngestionWarning | undefined,
  ): Promise<PersonOutcome> {
    const ctx: EventContext = {
      project: event.projectId,
      event: event.uuid,
      rows: new Projection(event.projectId),
      carried: false,
    };
    const change = changeOf(event.properties);
    try {
      for (let attempt = 1; ; attempt++) {
        ctx.carried = false;
        try {
          const done = merge
            ? await this.#merge(ctx, event, merge, change)
            : { person: await this.#plain(ctx, event, change) };
          const { id, record } = done.person;
          return {
            person: { id, properties: record.properties },
            warning: warning ?? done.warning,
            written: this.#written(ctx, id),
          };
        } catch (err) {
          if (!(err instanceof KvConflict) || attempt >= MAX_ATTEMPTS) throw err;
        }
      }
    } catch (err) {
      // What reached the bucket before the failure is projected all the same; the event is retried anyway.
      this.#written(ctx, undefined)?.catch(() => undefined);
      throw err;
    } finally {
      this.#chains.trim();
    }
  }

  async #plain(
    ctx: EventContext,
    event: CapturedEvent,
    change: PropertyChange | undefined,
  ): Promise<SeenPerson> {
    const person = await this.#chains.personOf(ctx, event.distinctId);
    if (person) return this.#change(ctx, person, change, false);
    const record = newPerson(event.distinctId, change, false, event.timestamp, ctx.event);
    return this.#chains.create(ctx, uuidv7(), record, event.distinctId);
  }

  /**
   * `$identify` / `$create_alias`, by PersonState's rules: no person on either side makes one for both; one
   * person takes the other id; two are merged (`other`'s into `into`'s) unless `other`'s is identified, which
   * is refused with a warning. The result is identified either way.
   */
  async #merge(
    ctx: EventContext,
    event: CapturedEvent,
    merge: MergeRequest,
    change: PropertyChange | undefined,
  ): Promise<{ person: SeenPerson; warning?: IngestionWarning }> {
    const into = await this.#chains.personOf(ctx, merge.into);
    const other = await this.#chains.personOf(ctx, merge.other);
    if (!into && !other) {
      // Made as `other`'s own first event would make it, empty, then `into` joins it: should either id be
      // linked elsewhere meanwhile, the event is worked out again as a join or a merge, as one process would.
      const record = newPerson(merge.other, undefined, false, event.timestamp, ctx.event);
      const made = await this.#chains.create(ctx, uuidv7(), record, merge.other);
      return { person: await this.#join(ctx, merge.into, made, change) };
    }
    if (!into) return { person: await this.#join(ctx, merge.into, other!, change) };
    if (!other) return { person: await this.#join(ctx, merge.other, into, change) };
    if (into.id === other.id) return { person: await this.#change(ctx, into, change, true) };
    if (other.record.isIdentified) {
      return {
        person: await this.#change(ctx, into, change, true),
        warning: eventWarning(event, PERSON_WARNINGS.alreadyIdentified, {
          sourcePersonDistinctId: merge.other,
          targetPersonDistinctId: merge.into,
        }),
      };
    }
    // The merge is decided here: `other` is frozen, forwarding to `into` with this event's updates.
    await this.#chains.update(ctx, other, mergedAway(other.record, into.id, change, ctx.event), []);
    // Completes the absorption into whatever `into` is now (it may have been merged on meanwhile).
    return { person: await this.#chains.live(ctx, other.id) };
  }

  /** Links `distinctId` to `person`, carrying the event's updates, then completes the link. */
  async #join(
    ctx: EventContext,
    distinctId: string,
    person: SeenPerson,
    change: PropertyChange | undefined,
  ): Promise<SeenPerson> {
    const link: LinkRecord = {
      person: person.id,
      event: ctx.event,
      identify: true,
      ...(change ? { change } : {}),
    };
    await this.#chains.link(ctx, distinctId, link);
    return this.#chains.update(ctx, person, withLink(person.record, distinctId, link), [distinctId]);
  }

  /** The event's updates on a live person (identifying it when `identify`), written when they change it. */
  async #change(
    ctx: EventContext,
    person: SeenPerson,
    change: PropertyChange | undefined,
    identify: boolean,
  ): Promise<SeenPerson> {
    if (ctx.carried || person.record.lastEvent === ctx.event) {
      // An earlier run or attempt of this event got its updates in: only its rows are written again.
      ctx.rows.person(person.id, person.record, person.revision);
      return person;
    }
    const next = withChange(person.record, change, identify, ctx.event);
    return next === person.record ? person : this.#chains.update(ctx, person, next, []);
  }

  /** Writes the event's rows; what the event waits for: them, and earlier rows of its person in flight. */
  #written(ctx: EventContext, personId: string | undefined): Promise<void> | undefined {
    const commit = ctx.rows.write(this.#writer);
    if (commit) this.#committing.add(ctx.rows.personIds(), commit);
    return allCommitted([commit, personId === undefined ? undefined : this.#committing.get(personId)]);
  }
}
