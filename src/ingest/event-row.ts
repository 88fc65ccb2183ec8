import type { IngestionWarning } from '../core/event.ts';
import type { Row } from '../core/ports.ts';
import type { PipelineEvent } from '../core/step.ts';
import { chTime } from '../store/clickhouse-store.ts';

/**
 * The `events` row of a processed event (DESIGN "Store schema"). `properties` and `person_properties` stay
 * objects: the store writes an object given for a String column as its JSON text, in the one serialisation
 * of the row. Properties that came over the bus as JSON text are stored as that text (the same text:
 * capture wrote it with the same JSON.stringify).
 */
export function eventRow(e: PipelineEvent): Row {
  return {
    project_id: e.projectId,
    uuid: e.uuid,
    event: e.event,
    distinct_id: e.distinctId,
    person_id: e.personId,
    timestamp: chTime(e.timestamp),
    properties: e.propertiesJson ?? e.properties,
    person_properties: e.personProperties,
    person_mode: e.personMode,
    $group_0: e.groups[0],
    $group_1: e.groups[1],
    $group_2: e.groups[2],
    $group_3: e.groups[3],
    $group_4: e.groups[4],
    created_at: chTime(e.receivedAt),
  };
}

export function warningRow(w: IngestionWarning): Row {
  return {
    project_id: w.projectId,
    type: w.type,
    source: w.source,
    details: JSON.stringify(w.details),
    timestamp: chTime(w.timestamp),
  };
}
