import type { CapturedEvent, IngestionWarning } from './event.ts';

/** An event as it goes through ingest: what capture sent, plus what the steps work out. */
export interface PipelineEvent extends CapturedEvent {
  personId: string;
  /** `full` (person processed), `propertyless` ($process_person_profile: false). */
  personMode: 'full' | 'propertyless';
  personProperties: Record<string, unknown>;
  /** `$group_0` … `$group_4`: the group key of each group type index, '' when none. */
  groups: [string, string, string, string, string];
}

/**
 * What an ingest step says about an event. Steps return results rather than throw; they throw only for
 * infrastructure faults (the store is down), which fail the batch so it is retried.
 */
export type StepResult =
  /** `written`, when set, resolves once the state rows this step wrote (persons, groups) are committed. */
  | { readonly kind: 'ok'; readonly written?: Promise<void> }
  /** Not stored. `warning`, when set, is written so the drop can be seen from a query. */
  | { readonly kind: 'drop'; readonly reason: string; readonly warning?: IngestionWarning }
  /** Stored, and a warning is written beside it. */
  | { readonly kind: 'warn'; readonly warning: IngestionWarning; readonly written?: Promise<void> };

export const OK: StepResult = Object.freeze({ kind: 'ok' });

export interface Step {
  readonly name: string;
  /**
   * Optional: called once with a whole batch before its events run, so a step can load what it needs
   * for all of them in one store round trip instead of one per event.
   */
  prepare?(events: readonly CapturedEvent[]): Promise<void> | void;
  /**
   * Optional: whether `prepare` and `run` can take this event without waiting for the store (its state is
   * in memory). A step without it never waits. Ingest runs the events of a turn that are ready, across
   * partitions, as one batch; the others wait in their partition's actor, so a lookup holds up only them.
   */
  ready?(event: CapturedEvent): boolean;
  run(event: PipelineEvent): StepResult | Promise<StepResult>;
}
