import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { Lane } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';

export const STREAM = 'EVENTS';

export function subjectOf(lane: Lane, partition: number): string {
  return `events.${lane}.${partition}`;
}

/** A durable pull consumer ingest reads: its name, the subjects it takes, and how many batches it has out at once. */
export interface ConsumerSpec {
  readonly durable: string;
  readonly filter: string;
  readonly maxAckPending: number;
}

/**
 * The overflow lane's one consumer, pulled by every ingest process (JetStream hands each pull what is next:
 * no order is promised there), and the historical lane's, which one process at a time holds (a lease) and
 * reads one message at a time, in stream order. The live lane has a consumer per partition (`liveConsumer`).
 */
export const CONSUMERS: Readonly<Record<'overflow' | 'historical', ConsumerSpec>> = {
  overflow: { durable: 'ingest-overflow', filter: 'events.overflow.>', maxAckPending: 256 },
  historical: { durable: 'ingest-historical', filter: 'events.historical.>', maxAckPending: 1 },
};

/** The live lane's batches out at once, over all its partitions: each partition's consumer takes a share. */
const LIVE_ACK_PENDING = 1024;

/**
 * The consumer of one live partition: `ingest-live-<n>` over `events.live.<n>`, so that the process holding
 * the partition's lease is the only one reading it, in stream order.
 */
export function liveConsumer(partition: number, partitions: number): ConsumerSpec {
  return {
    durable: `ingest-live-${partition}`,
    filter: subjectOf('live', partition),
    maxAckPending: Math.max(64, Math.ceil(LIVE_ACK_PENDING / partitions)),
  };
}

/** The consumer of the lane before partitions were shared: its filter overlaps every partition's. */
const OLD_LIVE = { durable: 'ingest-live', filter: 'events.live.>' };

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
 * Creates or updates the overflow lane's consumer, and deletes the live lane's consumer of the layout before
 * partitions were shared (`ingest-live` over `events.live.>`): a work-queue stream refuses consumers whose
 * filters overlap, so the partitions' consumers cannot exist beside it. What it had delivered and not
 * acknowledged stays in the stream and is read by the partitions' consumers (as batches that may be stored
 * already: `resetConsumer`). The historical lane's and the partitions' consumers are made by whoever takes
 * their lease. Only ingest runs this, so the consumers' settings follow the ingest processes' configuration.
 */
export async function ensureConsumers(
  jsm: JetStreamManager,
  options: ConsumerOptions,
  logger: Logger,
): Promise<void> {
  const spec = CONSUMERS.overflow;
  try {
    await jsm.consumers.info(STREAM, spec.durable);
    await jsm.consumers.update(STREAM, spec.durable, consumerConfig(spec, options));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.consumers.add(STREAM, consumerConfig(spec, options));
  }
  try {
    const old = await jsm.consumers.info(STREAM, OLD_LIVE.durable);
    if (old.config.filter_subject === OLD_LIVE.filter) {
      await jsm.consumers.delete(STREAM, OLD_LIVE.durable);
      logger.info(
        { consumer: OLD_LIVE.durable, unacknowledged: old.num_ack_pending },
        'the live lane is read by a consumer per partition now: the lane-wide consumer is deleted',
      );
    }
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Written in a consumer's description: the stream sequence up to which its batches may be stored already. */
const MAYBE_STORED = 'maybe stored until ';

/**
 * Deletes a consumer and makes it again, reading from the first message its filter still holds in the
 * stream (DeliverAll). With work-queue retention only an ack removes a message, so whatever the last holder
 * was given and did not acknowledge comes first, in stream order, and at once rather than after the ack
 * wait: what a dead process left is handled before anything later of the partition. Resolves with the
 * stream sequence up to which the batches delivered may have been stored by an earlier holder: the last one
 * the deleted consumer delivered, or an earlier such bound it carried, or — when there was no consumer (a
 * first start, or the lane-wide consumer of the old layout) — the stream's last sequence. The new consumer
 * carries the bound on, in case its holder dies before reaching it.
 */
export async function resetConsumer(
  jsm: JetStreamManager,
  spec: ConsumerSpec,
  options: ConsumerOptions,
): Promise<number> {
  let maybeStoredUntil: number;
  try {
    const info = await jsm.consumers.info(STREAM, spec.durable);
    const carried = info.config.description?.startsWith(MAYBE_STORED)
      ? Number(info.config.description.slice(MAYBE_STORED.length)) || 0
      : 0;
    maybeStoredUntil = Math.max(info.delivered.stream_seq, carried);
    await jsm.consumers.delete(STREAM, spec.durable);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    maybeStoredUntil = (await jsm.streams.info(STREAM)).state.last_seq;
  }
  await jsm.consumers.add(STREAM, {
    ...consumerConfig(spec, options),
    description: `${MAYBE_STORED}${maybeStoredUntil}`,
  });
  return maybeStoredUntil;
}

function consumerConfig(spec: ConsumerSpec, options: ConsumerOptions): Partial<ConsumerConfig> {
  return {
    durable_name: spec.durable,
    filter_subject: spec.filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_ack_pending: spec.maxAckPending,
    max_deliver: -1,
  };
}

export function isNotFound(err: unknown): boolean {
  const e = err as { code?: unknown; api_error?: { err_code?: number }; message?: string };
  return (
    e.api_error?.err_code === 10059 || e.api_error?.err_code === 10014 || /not found/i.test(String(e.message))
  );
}
