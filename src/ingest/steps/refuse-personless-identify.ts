import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import { eventWarning, PERSON_WARNINGS } from '../persons/warnings.ts';

/** Events whose whole point is to change a person or a group. */
const PERSON_EVENTS = new Set(['$identify', '$create_alias', '$groupidentify']);

/**
 * `$process_person_profile: false` promises that no person is made or changed (SPEC §2). An identify,
 * alias or group identify sent that way contradicts itself: storing it as a plain event would look like
 * an identify that did nothing, so it is dropped — with a warning, because it is the caller's bug.
 */
export function refusePersonlessIdentify(): Step {
  return {
    name: 'refuse-personless-identify',
    run(event: PipelineEvent): StepResult {
      if (event.personMode !== 'propertyless' || !PERSON_EVENTS.has(event.event)) return OK;
      return {
        kind: 'drop',
        reason: 'person_event_without_person_processing',
        warning: eventWarning(event, PERSON_WARNINGS.personlessPersonEvent, {}),
      };
    },
  };
}
