import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { Lane } from '../../core/event.ts';

export const STREAM = 'EVENTS';

export function subjectOf(lane: Lane, partition: number): string {
  return `events.${lane}.${partition}`;
}

export const CONSUMERS: Readonly<Record<Lane, { durable: string; filter: string; maxAckPending: number }>> = {
  live: { durable: 'ingest-live', filter: 'events.live.>', maxAckPending: 1024 },
  overflow: { durable: 'ingest-overflow', filter: 'events.overflow.>', maxAckPending: 256 },
  // One message in flight at a time: historical migrations are replayed strictly in stream order.
  historical: { durable: 'ingest-historical', filter: 'events.historical.>', maxAckPending: 1 },
};

export interface StreamOptions {
  /** R1 on one server, R3 in a cluster (connection.ts `replicasFor`). */
  readonly replicas: number;
  /**
   * Whether `replicas` was configured: only then is an existing stream changed to it. A number worked out
   * from the cluster as this process saw it (a node may be down) never shrinks a stream.
   */
  readonly replicasConfigured: boolean;
  /** How long a retried publish (same Nats-Msg-Id) is recognised as a duplicate. */
  readonly duplicateWindowMs: number;
}

/**
 * Creates or updates the EVENTS stream to the shape Weir needs: idempotent, so every process may run it at
 * start. Work-queue retention: a batch is removed once ingest acknowledges it.
 */
export async function ensureStream(jsm: JetStreamManager, options: StreamOptions): Promise<void> {
  const config = {
    name: STREAM,
    subjects: ['events.>'],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    discard: DiscardPolicy.Old,
    num_replicas: options.replicas,
    duplicate_window: nanos(options.duplicateWindowMs),
  };
  try {
    const info = await jsm.streams.info(STREAM);
    if (!options.replicasConfigured) config.num_replicas = info.config.num_replicas;
    await jsm.streams.update(STREAM, config);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.streams.add(config);
  }
}

export interface ConsumerOptions {
  /** How long JetStream waits for an ack before delivering a batch again. */
  readonly ackWaitMs: number;
}

/**
 * Creates or updates ingest's durable consumers (the stream must exist). Only ingest runs this, so the
 * consumers' settings follow the ingest processes' configuration, not the capture processes'.
 */
export async function ensureConsumers(jsm: JetStreamManager, options: ConsumerOptions): Promise<void> {
  for (const c of Object.values(CONSUMERS)) {
    const consumer = {
      durable_name: c.durable,
      filter_subject: c.filter,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(options.ackWaitMs),
      max_ack_pending: c.maxAckPending,
      max_deliver: -1,
    };
    try {
      await jsm.consumers.info(STREAM, c.durable);
      await jsm.consumers.update(STREAM, c.durable, consumer);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await jsm.consumers.add(STREAM, consumer);
    }
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: unknown; api_error?: { err_code?: number }; message?: string };
  return (
    e.api_error?.err_code === 10059 || e.api_error?.err_code === 10014 || /not found/i.test(String(e.message))
  );
}
