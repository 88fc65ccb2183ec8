import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import type { Groups } from '../persons/persons.ts';
import { MAX_GROUP_TYPES } from '../persons/group-types.ts';
import { eventWarning, PERSON_WARNINGS } from '../persons/warnings.ts';

/**
 * `$groups: {type: key}` on any event (SPEC §2) fills the event's `$group_0` … `$group_4` columns. As in
 * PostHog, a type seen for the first time is given an index, but no group is made (only `$groupidentify`
 * makes groups). A type past the project's five is left out, with a warning the first time this process
 * meets it: an SDK sends `$groups` on every event, and one warning per event would bury the others.
 */
export function linkGroups(groups: Groups): Step {
  return {
    name: 'link-groups',
    // Group types are read through the store's queue (once per project): such events wait in their partition.
    ready: (event) => !isGroups(event.properties['$groups']),
    run(event: PipelineEvent): StepResult | Promise<StepResult> {
      const raw = event.properties['$groups'];
      if (!isGroups(raw)) return OK;
      return link(event, raw);
    },
  };

  async function link(event: PipelineEvent, raw: Record<string, unknown>): Promise<StepResult> {
    const keys = new Map<string, string>();
    for (const [type, key] of Object.entries(raw)) {
      // Keys are ids: strings, or numbers sent unquoted; anything else cannot name a group.
      if (type === '') continue;
      if (typeof key === 'string' && key !== '') keys.set(type, key);
      else if (typeof key === 'number' && Number.isFinite(key)) keys.set(type, String(key));
    }
    if (keys.size === 0) return OK;
    const { indexes, refused, written } = await groups.typeIndexes(event.projectId, [...keys.keys()]);
    for (const [type, index] of indexes) event.groups[index] = keys.get(type)!;
    const first = refused.filter((type) => groups.firstRefusal(event.projectId, type));
    if (first.length > 0) {
      return {
        kind: 'warn',
        warning: eventWarning(event, PERSON_WARNINGS.groupTypeLimit, {
          groupTypes: first,
          limit: MAX_GROUP_TYPES,
        }),
        written,
      };
    }
    return written ? { kind: 'ok', written } : OK;
  }
}

function isGroups(raw: unknown): raw is Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw);
}
