import type { CapturedEvent, IngestionWarning } from '../../core/event.ts';

/**
 * The ingestion warnings person and group processing writes, in one table. The names are PostHog's where
 * PostHog has one, so dashboards and habits carry over.
 */
export const PERSON_WARNINGS = {
  /** `$identify` / `$create_alias` naming an id such as `anonymous` or `null`: not merged. */
  illegalDistinctId: 'cannot_merge_with_illegal_distinct_id',
  /** `$identify` / `$create_alias` whose other id's person is identified already: not merged. */
  alreadyIdentified: 'cannot_merge_already_identified',
  /** `$identify`, `$create_alias` or `$groupidentify` with `$process_person_profile: false`: dropped. */
  personlessPersonEvent: 'invalid_event_when_process_person_profile_is_false',
  /** A sixth group type in a project (indexes 0..4 are taken): not mapped, no group written. */
  groupTypeLimit: 'group_type_limit_reached',
} as const;

export type PersonWarningType = (typeof PERSON_WARNINGS)[keyof typeof PERSON_WARNINGS];

/** A warning about an event, with what identifies the event in its details. */
export function eventWarning(
  event: CapturedEvent,
  type: PersonWarningType,
  details: Record<string, unknown>,
): IngestionWarning {
  return {
    projectId: event.projectId,
    type,
    source: 'ingest',
    details: { eventUuid: event.uuid, event: event.event, distinctId: event.distinctId, ...details },
    timestamp: Date.now(),
  };
}
