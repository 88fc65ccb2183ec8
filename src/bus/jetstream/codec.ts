import { createHash } from 'node:crypto';
import { constants, deflateSync, inflateSync } from 'node:zlib';
import type { CapturedEvent, EventBatch } from '../../core/event.ts';
import { INGEST_PROPERTY_KEYS, LANES } from '../../core/event.ts';

/**
 * One JetStream message carries a micro-batch: the events of one lane and one partition from one capture
 * request (acked publishes of one event each fall far short of capture's rates).
 * The batch is JSON (the version field lets it change later), deflated when it is large enough to gain:
 * then the message has the header `Content-Encoding: deflate` (zlib, as HTTP's `deflate`; its checksum
 * catches a damaged message). nats-server's work grows with the bytes it stores and delivers, and a batch of
 * events deflates several times over (their property names repeat) for little of capture's CPU at level 1.
 * `WEIR_BUS_COMPRESSION=none` publishes plain JSON, readable with the `nats` CLI; ingest reads both.
 */
interface Wire {
  v: 1 | 2;
  lane: EventBatch['lane'];
  events: EventBatch['events'];
  warnings: EventBatch['warnings'];
}

/** How a message's bytes are encoded: plain JSON, or JSON deflated (`Content-Encoding: deflate`). */
export type BusEncoding = 'json' | 'deflate';

export const ENCODING_HEADER = 'Content-Encoding';

/** Batches smaller than this stay plain: a single event gains little and would pay the compressor's setup. */
export const DEFLATE_FROM_BYTES = 2048;

/** The most a deflated message may inflate to (a batch is under the server's max_payload as JSON anyway). */
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;

/**
 * A batch as the JSON of a message, before any compression. Version 2: each event's properties travel as
 * JSON text (`propertiesJson`), beside the few that ingest reads as values (`properties`, see
 * INGEST_PROPERTY_KEYS). Ingest then parses a string instead of every property, and stores the text as it
 * is, which matters most for events of many properties. Version 1 (properties as values) is still read.
 */
export function batchJson(batch: EventBatch): Buffer {
  const wire: Wire = { v: 2, lane: batch.lane, events: batch.events.map(onWire), warnings: batch.warnings };
  return Buffer.from(JSON.stringify(wire));
}

/** Every field of T, the optional ones too: an object of this type names them all. */
type EveryField<T> = { [K in keyof Required<T>]: T[K] };

function onWire(e: CapturedEvent): CapturedEvent {
  if (e.propertiesJson !== undefined) return e; // read from the bus already
  const read: Record<string, unknown> = {};
  for (const key of INGEST_PROPERTY_KEYS) if (Object.hasOwn(e.properties, key)) read[key] = e.properties[key];
  // Written out, not spread: a spread of the event was a tenth of capture's CPU in batch mode.
  // EveryField makes a field added to CapturedEvent a compile error here until it is put on the wire.
  const wire: EveryField<CapturedEvent> = {
    projectId: e.projectId,
    uuid: e.uuid,
    event: e.event,
    distinctId: e.distinctId,
    timestamp: e.timestamp,
    properties: read,
    receivedAt: e.receivedAt,
    propertiesJson: JSON.stringify(e.properties),
  };
  return wire;
}

/** A message's bytes from its batch's JSON: deflated when that gains (`compression` permitting). */
export function encodeJson(
  json: Buffer,
  compression: 'deflate' | 'none',
): { data: Uint8Array; encoding: BusEncoding } {
  if (compression === 'none' || json.length < DEFLATE_FROM_BYTES) return { data: json, encoding: 'json' };
  const deflated = deflateSync(json, { level: constants.Z_BEST_SPEED });
  return deflated.length < json.length
    ? { data: deflated, encoding: 'deflate' }
    : { data: json, encoding: 'json' };
}

/**
 * A message in a format this version of Weir does not know — a newer capture's, most likely. Unlike a
 * damaged message it may well be good: ingest leaves it in the stream for an ingest that reads it.
 */
export class UnknownFormatError extends Error {
  override readonly name = 'UnknownFormatError';
}

/**
 * The batch in a message; `encoding` is its `Content-Encoding` header (none: plain JSON). Throws
 * UnknownFormatError for an encoding or version it does not know, another Error for a damaged message.
 */
export function decodeBatch(data: Uint8Array, encoding?: string): EventBatch {
  let bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (encoding === 'deflate') bytes = inflateSync(bytes, { maxOutputLength: MAX_INFLATED_BYTES });
  else if (encoding !== undefined && encoding !== '')
    throw new UnknownFormatError(`unknown Content-Encoding '${encoding.slice(0, 64)}'`);
  const wire = JSON.parse(bytes.toString('utf8')) as Wire;
  if (typeof wire === 'object' && wire !== null && typeof wire.v === 'number' && wire.v > 2) {
    throw new UnknownFormatError(`event batch version ${wire.v}; this Weir reads versions 1 and 2`);
  }
  if ((wire.v !== 1 && wire.v !== 2) || !LANES.includes(wire.lane) || !Array.isArray(wire.events)) {
    throw new Error('not a Weir event batch (unknown version or shape)');
  }
  return { lane: wire.lane, events: wire.events, warnings: wire.warnings ?? [] };
}

/**
 * `Nats-Msg-Id` of a batch: a digest of its events' uuids (and lane and partition), so the retry of a
 * request publishes the same ids and JetStream's duplicate window drops the copy.
 */
export function batchMessageId(batch: EventBatch, partition: number): string {
  const h = createHash('sha256').update(`${batch.lane}:${partition}`);
  for (const e of batch.events) h.update(e.uuid);
  if (batch.events.length === 0)
    for (const w of batch.warnings) h.update(`${w.type}:${w.timestamp}:${JSON.stringify(w.details)}`);
  return h.digest('base64url');
}
