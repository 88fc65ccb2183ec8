import { v5 as uuidv5 } from 'uuid';
import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';

/** Namespace of the deterministic person id of personless events (a fixed, arbitrary UUID). */
const PERSONLESS_NAMESPACE = 'a8d0c3f2-5b7e-4f3a-9c1d-2e6b8f4a7d90';

/** The person id a distinct id has when no person was ever made for it: stable across processes. */
export function personlessId(projectId: number, distinctId: string): string {
  return uuidv5(`${projectId}:${distinctId}`, PERSONLESS_NAMESPACE);
}

/**
 * Anonymous events (`$process_person_profile: false`, SPEC §2) get no person: a deterministic id from their
 * distinct id and mode `propertyless`. Identified events are left for the person step.
 */
export function assignPersonMode(): Step {
  return {
    name: 'assign-person-mode',
    run(event: PipelineEvent): StepResult {
      if (event.properties['$process_person_profile'] === false) {
        event.personMode = 'propertyless';
        event.personId = personlessId(event.projectId, event.distinctId);
      }
      return OK;
    },
  };
}
