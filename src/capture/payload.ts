import { AppError } from '../errors/app-error.ts';
import { parseTimestamp } from './timestamp.ts';

export type JsonObject = Record<string, unknown>;

/** A decoded capture body, before its events are validated. */
export interface Payload {
  /** The one project API key the request carries. */
  readonly token: string;
  readonly historical: boolean;
  /** Client clock at send time (batch `sent_at` or `?_=` milliseconds), for skew correction. */
  readonly sentAt: number | undefined;
  readonly items: readonly JsonObject[];
}

/** Why a body that decodes to JSON is refused when that JSON is not an object or an array. */
export const NOT_EVENTS = 'The body is valid JSON, but not an event, a batch or an array of events.';

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Finds the shape (single event, array, batch object) and the project API key (SPEC §2 "Bodies").
 * `batchRoute` is true on `/batch/`, where a body without a `batch` array is refused.
 */
export function readPayload(value: unknown, batchRoute: boolean, querySentAt: string | undefined): Payload {
  let items: unknown[];
  let top: JsonObject | undefined;
  if (Array.isArray(value)) {
    items = value;
  } else if (isObject(value)) {
    top = value;
    if ('batch' in value || batchRoute) {
      const batch = value['batch'];
      if (!Array.isArray(batch)) throw new AppError('empty_batch', { attr: 'batch' });
      items = batch;
    } else {
      items = [value];
    }
  } else {
    throw new AppError('invalid_payload', { detail: NOT_EVENTS });
  }
  if (items.length === 0) throw new AppError('empty_batch', { attr: 'batch' });

  const tokens = new Set<string>();
  if (top) addTokens(tokens, top);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!isObject(item)) {
      throw new AppError('invalid_event', {
        detail: `Event ${i} is not a JSON object.`,
        attr: `batch[${i}]`,
      });
    }
    if (item !== top) addTokens(tokens, item);
    const props = item['properties'];
    if (isObject(props)) {
      addToken(tokens, props['token']);
      addToken(tokens, props['$token']);
    }
  }
  if (tokens.size === 0) throw new AppError('missing_api_key', { attr: 'api_key' });
  if (tokens.size > 1) throw new AppError('inconsistent_api_key', { attr: 'api_key' });

  return {
    token: tokens.values().next().value!,
    historical: top?.['historical_migration'] === true,
    sentAt: parseSentAt(top?.['sent_at'], querySentAt),
    items: items as JsonObject[],
  };
}

/**
 * The one project API key of a request that is not events (the SDKs' `/flags` and `/decide` bodies): its
 * `api_key`, `token` or `$token`, refused as capture refuses none or two different ones.
 */
export function requestToken(obj: JsonObject): string {
  const tokens = new Set<string>();
  addTokens(tokens, obj);
  if (tokens.size === 0) throw new AppError('missing_api_key', { attr: 'api_key' });
  if (tokens.size > 1) throw new AppError('inconsistent_api_key', { attr: 'api_key' });
  return tokens.values().next().value!;
}

function addTokens(tokens: Set<string>, obj: JsonObject): void {
  addToken(tokens, obj['api_key']);
  addToken(tokens, obj['token']);
  addToken(tokens, obj['$token']);
}

function addToken(tokens: Set<string>, v: unknown): void {
  if (typeof v === 'string' && v.trim() !== '') tokens.add(v.trim());
}

function parseSentAt(fromBody: unknown, fromQuery: string | undefined): number | undefined {
  if (typeof fromBody === 'string') {
    const ms = parseTimestamp(fromBody);
    if (ms !== undefined) return ms;
  }
  if (fromQuery !== undefined && /^\d{10,16}$/.test(fromQuery)) return Number(fromQuery);
  return undefined;
}
