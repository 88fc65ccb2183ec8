import { isUuid } from '../core/uuid.ts';
import { deriveUuid } from './row-uuid.ts';

/** Capture's limit for one event (SPEC §2): a bigger row is refused here rather than bisected there. */
const MAX_EVENT_BYTES = 1024 * 1024;

/** An ISO date and time with no zone: capture reads it as UTC, as PostHog does. */
const NAIVE_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/** Whether capture reads `text` as a time it keeps (from year 1); otherwise it would store the time of sending. */
function readsAsTime(text: string): boolean {
  const t = text.trim();
  const ms = Date.parse(NAIVE_DATE_TIME.test(t) ? `${t.replace(' ', 'T')}Z` : t);
  return Number.isFinite(ms) && ms >= -62135596800000 && ms <= 8.64e15;
}

/** An event ready for a `/batch/` body: its JSON text, and what the checkpoint and summary need of it. */
export interface ImportEvent {
  readonly uuid: string;
  readonly distinctId: string;
  /** The batch item as JSON text, written once here and joined into request bodies as it is. */
  readonly json: string;
}

/** Why a row is refused before it is sent; the same words go to the rejects file and the summary. */
export type RefusalReason =
  | 'unreadable'
  | 'not_an_object'
  | 'missing_event'
  | 'missing_distinct_id'
  | 'missing_timestamp'
  | 'invalid_timestamp'
  | 'invalid_properties'
  | 'event_too_large';

export type RowResult =
  | { readonly ok: true; readonly event: ImportEvent }
  | { readonly ok: false; readonly reason: RefusalReason; readonly detail: string };

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// A row's own project key would make the request name two projects (401 inconsistent_api_key): the import
// sends everything to the project of --api-key, so these are dropped from every row.
const KEY_FIELDS = ['api_key', 'token', '$token'];

/**
 * Turns one decoded row — PostHog's export (`uuid`, `event`, `distinct_id`, `timestamp`, `properties` as an
 * object or as JSON text, `elements_chain`, `$set`, `$set_once`) or any JSON object with those names — into a
 * batch item, or refuses it. A row is refused here, visibly, where capture would drop it silently (no event,
 * no distinct id) or replace a part of it (no or an unreadable timestamp becomes the time of sending, so a
 * second run would store the event again at another time). Other top-level fields of an export
 * (`person_id`, `person_properties`, `team_id`, …) are not sent: persons are rebuilt from the events.
 */
export function toImportEvent(value: unknown, row: number, text?: string): RowResult {
  if (!isObject(value)) return refuse('not_an_object', 'the row is not a JSON object');
  if (text !== undefined && text.length <= MAX_EVENT_BYTES && sentAsItIs(value)) {
    return {
      ok: true,
      event: { uuid: value['uuid'] as string, distinctId: value['distinct_id'] as string, json: text },
    };
  }
  const event = value['event'];
  if (typeof event !== 'string' || event === '') return refuse('missing_event', 'no event name');

  let properties: Obj;
  const rawProps = value['properties'];
  if (rawProps === undefined || rawProps === null || rawProps === '') properties = {};
  else if (isObject(rawProps)) properties = { ...rawProps };
  else if (typeof rawProps === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawProps);
    } catch {
      parsed = undefined;
    }
    if (!isObject(parsed))
      return refuse('invalid_properties', 'properties is text that is not a JSON object');
    properties = parsed;
  } else return refuse('invalid_properties', 'properties is not an object');
  for (const key of KEY_FIELDS) delete properties[key];

  const distinctId = idText(value['distinct_id'] ?? properties['distinct_id']);
  if (distinctId === undefined) return refuse('missing_distinct_id', 'no distinct_id');

  const ts = timestampText(value['timestamp']);
  if (ts === undefined) return refuse('missing_timestamp', 'no timestamp');
  if (ts === null)
    return refuse('invalid_timestamp', `timestamp ${JSON.stringify(value['timestamp'])} is not a time`);

  const chain = value['elements_chain'];
  if (typeof chain === 'string' && chain !== '' && properties['$elements_chain'] === undefined) {
    properties['$elements_chain'] = chain;
  }
  const item: Obj = { event, distinct_id: distinctId, timestamp: ts, properties };
  for (const key of ['$set', '$set_once']) {
    if (isObject(value[key])) item[key] = value[key];
  }
  const given = value['uuid'];
  const uuid = typeof given === 'string' && isUuid(given) ? given.toLowerCase() : deriveUuid(item, row);
  const json = JSON.stringify({ uuid, ...item });
  if (json.length > MAX_EVENT_BYTES) {
    return refuse('event_too_large', `the event is ${json.length} bytes, over capture's 1 MiB for one event`);
  }
  return { ok: true, event: { uuid, distinctId, json } };
}

const SENT_FIELDS = new Set(['uuid', 'event', 'distinct_id', 'timestamp', 'properties', '$set', '$set_once']);

/**
 * Whether a row is already the batch item it would become (PostHog's export of the fields capture reads, a
 * lower-case uuid, no project key): then its JSON text is sent as read. Parsing it again into a new object and
 * writing that out was half of what the importer spent a row, on a machine where the importer and Weir share
 * the cores.
 */
function sentAsItIs(v: Obj): boolean {
  for (const key in v) if (!SENT_FIELDS.has(key)) return false;
  const { uuid, event, distinct_id: id, timestamp: ts, properties: p } = v;
  if (typeof uuid !== 'string' || !isUuid(uuid) || uuid !== uuid.toLowerCase()) return false;
  if (typeof event !== 'string' || event === '' || typeof id !== 'string' || id === '') return false;
  if (typeof ts !== 'string' || !readsAsTime(ts)) return false;
  if (p !== undefined && !(isObject(p) && !('token' in p) && !('$token' in p) && !('api_key' in p)))
    return false;
  for (const key of ['$set', '$set_once']) if (v[key] !== undefined && !isObject(v[key])) return false;
  return true;
}

function refuse(reason: RefusalReason, detail: string): RowResult {
  return { ok: false, reason, detail };
}

function idText(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  return undefined;
}

/**
 * The timestamp as text capture reads alike: a string kept as written (capture parses it; its precision is
 * kept), a number or a Date (CSV cells, Parquet columns) as ISO 8601. Numbers below 1e11 are Unix seconds
 * (1e11 ms is 1973, 1e11 s the year 5138), others milliseconds. Undefined: none; null: not a time.
 */
function timestampText(v: unknown): string | null | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string') return readsAsTime(v) ? v : null;
  let ms: number | undefined;
  if (v instanceof Date) ms = v.getTime();
  else if (typeof v === 'number') ms = v < 1e11 ? v * 1000 : v;
  else if (typeof v === 'bigint') ms = Number(v);
  if (ms === undefined || !Number.isFinite(ms)) return null;
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
