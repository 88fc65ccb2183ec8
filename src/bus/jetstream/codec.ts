import { createHash } from 'node:crypto';
import type { EventBatch } from '../../core/event.ts';
import { LANES } from '../../core/event.ts';

/**
 * One JetStream message carries a micro-batch: the events of one lane and one partition from one capture
 * request (publishing one message per event cannot reach the targets: ~35k acked publishes/s here).
 * JSON keeps the format inspectable with the `nats` CLI; the version field lets it change later.
 */
interface Wire {
  v: 1;
  lane: EventBatch['lane'];
  events: EventBatch['events'];
  warnings: EventBatch['warnings'];
}

export function encodeBatch(batch: EventBatch): Uint8Array {
  const wire: Wire = { v: 1, lane: batch.lane, events: batch.events, warnings: batch.warnings };
  return Buffer.from(JSON.stringify(wire));
}

export function decodeBatch(data: Uint8Array): EventBatch {
  const wire = JSON.parse(
    Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'),
  ) as Wire;
  if (wire.v !== 1 || !LANES.includes(wire.lane) || !Array.isArray(wire.events)) {
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
