import type { CapturedEvent, IngestionWarning } from '../core/event.ts';
import { eventUuid } from '../core/uuid.ts';
import { cut, wellFormed } from '../core/well-formed.ts';
import { AppError } from '../errors/app-error.ts';
import { MAX_DISTINCT_ID_CHARS, MAX_EVENT_BYTES, MAX_FUTURE_MS, MAX_GROUP_FIELD_CHARS } from './limits.ts';
import { jsonFitsIn } from './json-size.ts';
import { isObject, type JsonObject } from './payload.ts';
import { inRange, parseTimestamp } from './timestamp.ts';

/** Why an event was answered 200 but not ingested (SPEC §2 "Silently dropped"). */
export type DropReason = 'missing_event_name' | 'missing_distinct_id' | 'empty_distinct_id';

export type Normalized =
  | { readonly kind: 'event'; readonly event: CapturedEvent; readonly warning: IngestionWarning | undefined }
  | { readonly kind: 'drop'; readonly reason: DropReason };

export interface RequestContext {
  readonly projectId: number;
  readonly now: number;
  readonly sentAt: number | undefined;
  /** Whether the decoded body was big enough that one event in it could pass 1 MiB. */
  readonly checkEventSize: boolean;
  /** The client's address, stored as `$ip` unless the event has one; '' when unknown or not to be kept. */
  readonly clientIp: string;
  /** The project keeps no IP: an `$ip` the event sent is dropped too. */
  readonly anonymizeIps: boolean;
  /** GeoIP, when on: `$geoip_*` properties from `$ip`. */
  readonly geoip: PropertyEnricher | undefined;
}

/** What a request's events take from its client: the address and what the project keeps of it. */
export type ClientContext = Pick<RequestContext, 'clientIp' | 'anonymizeIps' | 'geoip'>;

/** Adds properties derived from others (GeoIP's from `$ip`), in place. */
export interface PropertyEnricher {
  enrich(properties: Record<string, unknown>): void;
}

const SURVEY_EVENTS = new Set(['survey sent', 'survey shown', 'survey dismissed']);

/**
 * Validates one event and normalises it (SPEC §2): refusals throw AppError (the whole request is refused),
 * silent drops return `drop`, everything else comes back ready for the bus.
 */
export function normalizeEvent(item: JsonObject, index: number, ctx: RequestContext): Normalized {
  const name = item['event'];
  const rawProps = item['properties'];
  if (rawProps !== undefined && rawProps !== null && !isObject(rawProps)) {
    throw invalidEvent(index, 'properties', 'properties must be a JSON object');
  }
  const properties: JsonObject = isObject(rawProps) ? rawProps : {};
  const rawTimestamp = item['timestamp'];
  if (rawTimestamp !== undefined && rawTimestamp !== null && typeof rawTimestamp !== 'string') {
    throw invalidEvent(index, 'timestamp', 'timestamp must be an ISO 8601 string');
  }
  if (name !== undefined && name !== null && typeof name !== 'string') {
    throw invalidEvent(index, 'event', 'event must be a string');
  }

  if (name === undefined || name === null || name === '')
    return { kind: 'drop', reason: 'missing_event_name' };
  const eventName = wellFormed(name);

  const rawDistinctId = item['distinct_id'] ?? properties['distinct_id'] ?? properties['$distinct_id'];
  if (rawDistinctId === undefined || rawDistinctId === null)
    return { kind: 'drop', reason: 'missing_distinct_id' };
  const distinctId = normalizeDistinctId(rawDistinctId);
  if (distinctId === '') return { kind: 'drop', reason: 'empty_distinct_id' };

  validateSpecialEvent(eventName, properties, index);

  // `$set` / `$set_once` may stand at the top of an event (posthog-node's identify): fold them into
  // properties, the top-level value winning over one of the same name inside, as PostHog's ingestion does.
  for (const key of ['$set', '$set_once'] as const) {
    const top = item[key];
    if (isObject(top)) {
      const inner = properties[key];
      properties[key] = isObject(inner) ? { ...inner, ...top } : top;
    }
  }

  if (ctx.checkEventSize && !jsonFitsIn(item, MAX_EVENT_BYTES)) {
    throw new AppError('payload_too_large', {
      detail: `Event ${index} is larger than 1 MiB.`,
      attr: `batch[${index}]`,
    });
  }

  clientProperties(properties, ctx);
  const { timestamp, warning } = eventTimestamp(rawTimestamp, item['offset'], properties, ctx);
  return {
    kind: 'event',
    event: {
      projectId: ctx.projectId,
      uuid: eventUuid(item['uuid']),
      event: eventName,
      distinctId,
      timestamp,
      properties,
      receivedAt: ctx.now,
    },
    warning,
  };
}

/**
 * `$ip` as PostHog's ingestion keeps it: the client's address unless the event has one (an empty or null one
 * is none, as PostHog tests it), and none at all for a project that anonymises IPs; then GeoIP, which reads it. After the size check, as PostHog adds
 * both after capture has measured the event.
 */
function clientProperties(properties: JsonObject, ctx: RequestContext): void {
  if (ctx.anonymizeIps) {
    if ('$ip' in properties) delete properties['$ip'];
    return;
  }
  if (ctx.clientIp !== '' && !properties['$ip']) properties['$ip'] = ctx.clientIp;
  ctx.geoip?.enrich(properties);
}

/** Non-strings become their JSON text; NUL and lone surrogates become U+FFFD; longer than 200 characters is cut. */
export function normalizeDistinctId(raw: unknown): string {
  let id = wellFormed(typeof raw === 'string' ? raw : JSON.stringify(raw));
  if (id.length > MAX_DISTINCT_ID_CHARS) {
    const chars = Array.from(id);
    if (chars.length > MAX_DISTINCT_ID_CHARS) id = chars.slice(0, MAX_DISTINCT_ID_CHARS).join('');
  }
  return id;
}

function validateSpecialEvent(name: string, properties: JsonObject, index: number): void {
  if (name === '$groupidentify') {
    for (const field of ['$group_type', '$group_key'] as const) {
      const v = properties[field];
      if (typeof v !== 'string' || v === '' || v.length > MAX_GROUP_FIELD_CHARS) {
        throw new AppError('invalid_group', {
          detail: `Event ${index}: ${field} must be a non-empty string of at most ${MAX_GROUP_FIELD_CHARS} characters.`,
          attr: `properties.${field}`,
        });
      }
    }
  } else if (name === '$create_alias') {
    const alias = properties['alias'];
    if (typeof alias !== 'string' || alias === '') {
      throw new AppError('invalid_alias', {
        detail: `Event ${index}: $create_alias needs a string alias.`,
        attr: 'properties.alias',
      });
    }
  } else if (SURVEY_EVENTS.has(name)) {
    const id = properties['$survey_id'];
    if (id === undefined || id === null || id === '') {
      throw new AppError('missing_survey_id', {
        detail: `Event ${index}: '${name}' needs a $survey_id property.`,
        attr: 'properties.$survey_id',
      });
    }
  }
}

/**
 * The event's time: the client's timestamp corrected for clock skew when `sent_at` is known
 * (`now + (timestamp − sent_at)`, unless `$ignore_sent_at`), or `now − offset`, or now; clamped to now when
 * more than 23 h ahead; now when it is not a time the store can keep (before year 1).
 */
function eventTimestamp(
  raw: unknown,
  offset: unknown,
  properties: JsonObject,
  ctx: RequestContext,
): { timestamp: number; warning: IngestionWarning | undefined } {
  let warning: IngestionWarning | undefined;
  let ts = ctx.now;
  // What the client sent, for the warnings.
  const sent = { timestamp: typeof raw === 'string' ? cut(raw, 100) : null };
  if (typeof raw === 'string') {
    const parsed = parseTimestamp(raw);
    if (parsed === undefined) {
      warning = capWarning(ctx, 'ignored_invalid_timestamp', sent);
    } else if (ctx.sentAt !== undefined && properties['$ignore_sent_at'] !== true) {
      ts = ctx.now + (parsed - ctx.sentAt);
    } else {
      ts = parsed;
    }
  } else if (typeof offset === 'number' && Number.isFinite(offset)) {
    ts = ctx.now - offset;
  }
  if (ts - ctx.now > MAX_FUTURE_MS) {
    warning = capWarning(ctx, 'timestamp_clamped_to_now', {
      timestamp: inRange(ts) ? new Date(ts).toISOString() : sent.timestamp,
    });
    ts = ctx.now;
  } else if (!inRange(ts)) {
    // Skew correction or an offset can carry a valid timestamp out of what the store keeps.
    warning = capWarning(ctx, 'ignored_invalid_timestamp', sent);
    ts = ctx.now;
  }
  return { timestamp: ts, warning };
}

function capWarning(ctx: RequestContext, type: string, details: JsonObject): IngestionWarning {
  return { projectId: ctx.projectId, type, source: 'capture', details, timestamp: ctx.now };
}

function invalidEvent(index: number, field: string, detail: string): AppError {
  return new AppError('invalid_event', { detail: `Event ${index}: ${detail}.`, attr: field });
}
