import type { IngestionWarning } from '../core/event.ts';
import type { Row, Values } from '../core/ports.ts';
import type { PipelineEvent } from '../core/step.ts';
import { chTime } from '../store/ch-time.ts';
import { elementsChain } from './elements-chain.ts';

/** The columns of an `events` row as ingest writes it (DESIGN "Store schema"), in the order of `eventValues`. */
export const EVENT_COLUMNS: readonly string[] = Object.freeze([
  'project_id',
  'uuid',
  'event',
  'distinct_id',
  'person_id',
  'timestamp',
  'properties',
  'person_properties',
  'person_mode',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
  'created_at',
  '$session_id',
  '$window_id',
  'elements_chain',
]);

/**
 * The `events` row of a processed event, as values in the order of `EVENT_COLUMNS`. `properties` and
 * `person_properties` stay objects: the store writes an object given for a String column as its JSON text,
 * in the one serialisation of the row. Properties that came over the bus as JSON text are stored as that
 * text (the same text: capture wrote it with the same JSON.stringify).
 */
export function eventValues(e: PipelineEvent): Values {
  return [
    e.projectId,
    e.uuid,
    e.event,
    e.distinctId,
    e.personId,
    chTime(e.timestamp),
    e.propertiesJson ?? e.properties,
    e.personProperties,
    e.personMode,
    e.groups[0],
    e.groups[1],
    e.groups[2],
    e.groups[3],
    e.groups[4],
    chTime(e.receivedAt),
    textProperty(e.properties, '$session_id'),
    textProperty(e.properties, '$window_id'),
    elementsChain(e.properties),
  ];
}

/** A property PostHog keeps as a column of its own, as that column's text ('' when absent or not text). */
function textProperty(properties: Readonly<Record<string, unknown>>, key: string): string {
  const value = properties[key];
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
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
