import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import type { PersonState } from '../persons/person-state.ts';

/**
 * Gives an identified event its person (SPEC §2): merges for `$identify` / `$create_alias`, applies
 * `$set` / `$set_once` / `$unset`, and records the person's id and properties after this event on the
 * event row. Anonymous events (`propertyless`) were given their id already and are left alone.
 */
export function processPerson(persons: PersonState): Step {
  return {
    name: 'process-person',
    prepare: (events) => persons.prefetch(events),
    async run(event: PipelineEvent): Promise<StepResult> {
      if (event.personMode !== 'full') return OK;
      const { person, warning, written } = await persons.process(event);
      event.personId = person.id;
      event.personProperties = person.properties;
      if (warning) return { kind: 'warn', warning, written };
      return written ? { kind: 'ok', written } : OK;
    },
  };
}
