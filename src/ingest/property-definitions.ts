import type { Logger } from '../core/logger.ts';
import type {
  PropertyCatalog,
  PropertyDefinition,
  PropertyDefinitionFilter,
  PropertyParent,
} from '../core/property-catalog.ts';
import {
  NO_PROPERTY_TYPES,
  type PropertyDefinitions,
  type PropertyType,
  type PropertyTypes,
} from '../core/property-types.ts';
import type { Store } from '../core/ports.ts';
import type { PipelineEvent } from '../core/step.ts';
import { mergeDefinition, sameDefinition, type DefinitionState } from './property-definition-merge.ts';
import { PropertyDefinitionRows, type StoredDefinition } from './property-definition-rows.ts';
import { detectPropertyType } from './property-types.ts';

/**
 * The property definitions of every project (PostHog's): which event and person properties ingest has seen,
 * and the type each was given. Held in memory, loaded from the store at start, and written to it in batches
 * off the hot path (only what is new or changed).
 *
 * The first type seen wins, as in PostHog: a later value of another type does not change a property's type
 * (a property first seen as `"42"` stays a String). A property seen only with null, lists or objects has no
 * type until a value with one comes. `setType` changes a type on purpose (the API's PATCH).
 *
 * Ingest's work per event is a Map lookup per property key: each event name keeps the set of keys already
 * handled today, and only a key not in it takes the slow path (detection, the definition, a row to write).
 * The sets are cleared when the UTC day changes, so a definition's `last_seen_at` is rewritten once a day.
 *
 * Several processes may record into one store (the ClickHouse server store: many `weir ingest`, and query
 * nodes setting types through the API). Such a registry reloads (`reloadMs`), and a reload MERGES the store's
 * rows into memory (property-definition-merge.ts: union of events, earliest first seen, latest last seen, a
 * type set on purpose before a detected one, else the type of the definition first seen earliest) rather than
 * replacing it. A definition whose merged state differs from its row is written again, by a registry that
 * records (one that only reads leaves the repair to those): so a union one write lost is restored by the next
 * reload, and every process ends on one type. One whose state equals its row is not written, so processes do
 * not trade rows. Before writing, such a registry also merges the rows it is about to replace, read just then:
 * a type set on purpose elsewhere since the last reload is kept rather than overwritten from memory. Ingest's
 * per-event path is the same in both cases; merging happens on reload and write only.
 */

export interface PropertyDefinitionsConfig {
  /**
   * Reload from the store this often (ms), merging what it holds (see above): for a process whose ingest is
   * elsewhere, which would otherwise never see a new definition, and for one of several that record into one
   * store. 0 in the one process that records them (the embedded store): it never reads again. @default 0
   */
  readonly reloadMs?: number;
  /** Most definitions kept (all projects); past it, new ones are not recorded. @default 100000 */
  readonly maxDefinitions?: number;
  /** How long a new definition may wait before it is written (ms). @default 500 */
  readonly flushMs?: number;
}

export interface PropertyDefinitionsDeps {
  /** Reads and writes of `property_definitions` (a query node's is the store owner's, over its store API). */
  readonly store: Pick<Store, 'query' | 'insert'>;
  readonly logger: Logger;
}

/** Event properties that are not properties of the event (PostHog skips them too). */
const SKIPPED_EVENT_KEYS = new Set([
  '$set',
  '$set_once',
  '$unset',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
  '$groups',
]);
/** Events whose properties PostHog records nothing of: its own metrics, and group identification. */
const SKIPPED_EVENTS = new Set(['$$plugin_metrics', '$groupidentify']);
/** Longest property name recorded, in UTF-8 bytes (PostHog's limit). */
const MAX_NAME_BYTES = 200;
/** An event with more properties than this records none (PostHog skips such an event whole). */
const MAX_PROPERTIES_PER_EVENT = 10_000;
/** Most event names listed on one definition. */
const MAX_EVENTS_PER_PROPERTY = 100;
/** Most (event, key) pairs remembered as handled; past it the sets start again (they are only a cache). */
const MAX_SEEN_PAIRS = 1_000_000;
/** Events from the bus whose properties are JSON text, waiting to be read (past it they are skipped). */
const MAX_DEFERRED = 2_000;
/** The share of the main thread reading deferred properties may take: this many ms in every window. */
const DEFERRED_BUDGET_MS = 1;
const DEFERRED_WINDOW_MS = 20;
const RETRY_MS = 5_000;
const DAY_MS = 86_400_000;

/** One definition as held: mutable, changed only here. */
class Definition implements DefinitionState {
  constructor(
    readonly projectId: number,
    readonly type: PropertyParent,
    readonly name: string,
    public propertyType: PropertyType | null,
    public events: string[],
    public firstSeenAt: number,
    public lastSeenAt: number,
    public typeChangedAt: number | null,
  ) {}

  /** The UTC day of `lastSeenAt`: the fast path compares it with today's. */
  get seenDay(): number {
    return Math.floor(this.lastSeenAt / DAY_MS);
  }
}

class ProjectState {
  constructor(readonly id: number) {}

  readonly event = new Map<string, Definition>();
  readonly person = new Map<string, Definition>();
  /** Per event name, the keys handled today: the fast path. */
  seen = new Map<string, Set<string>>();
  version = 0;
  snapshot: PropertyTypes | undefined;
}

/** A project's types at one moment: what the query layer compiles against. */
class TypesSnapshot implements PropertyTypes {
  readonly #event: ReadonlyMap<string, PropertyType>;
  readonly #person: ReadonlyMap<string, PropertyType>;

  constructor(
    state: ProjectState,
    readonly version: number,
  ) {
    this.#event = typed(state.event);
    this.#person = typed(state.person);
  }

  event(name: string): PropertyType | undefined {
    return this.#event.get(name);
  }

  person(name: string): PropertyType | undefined {
    return this.#person.get(name);
  }
}

function typed(definitions: ReadonlyMap<string, Definition>): Map<string, PropertyType> {
  const out = new Map<string, PropertyType>();
  for (const [name, d] of definitions) if (d.propertyType !== null) out.set(name, d.propertyType);
  return out;
}

interface Deferred {
  readonly projectId: number;
  readonly event: string;
  readonly json: string;
}

export class PropertyDefinitionRegistry implements PropertyDefinitions, PropertyCatalog {
  readonly #rows: PropertyDefinitionRows;
  readonly #logger: Logger;
  readonly #reloadMs: number;
  readonly #maxDefinitions: number;
  readonly #flushMs: number;
  #projects = new Map<number, ProjectState>();
  #definitions = 0;
  #seenPairs = 0;
  #day = Math.floor(Date.now() / DAY_MS);
  /** Types changed so far in this process: every version handed out is new. */
  #versions = 0;
  /** The version of the next row written: above every stored one, so the newest write always counts. */
  #rowVersion = 0;
  readonly #pending = new Set<Definition>();
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #reloadTimer: NodeJS.Timeout | undefined;
  #deferred: Deferred[] = [];
  #deferredScheduled = false;
  #deferredSkipped = 0;
  #fullWarned = false;
  #closed = false;
  /** True once this process recorded or set a type: it then writes back merged rows that differ. */
  #records = false;

  constructor(config: PropertyDefinitionsConfig, deps: PropertyDefinitionsDeps) {
    this.#rows = new PropertyDefinitionRows(deps.store);
    this.#logger = deps.logger;
    this.#reloadMs = config.reloadMs ?? 0;
    this.#maxDefinitions = config.maxDefinitions ?? 100_000;
    this.#flushMs = config.flushMs ?? 500;
  }

  /**
   * Reads what the store holds. Ingest must not record before this is done: a property seen again before its
   * stored definition is read would be typed afresh.
   */
  async start(): Promise<void> {
    await this.#exclusive(() => this.#load());
    if (this.#reloadMs > 0) this.#scheduleReload();
  }

  /** Forgets a deleted project's definitions, written or not: none of them is written to the store again. */
  forgetProject(projectId: number): void {
    const state = this.#projects.get(projectId);
    if (!state) return;
    this.#projects.delete(projectId);
    this.#definitions -= state.event.size + state.person.size;
    for (const d of this.#pending) if (d.projectId === projectId) this.#pending.delete(d);
  }

  forProject(projectId: number): PropertyTypes {
    const state = this.#projects.get(projectId);
    if (state === undefined || state.version === 0) return NO_PROPERTY_TYPES;
    return (state.snapshot ??= new TypesSnapshot(state, state.version));
  }

  /**
   * Records the definitions of stored events: their properties, and the person properties of `$set` /
   * `$set_once` on events that update a person. Synchronous; what is new is written later.
   */
  observe(events: readonly PipelineEvent[]): void {
    if (events.length === 0 || this.#closed) return;
    this.#records = true;
    const now = Date.now();
    const day = Math.floor(now / DAY_MS);
    if (day !== this.#day) this.#newDay(day);
    let projectId = -1;
    let state: ProjectState | undefined;
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (SKIPPED_EVENTS.has(e.event)) continue;
      if (e.projectId !== projectId || state === undefined) {
        projectId = e.projectId;
        state = this.#state(projectId);
      }
      if (e.propertiesJson === undefined) this.#observeEvent(state, e.event, e.properties, now, day);
      else this.#defer(e);
      if (e.personMode === 'full') {
        const set = e.properties['$set'];
        if (isObject(set)) this.#observePerson(state, set, now, day);
        const setOnce = e.properties['$set_once'];
        if (isObject(setOnce)) this.#observePerson(state, setOnce, now, day);
      }
    }
  }

  #observeEvent(
    state: ProjectState,
    event: string,
    properties: Record<string, unknown>,
    now: number,
    day: number,
  ): void {
    let seen = state.seen.get(event);
    if (seen === undefined) {
      seen = new Set();
      state.seen.set(event, seen);
    }
    let sized = false;
    for (const key in properties) {
      if (seen.has(key)) continue;
      if (!sized) {
        sized = true;
        if (Object.keys(properties).length > MAX_PROPERTIES_PER_EVENT) return;
      }
      this.#newEventKey(state, event, seen, key, properties[key], now, day);
    }
  }

  /** The slow path: an event property not handled today. */
  #newEventKey(
    state: ProjectState,
    event: string,
    seen: Set<string>,
    key: string,
    value: unknown,
    now: number,
    day: number,
  ): void {
    if (SKIPPED_EVENT_KEYS.has(key) || Buffer.byteLength(key) > MAX_NAME_BYTES) {
      this.#handled(seen, key);
      return;
    }
    let d = state.event.get(key);
    if (d === undefined) {
      d = this.#add(state, 'event', key, detectPropertyType(key, value, now / 1000), now, event);
      if (d === undefined) {
        this.#handled(seen, key); // full: looked at again tomorrow
        return;
      }
    } else {
      let changed = this.#typeIfNone(state, d, key, value, now);
      if (d.seenDay !== day) {
        d.lastSeenAt = now;
        changed = true;
      }
      if (d.events.length < MAX_EVENTS_PER_PROPERTY && !d.events.includes(event)) {
        d.events.push(event);
        changed = true;
      }
      if (changed) this.#queue(d);
    }
    // An untyped property is looked at again with each value until one has a type.
    if (d.propertyType !== null) this.#handled(seen, key);
  }

  #observePerson(state: ProjectState, set: Record<string, unknown>, now: number, day: number): void {
    for (const key in set) {
      const d = state.person.get(key);
      if (d === undefined || d.propertyType === null || d.seenDay !== day) {
        if (Buffer.byteLength(key) > MAX_NAME_BYTES) continue;
        if (d === undefined)
          this.#add(state, 'person', key, detectPropertyType(key, set[key], now / 1000), now);
        else {
          let changed = this.#typeIfNone(state, d, key, set[key], now);
          if (d.seenDay !== day) {
            d.lastSeenAt = now;
            changed = true;
          }
          if (changed) this.#queue(d);
        }
      }
    }
  }

  /** A new definition, or undefined when the registry is full. */
  #add(
    state: ProjectState,
    type: PropertyParent,
    name: string,
    propertyType: PropertyType | undefined,
    now: number,
    event?: string,
  ): Definition | undefined {
    if (this.#definitions >= this.#maxDefinitions) {
      if (!this.#fullWarned) {
        this.#fullWarned = true;
        this.#logger.warn(
          { definitions: this.#definitions },
          'property definitions are at their bound: new properties are not recorded (nor typed)',
        );
      }
      return undefined;
    }
    const d = new Definition(
      state.id,
      type,
      name,
      propertyType ?? null,
      event === undefined ? [] : [event],
      now,
      now,
      null,
    );
    (type === 'event' ? state.event : state.person).set(name, d);
    this.#definitions++;
    if (d.propertyType !== null) this.#changed(state);
    this.#queue(d);
    return d;
  }

  /** Gives an untyped definition the type of this value, if it has one: true when it did. */
  #typeIfNone(state: ProjectState, d: Definition, key: string, value: unknown, now: number): boolean {
    if (d.propertyType !== null) return false;
    const t = detectPropertyType(key, value, now / 1000);
    if (t === undefined) return false;
    d.propertyType = t;
    this.#changed(state);
    return true;
  }

  #handled(seen: Set<string>, key: string): void {
    seen.add(key);
    if (++this.#seenPairs > MAX_SEEN_PAIRS) this.#forgetSeen();
  }

  #newDay(day: number): void {
    this.#day = day;
    this.#forgetSeen();
  }

  #forgetSeen(): void {
    for (const state of this.#projects.values()) state.seen = new Map();
    this.#seenPairs = 0;
  }

  #changed(state: ProjectState): void {
    state.version = ++this.#versions;
    state.snapshot = undefined;
  }

  #state(projectId: number): ProjectState {
    let state = this.#projects.get(projectId);
    if (state === undefined) {
      state = new ProjectState(projectId);
      this.#projects.set(projectId, state);
    }
    return state;
  }

  // Events from the JetStream bus carry their properties as JSON text: reading every one would cost ingest a
  // parse per event. They are read after the fact instead, a bounded share of the main thread at a time; at
  // saturation some are skipped, and a property first seen in one of those is recorded when it comes again.

  #defer(e: PipelineEvent): void {
    if (this.#deferred.length >= MAX_DEFERRED) {
      this.#deferredSkipped++;
      return;
    }
    this.#deferred.push({ projectId: e.projectId, event: e.event, json: e.propertiesJson! });
    if (!this.#deferredScheduled) {
      this.#deferredScheduled = true;
      setImmediate(() => this.#readDeferred());
    }
  }

  #readDeferred(): void {
    this.#deferredScheduled = false;
    const started = performance.now();
    const now = Date.now();
    const day = Math.floor(now / DAY_MS);
    if (day !== this.#day) this.#newDay(day);
    let i = 0;
    const items = this.#deferred;
    for (; i < items.length && performance.now() - started < DEFERRED_BUDGET_MS; i++) {
      const item = items[i]!;
      let properties: unknown;
      try {
        properties = JSON.parse(item.json);
      } catch {
        continue; // the event row holds the same text; a bad one is not ours to report
      }
      if (isObject(properties))
        this.#observeEvent(this.#state(item.projectId), item.event, properties, now, day);
    }
    this.#deferred = i === items.length ? [] : items.slice(i);
    if (this.#deferredSkipped > 0) {
      this.#logger.debug({ skipped: this.#deferredSkipped }, 'events skipped by property definitions');
      this.#deferredSkipped = 0;
    }
    if (this.#deferred.length > 0 && !this.#closed) {
      this.#deferredScheduled = true;
      setTimeout(() => this.#readDeferred(), DEFERRED_WINDOW_MS).unref();
    }
  }

  // The catalog (the management API).

  list(
    projectId: number,
    filter: PropertyDefinitionFilter,
  ): { results: PropertyDefinition[]; count: number } {
    const state = this.#projects.get(projectId);
    if (state === undefined) return { results: [], count: 0 };
    const search = filter.search?.toLowerCase();
    const all: Definition[] = [];
    for (const type of ['event', 'person'] as const) {
      if (filter.type !== undefined && filter.type !== type) continue;
      for (const d of state[type].values())
        if (search === undefined || d.name.toLowerCase().includes(search)) all.push(d);
    }
    all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.type < b.type ? -1 : 1));
    return {
      results: all.slice(filter.offset, filter.offset + filter.limit).map(publicDefinition),
      count: all.length,
    };
  }

  get(projectId: number, type: PropertyParent, name: string): PropertyDefinition | undefined {
    const d = this.#projects.get(projectId)?.[type].get(name);
    return d === undefined ? undefined : publicDefinition(d);
  }

  async setType(
    projectId: number,
    type: PropertyParent,
    name: string,
    propertyType: PropertyType,
  ): Promise<PropertyDefinition | undefined> {
    const state = this.#projects.get(projectId);
    const d = state?.[type].get(name);
    if (state === undefined || d === undefined) return undefined;
    this.#records = true;
    // Strictly later than the change before, even if the clock stepped back: the later change wins a merge.
    d.typeChangedAt = Math.max(Date.now(), (d.typeChangedAt ?? 0) + 1);
    if (d.propertyType !== propertyType) {
      d.propertyType = propertyType;
      this.#changed(state);
    }
    this.#queue(d);
    await this.flush();
    return publicDefinition(d);
  }

  // The store.

  #queue(d: Definition): void {
    this.#pending.add(d);
    if (this.#flushTimer === undefined && !this.#closed) {
      this.#flushTimer = setTimeout(() => void this.flush().catch(() => undefined), this.#flushMs);
      this.#flushTimer.unref();
    }
  }

  /** Writes every definition changed so far; resolves once stored. A failed write is tried again later. */
  flush(): Promise<void> {
    return this.#exclusive(() => this.#write());
  }

  /** Reads the store's definitions again now, merging them (after a change asked of another process). */
  reload(): Promise<void> {
    return this.#exclusive(() => this.#load());
  }

  /**
   * Runs reads and writes of the store one at a time: a reload that ran while a write was under way would
   * find the rows before it and queue the definitions written again.
   */
  #exclusive(work: () => Promise<void>): Promise<void> {
    const next = this.#flushing.then(work);
    this.#flushing = next.catch(() => undefined);
    return next;
  }

  async #write(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#pending.size === 0) return;
    let batch = [...this.#pending];
    this.#pending.clear();
    try {
      if (this.#reloadMs > 0) batch = await this.#mergeBeforeWrite(batch);
      if (batch.length > 0)
        await this.#rows.write(batch.map((d) => ({ ...d, version: this.#nextVersion() })));
    } catch (err) {
      for (const d of batch) this.#pending.add(d);
      if (!this.#closed) {
        this.#logger.warn({ err }, 'could not store property definitions; trying again shortly');
        this.#flushTimer = setTimeout(() => void this.flush().catch(() => undefined), RETRY_MS);
        this.#flushTimer.unref();
      }
      throw err;
    }
  }

  /**
   * With other writers: merges the rows the batch is about to replace, read now, into memory, and leaves out
   * the definitions whose rows already hold what memory does. Without it a type set through the API on a
   * query node since this process last reloaded would be overwritten by this process's older view.
   */
  async #mergeBeforeWrite(batch: Definition[]): Promise<Definition[]> {
    const stored = new Map<Definition, StoredDefinition>();
    for (const r of await this.#rows.read(batch)) {
      const d = this.#projects.get(r.projectId)?.[r.type].get(r.name);
      if (d !== undefined) stored.set(d, r);
    }
    const changed = new Set<ProjectState>();
    const out: Definition[] = [];
    for (const d of batch) {
      const r = stored.get(d);
      if (r !== undefined) {
        this.#rowVersion = Math.max(this.#rowVersion, r.version);
        if (this.#mergeInto(d, r.state)) changed.add(this.#state(d.projectId));
        if (sameDefinition(d, r.state)) continue;
      }
      out.push(d);
    }
    for (const state of changed) this.#changed(state);
    return out;
  }

  /** A version above every row this process has seen or written, and above its clock's microseconds. */
  #nextVersion(): number {
    this.#rowVersion = Math.max(this.#rowVersion + 1, Date.now() * 1000);
    return this.#rowVersion;
  }

  /**
   * Merges the store's definitions into memory (into nothing at start, which is a plain load). A project's
   * version changes only when one of its types did: queries compiled against it stay valid.
   */
  async #load(): Promise<void> {
    const { rows, maxVersion } = await this.#rows.readAll(this.#maxDefinitions);
    // Above every stored version, also another process's whose clock is ahead: a merged row must replace it.
    this.#rowVersion = Math.max(this.#rowVersion, maxVersion);
    const changed = new Set<ProjectState>();
    for (const r of rows) {
      const state = this.#state(r.projectId);
      const type = r.type;
      const stored = r.state;
      const d = state[type].get(r.name);
      if (d === undefined) {
        state[type].set(
          r.name,
          new Definition(
            state.id,
            type,
            r.name,
            stored.propertyType,
            [...stored.events],
            stored.firstSeenAt,
            stored.lastSeenAt,
            stored.typeChangedAt,
          ),
        );
        this.#definitions++;
        if (stored.propertyType !== null) changed.add(state);
        continue;
      }
      if (this.#mergeInto(d, stored)) changed.add(state);
      if (this.#records && !sameDefinition(d, stored)) this.#queue(d);
    }
    for (const state of changed) this.#changed(state);
  }

  /** Merges a stored state into a held definition; true when its type changed. */
  #mergeInto(d: Definition, stored: DefinitionState): boolean {
    if (sameDefinition(d, stored)) return false; // the usual case on a reload: nothing to allocate
    const merged = mergeDefinition(d, stored, MAX_EVENTS_PER_PROPERTY);
    const typeChanged = merged.propertyType !== d.propertyType;
    d.propertyType = merged.propertyType;
    d.typeChangedAt = merged.typeChangedAt;
    if (merged.events !== d.events) d.events = [...merged.events];
    d.firstSeenAt = merged.firstSeenAt;
    d.lastSeenAt = merged.lastSeenAt;
    return typeChanged;
  }

  #scheduleReload(): void {
    if (this.#closed) return; // a reload that was under way when closing starts no other
    this.#reloadTimer = setTimeout(() => {
      this.reload().then(
        () => this.#scheduleReload(),
        (err: unknown) => {
          this.#logger.warn({ err }, 'could not reload property definitions; trying again shortly');
          this.#scheduleReload();
        },
      );
    }, this.#reloadMs);
    this.#reloadTimer.unref();
  }

  /** Stops reloading and reading deferred events; writes what is pending. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reloadTimer);
    await this.flush();
  }
}

function publicDefinition(d: Definition): PropertyDefinition {
  return {
    type: d.type,
    name: d.name,
    propertyType: d.propertyType,
    events: [...d.events],
    firstSeenAt: new Date(d.firstSeenAt).toISOString(),
    lastSeenAt: new Date(d.lastSeenAt).toISOString(),
    typeChangedAt: d.typeChangedAt === null ? null : new Date(d.typeChangedAt).toISOString(),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
