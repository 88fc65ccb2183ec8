import type { CapturedEvent, IngestionWarning } from '../../core/event.ts';
import { illegalIdOf, mergeRequest, type MergeRequest } from './person-rules.ts';
import { eventWarning, PERSON_WARNINGS } from './warnings.ts';

/**
 * The merge an event asks for as both person states take it (one process's, and the one shared in NATS KV):
 * the merge when its ids may be merged, or the warning that refuses it when one of them is illegal.
 */
export function eventMerge(event: CapturedEvent): {
  readonly valid: MergeRequest | undefined;
  readonly warning: IngestionWarning | undefined;
} {
  const merge = mergeRequest(event.event, event.distinctId, event.properties);
  const illegal = merge && illegalIdOf(merge);
  if (!merge || illegal === undefined) return { valid: merge, warning: undefined };
  return {
    valid: undefined,
    warning: eventWarning(event, PERSON_WARNINGS.illegalDistinctId, {
      illegalDistinctId: illegal,
      otherDistinctId: illegal === merge.into ? merge.other : merge.into,
    }),
  };
}

/** The merge an event asks for, when its ids may be merged at all (only those are worth loading). */
export function validMerge(event: CapturedEvent): MergeRequest | undefined {
  const merge = mergeRequest(event.event, event.distinctId, event.properties);
  return merge && illegalIdOf(merge) === undefined ? merge : undefined;
}
