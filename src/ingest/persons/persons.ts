import type { CapturedEvent, IngestionWarning } from '../../core/event.ts';
import type { GroupTypeIndexes } from './group-types.ts';

/**
 * What the pipeline's person and group steps need of person and group state. Two implementations: the
 * process's own (PersonState, GroupState: one ingest process, its caches exact) and the shared one
 * (ingest/shared/: state in a NATS KV bucket that every ingest process changes by compare-and-set).
 */

/** The person an event ends up with. */
export interface PersonRef {
  readonly id: string;
  /** Never mutated: events hold it as their `person_properties`. */
  readonly properties: Record<string, unknown>;
}

/** What processing an event did to its person. */
export interface PersonOutcome {
  readonly person: PersonRef;
  readonly warning?: IngestionWarning;
  /** Commit of the rows the event's person depends on (written now, or earlier and still in flight). */
  readonly written?: Promise<void>;
}

export interface Persons {
  /** Loads what a batch's events need in as few round trips as it can; synchronous when nothing is missing. */
  prefetch(events: readonly CapturedEvent[]): Promise<void> | void;
  /** Whether `process` can take the event synchronously (everything it needs is in memory, nothing to write). */
  ready(event: CapturedEvent): boolean;
  /** Resolves the event's person, merging and applying its property updates. Synchronous when it can be. */
  process(event: CapturedEvent): PersonOutcome | Promise<PersonOutcome>;
  /**
   * Forgets persons an erasure deletes (their ids, and every distinct id of theirs): later events of those
   * distinct ids get new persons. Resolves once the writes of theirs already under way are committed.
   */
  forget(projectId: number, personIds: readonly string[], distinctIds: readonly string[]): Promise<void>;
}

export type IdentifyOutcome =
  { readonly kind: 'ok'; readonly written?: Promise<void> } | { readonly kind: 'type_limit' };

export interface Groups {
  /** Reads every project's group types now (only a store's sole writer may rely on it). */
  preloadTypes(): Promise<void>;
  /** Column indexes of group types, mapping new types while the project has free indexes. */
  typeIndexes(projectId: number, types: readonly string[]): Promise<GroupTypeIndexes>;
  /** `$groupidentify`: creates or updates the group, `$group_set` merged one level deep. */
  identify(
    projectId: number,
    groupType: string,
    groupKey: string,
    set: Record<string, unknown>,
    timestamp: number,
  ): Promise<IdentifyOutcome>;
  /** True the first time this process refuses a type of a project: ordinary events warn once, not per event. */
  firstRefusal(projectId: number, type: string): boolean;
}
