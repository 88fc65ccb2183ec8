import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import type { PersonOutcome, Persons } from '../persons/persons.ts';

/**
 * Gives an identified event its person (SPEC §2): merges for `$identify` / `$create_alias`, applies
 * `$set` / `$set_once` / `$unset`, and records the person's id and properties after this event on the
 * event row. Anonymous events (`propertyless`) were given their id already and are left alone.
 */
export function processPerson(persons: Persons): Step {
  return {
    name: 'process-person',
    prepare: (events) => persons.prefetch(events),
    ready: (event) => persons.ready(event),
    run(event: PipelineEvent): StepResult | Promise<StepResult> {
      if (event.personMode !== 'full') return OK;
      const outcome = persons.process(event);
      return outcome instanceof Promise ? outcome.then((o) => apply(event, o)) : apply(event, outcome);
    },
  };
}

function apply(event: PipelineEvent, { person, warning, written }: PersonOutcome): StepResult {
  event.personId = person.id;
  event.personProperties = person.properties;
  if (warning) return { kind: 'warn', warning, written };
  return written ? { kind: 'ok', written } : OK;
}
