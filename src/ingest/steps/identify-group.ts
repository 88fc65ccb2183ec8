import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import type { Groups } from '../persons/persons.ts';
import { MAX_GROUP_TYPES } from '../persons/group-types.ts';
import { eventWarning, PERSON_WARNINGS } from '../persons/warnings.ts';

/**
 * `$groupidentify` (SPEC §2) creates or updates group `($group_type, $group_key)` with `$group_set`
 * merged one level deep. The event itself is stored either way; a sixth group type of a project gets no
 * index and no group, only a warning.
 */
export function identifyGroup(groups: Groups): Step {
  return {
    name: 'identify-group',
    // A group is read or written through the store's queue: the event waits in its partition.
    ready: (event) => event.event !== '$groupidentify',
    run(event: PipelineEvent): StepResult | Promise<StepResult> {
      if (event.event !== '$groupidentify') return OK;
      return identify(event);
    },
  };

  async function identify(event: PipelineEvent): Promise<StepResult> {
    const type = event.properties['$group_type'];
    const key = event.properties['$group_key'];
    // Capture refuses a $groupidentify without both; this only guards events from an older capture.
    if (typeof type !== 'string' || typeof key !== 'string') return OK;
    const set = event.properties['$group_set'];
    const outcome = await groups.identify(
      event.projectId,
      type,
      key,
      typeof set === 'object' && set !== null && !Array.isArray(set) ? (set as Record<string, unknown>) : {},
      event.timestamp,
    );
    if (outcome.kind === 'ok') return outcome.written ? outcome : OK;
    // Remembered, so the same type in this event's `$groups` does not warn a second time.
    groups.firstRefusal(event.projectId, type);
    return {
      kind: 'warn',
      warning: eventWarning(event, PERSON_WARNINGS.groupTypeLimit, {
        groupType: type,
        groupKey: key,
        limit: MAX_GROUP_TYPES,
      }),
    };
  }
}
