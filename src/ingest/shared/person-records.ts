import { applyPropertyUpdates } from '../persons/person-rules.ts';

/**
 * The records of shared person state and the pure rules that change them (docs/persons-across-processes.md).
 * Every function returns a new record, or the same object when nothing changes (then nothing is written).
 */

/** An event's property updates, as the event carried them (`applyPropertyUpdates` reads these three keys). */
export interface PropertyChange {
  readonly $set?: unknown;
  readonly $set_once?: unknown;
  readonly $unset?: unknown;
}

/** `p.<project>.<person uuid>` */
export interface PersonRecord {
  readonly properties: Record<string, unknown>;
  readonly isIdentified: boolean;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /**
   * Its distinct ids whose link is complete, the first one the id it was made for. A link whose id is not
   * here yet (on the live person of its chain) is pending: whoever reaches it completes it.
   */
  readonly ids: readonly string[];
  /** Set once, when it is merged away: it forwards to this person, and is never written again. */
  readonly mergedInto?: string;
  /** On a merged-away person: the merging event's updates, applied where it is absorbed. */
  readonly change?: PropertyChange;
  /** The event whose change made this state: that event, run again after a crash, writes its rows again. */
  readonly lastEvent?: string;
}

/** `d.<project>.<distinct id>`: made once, never changed. */
export interface LinkRecord {
  readonly person: string;
  /** The event that made the link. */
  readonly event?: string;
  /** What completing the link does besides adding the id: identify the person, apply updates. */
  readonly identify?: boolean;
  readonly change?: PropertyChange;
}

/** The `$set` / `$set_once` / `$unset` of an event, or undefined when it has none. */
export function changeOf(properties: Record<string, unknown>): PropertyChange | undefined {
  const set = properties['$set'];
  const setOnce = properties['$set_once'];
  const unset = properties['$unset'];
  if (set === undefined && setOnce === undefined && unset === undefined) return undefined;
  const change: { $set?: unknown; $set_once?: unknown; $unset?: unknown } = {};
  if (set !== undefined) change.$set = set;
  if (setOnce !== undefined) change.$set_once = setOnce;
  if (unset !== undefined) change.$unset = unset;
  return change;
}

function applied(
  properties: Record<string, unknown>,
  change: PropertyChange | undefined,
): Record<string, unknown> {
  return change ? applyPropertyUpdates(properties, change as Record<string, unknown>) : properties;
}

/** A person made for `distinctId` by an event (identified when the event is a merge). */
export function newPerson(
  distinctId: string,
  change: PropertyChange | undefined,
  identify: boolean,
  createdAt: number,
  event: string,
): PersonRecord {
  return {
    properties: applied({}, change),
    isIdentified: identify,
    createdAt,
    ids: [distinctId],
    lastEvent: event,
  };
}

/** A live person after an event's updates (identified too when `identify`); the same object when unchanged. */
export function withChange(
  p: PersonRecord,
  change: PropertyChange | undefined,
  identify: boolean,
  event: string,
): PersonRecord {
  const properties = applied(p.properties, change);
  if (properties === p.properties && (!identify || p.isIdentified)) return p;
  return { ...live(p), properties, isIdentified: p.isIdentified || identify, lastEvent: event };
}

/** A live person with a pending link of `distinctId` completed: the id joins it, the link's updates apply. */
export function withLink(p: PersonRecord, distinctId: string, link: LinkRecord): PersonRecord {
  return {
    ...live(p),
    properties: applied(p.properties, link.change),
    isIdentified: p.isIdentified || link.identify === true,
    ids: [...p.ids, distinctId],
    lastEvent: link.event,
  };
}

/** `other` merged away into `into`: frozen as it is, forwarding, with the merging event's updates. */
export function mergedAway(
  other: PersonRecord,
  into: string,
  change: PropertyChange | undefined,
  event: string,
): PersonRecord {
  const tombstone: PersonRecord = { ...other, mergedInto: into, lastEvent: event };
  return change ? { ...tombstone, change } : tombstone;
}

/**
 * `into` after absorbing the merged-away `other` (PostHog's rules, as PersonState's merge): on a key both
 * have, the kept person's value wins; then the merging event's updates; identified; the earlier creation
 * time; every distinct id of both.
 */
export function absorbed(into: PersonRecord, other: PersonRecord): PersonRecord {
  const have = new Set(into.ids);
  return {
    ...live(into),
    properties: applied({ ...other.properties, ...into.properties }, other.change),
    isIdentified: true,
    createdAt: Math.min(into.createdAt, other.createdAt),
    ids: [...into.ids, ...other.ids.filter((id) => !have.has(id))],
    lastEvent: other.lastEvent,
  };
}

/**
 * Whether the merged-away `other` has been absorbed by `successor`, the live end of its chain (with every
 * absorption between them completed). Its first id tells: a distinct id is linked to exactly one person, and
 * only absorbing `other` (or a person that absorbed it) brings that id to another.
 */
export function isAbsorbed(other: PersonRecord, successor: PersonRecord): boolean {
  const first = other.ids[0];
  return first === undefined || successor.ids.includes(first);
}

/** A live record without the fields only a merged-away one has. */
function live(p: PersonRecord): PersonRecord {
  if (p.mergedInto === undefined && p.change === undefined) return p;
  const { mergedInto: _into, change: _change, ...rest } = p;
  return rest;
}

/** A record read from the bucket, checked enough that a foreign value cannot crash ingest later. */
export function asPersonRecord(value: unknown): PersonRecord {
  const v = value as Partial<PersonRecord> | null;
  if (!v || typeof v !== 'object' || !Array.isArray(v.ids) || typeof v.properties !== 'object')
    throw new Error('not a person record');
  return v as PersonRecord;
}

export function asLinkRecord(value: unknown): LinkRecord {
  const v = value as Partial<LinkRecord> | null;
  if (!v || typeof v !== 'object' || typeof v.person !== 'string') throw new Error('not a distinct id link');
  return v as LinkRecord;
}
