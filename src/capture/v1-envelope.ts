import { isSuppressed } from '../core/suppression.ts';
import type { CapturedEvent, IngestionWarning } from '../core/event.ts';
import { cut } from '../core/well-formed.ts';
import { AppError } from '../errors/app-error.ts';
import { MAX_DROP_WARNINGS } from './capture-service.ts';
import { MAX_EVENT_BYTES } from './limits.ts';
import { normalizeEvent, type ClientContext, type RequestContext } from './normalize.ts';
import { isObject, type JsonObject } from './payload.ts';
import { inRange } from './timestamp.ts';
import { V1Error } from './v1-errors.ts';
import type { V1RequestMeta } from './v1-headers.ts';
import { canonicalUuid, parseRfc3339 } from './v1-time.ts';

/** One event's answer in a V1 `200`: PostHog's result codes, and a tag saying why when there is one. */
export interface V1Result {
  readonly result: 'ok' | 'warning' | 'drop' | 'retry';
  readonly details?: string;
}

/** A V1 batch read: every event's result in batch order, and what is to be handed to the bus. */
export interface V1Batch {
  /** Keyed by the canonical (lower-case, hyphenated) uuid; a Map keeps the batch's order. */
  readonly results: Map<string, V1Result>;
  /** The events answered `ok` or `warning`, normalised as v0's are: what must become durable. */
  readonly events: CapturedEvent[];
  readonly warnings: IngestionWarning[];
  readonly historical: boolean;
}

const MAX_NAME_BYTES = 200;
const MAX_DISTINCT_ID_BYTES = 200;

/**
 * distinct ids that name nobody (compared trimmed, in any case): the event is kept with person processing
 * off, as PostHog's V1 capture does (`ok`, `person_processing_disabled`).
 */
const ILLEGAL_DISTINCT_IDS: ReadonlySet<string> = new Set([
  '0',
  '00000000-0000-0000-0000-000000000000',
  '[object object]',
  'anonymous',
  'anonymous-user',
  'backend',
  'distinct_id',
  'distinctid',
  'email',
  'false',
  'guest',
  'id',
  'nan',
  'none',
  'not_authenticated',
  'null',
  'system',
  'true',
  'undefined',
  'user',
]);

/** The typed options of a V1 event, each mapped back to the property v0 clients send. */
const BOOL_OPTIONS = [
  ['cookieless_mode', '$cookieless_mode'],
  ['disable_skew_correction', '$ignore_sent_at'],
  ['process_person_profile', '$process_person_profile'],
] as const;

interface Options {
  readonly $cookieless_mode?: boolean;
  readonly $ignore_sent_at?: boolean;
  readonly $process_person_profile?: boolean;
  readonly $product_tour_id?: string;
}

/**
 * Reads a parsed V1 body into results and events, in PostHog's order: the envelope's shape (any wrong type
 * fails the whole batch, as a typed parse does), an empty batch, `created_at`, every uuid (empty, not a
 * UUID, or twice: the whole batch), then each event on its own (a `drop` with its tag, or normalised into
 * what v0 hands the bus). `dropped` is told each drop's tag, for the metrics.
 */
export function readV1Batch(
  value: unknown,
  decodedLength: number,
  meta: V1RequestMeta,
  client: ClientContext,
  now: number,
  dropped: (reason: string) => void,
): V1Batch {
  const { items, historical } = readShape(value);
  const uuids = readUuids(items);

  const ctx: RequestContext = {
    projectId: meta.project.id,
    now,
    sentAt: meta.sentAt,
    // `decodedLength` counts UTF-16 units, and one unit is up to 3 bytes of UTF-8.
    checkEventSize: decodedLength * 3 > MAX_EVENT_BYTES,
    ...client,
  };
  const results = new Map<string, V1Result>();
  const events: CapturedEvent[] = [];
  const warnings: IngestionWarning[] = [];
  const more = new Map<string, { first: number; count: number }>();
  let listed = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const uuid = uuids[i]!;
    const read = readEvent(item, uuid, i, meta, ctx);
    if (read.kind === 'drop') {
      results.set(uuid, { result: 'drop', details: read.details });
      dropped(read.details);
      if (listed < MAX_DROP_WARNINGS) {
        listed++;
        warnings.push({
          projectId: meta.project.id,
          type: `event_dropped_${read.details}`,
          source: 'capture',
          details: { event: cut(item['event'] as string, 200), index: i, uuid },
          timestamp: now,
        });
      } else {
        const m = more.get(read.details);
        if (m) m.count++;
        else more.set(read.details, { first: i, count: 1 });
      }
      continue;
    }
    if (isSuppressed(meta.project, read.event.distinctId)) {
      // Suppressed by an erasure: answered as stored and counted, with no warning (it would name the id).
      results.set(uuid, OK);
      dropped('suppressed');
      continue;
    }
    events.push(read.event);
    if (read.warning) {
      warnings.push({ ...read.warning, details: { ...read.warning.details, uuid } });
      results.set(uuid, { result: 'warning', details: read.warning.type });
    } else {
      results.set(uuid, read.personless ? { result: 'ok', details: 'person_processing_disabled' } : OK);
    }
  }
  for (const [reason, { first, count }] of more)
    warnings.push({
      projectId: meta.project.id,
      type: `event_dropped_${reason}`,
      source: 'capture',
      details: { more: count, from_index: first },
      timestamp: now,
    });
  return { results, events, warnings, historical };
}

const OK: V1Result = Object.freeze({ result: 'ok' });

/** The envelope and each event's typed fields; any of them wrong is the whole batch's 400. */
function readShape(value: unknown): { items: JsonObject[]; historical: boolean } {
  if (!isObject(value)) throw parsing('The body is not a JSON object.');
  const createdAt = value['created_at'];
  if (typeof createdAt !== 'string') throw parsing('created_at is missing or not a string.');
  const batch = value['batch'];
  if (!Array.isArray(batch)) throw parsing('batch is missing or not an array.');
  const historical = value['historical_migration'];
  if (historical !== undefined && typeof historical !== 'boolean')
    throw parsing('historical_migration is not a boolean.');
  for (let i = 0; i < batch.length; i++) {
    const item: unknown = batch[i];
    if (!isObject(item)) throw parsing(`batch[${i}] is not a JSON object.`);
    for (const field of ['event', 'uuid', 'distinct_id', 'timestamp'] as const)
      if (typeof item[field] !== 'string') throw parsing(`batch[${i}].${field} is missing or not a string.`);
    for (const field of ['session_id', 'window_id'] as const) {
      const v = item[field];
      if (v !== undefined && v !== null && typeof v !== 'string')
        throw parsing(`batch[${i}].${field} is not a string.`);
    }
  }
  if (batch.length === 0) throw new V1Error('empty_batch');
  if (parseRfc3339(createdAt.trim()) === undefined) throw new V1Error('invalid_batch');
  return { items: batch as JsonObject[], historical: historical === true };
}

/** Every event's canonical uuid; one empty, not a UUID, or repeated refuses the batch. */
function readUuids(items: readonly JsonObject[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const raw = (items[i]!['uuid'] as string).trim();
    if (raw === '') throw new V1Error('missing_event_uuid', `batch[${i}].uuid is empty.`);
    const uuid = canonicalUuid(raw);
    if (uuid === undefined)
      throw new V1Error('invalid_event_uuid', `batch[${i}].uuid '${cut(raw, 64)}' is not a UUID.`);
    if (seen.has(uuid))
      throw new V1Error('duplicate_event_uuid', `batch[${i}].uuid ${uuid} is in the batch twice.`);
    seen.add(uuid);
    out.push(uuid);
  }
  return out;
}

type ReadEvent =
  | { kind: 'drop'; details: string }
  | {
      kind: 'event';
      event: CapturedEvent;
      warning: IngestionWarning | undefined;
      personless: boolean;
    };

function readEvent(
  item: JsonObject,
  uuid: string,
  index: number,
  meta: V1RequestMeta,
  ctx: RequestContext,
): ReadEvent {
  const name = item['event'] as string;
  if (name === '') return drop('missing_event_name');
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return drop('event_name_too_long');
  if (name === '$performance_event') return drop('dropped_performance_event');
  const distinctId = (item['distinct_id'] as string).trim();
  if (distinctId === '') return drop('missing_distinct_id');
  if (Buffer.byteLength(distinctId) > MAX_DISTINCT_ID_BYTES) return drop('distinct_id_too_large');
  const timestamp = parseRfc3339((item['timestamp'] as string).trim());
  if (timestamp === undefined || !inRange(timestamp)) return drop('invalid_event_timestamp');
  const rawProps = item['properties'];
  if (rawProps !== undefined && !isObject(rawProps)) return drop('malformed_event_properties');
  const options = readOptions(item['options']);
  if (options === undefined) return drop('invalid_options');

  // What V1 carries beside the properties goes back into them, as PostHog's capture splices it in: after the
  // client's keys, an injected one replacing a client key of the same name.
  const properties: JsonObject = rawProps ?? {};
  const sessionId = item['session_id'];
  if (typeof sessionId === 'string') properties['$session_id'] = sessionId;
  const windowId = item['window_id'];
  if (typeof windowId === 'string') properties['$window_id'] = windowId;
  for (const key of [
    '$cookieless_mode',
    '$ignore_sent_at',
    '$product_tour_id',
    '$process_person_profile',
  ] as const)
    if (options[key] !== undefined) properties[key] = options[key];
  if (meta.lib) {
    properties['$lib'] = meta.lib.name;
    properties['$lib_version'] = meta.lib.version;
  }
  const personless = ILLEGAL_DISTINCT_IDS.has(distinctId.toLowerCase());
  if (personless) properties['$process_person_profile'] = false;

  let normalized;
  try {
    // The timestamp as parsed (RFC 3339, checked above), skew-corrected by normalizeEvent from `sentAt`.
    normalized = normalizeEvent(
      {
        event: name,
        uuid,
        distinct_id: distinctId,
        timestamp: new Date(timestamp).toISOString(),
        properties,
      },
      index,
      ctx,
    );
  } catch (err) {
    // v0 refuses a whole request for one such event; V1 answers each event on its own.
    if (err instanceof AppError) return drop(err.status === 413 ? 'event_too_big' : err.code);
    throw err;
  }
  if (normalized.kind === 'drop')
    return drop(normalized.reason === 'missing_event_name' ? 'missing_event_name' : 'missing_distinct_id');
  return { kind: 'event', event: normalized.event, warning: normalized.warning, personless };
}

function drop(details: string): ReadEvent {
  return { kind: 'drop', details };
}

/**
 * The `options` object, each known key coerced as PostHog's capture does (booleans from a boolean, the
 * strings true/1/false/0, or any number; `product_tour_id` from a string or an integer); null or absent is
 * no options. Undefined when it is not an object or a known key cannot be coerced: the event is dropped.
 */
export function readOptions(raw: unknown): Options | undefined {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) return undefined;
  const out: Record<string, boolean | string> = {};
  for (const [option, property] of BOOL_OPTIONS) {
    const v = raw[option];
    if (v === undefined || v === null) continue;
    const b = coerceBool(v);
    if (b === undefined) return undefined;
    out[property] = b;
  }
  const tour = raw['product_tour_id'];
  if (typeof tour === 'string') out['$product_tour_id'] = tour;
  else if (typeof tour === 'number' && Number.isInteger(tour)) out['$product_tour_id'] = String(tour);
  else if (tour !== undefined && tour !== null) return undefined;
  return out;
}

function coerceBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
  }
  return undefined;
}

function parsing(detail: string): V1Error {
  return new V1Error('request_parsing_error', detail);
}
