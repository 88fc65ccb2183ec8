import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { EventBatch } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import { partitionOf } from '../../core/partition.ts';
import type { Bus } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import { batchMessageId, encodeBatch } from './codec.ts';
import { ensureStreams, subjectOf } from './streams.ts';

export interface JetStreamBusConfig {
  readonly natsUrl: string;
  /** Subject partitions per lane: `events.<lane>.<0..N-1>`. */
  readonly busPartitions: number;
  /** How long a publish may wait for its ack before capture answers 503. @default 5000 */
  readonly publishTimeoutMs: number;
}

/**
 * The Bus over NATS JetStream. A capture request's events are grouped by lane and partition
 * (hash of project:distinct_id) and each group is published as one message with a Nats-Msg-Id derived from
 * its uuids; `publish` resolves only when every message of the request is acknowledged by JetStream.
 */
export class JetStreamBus implements Bus {
  readonly #config: JetStreamBusConfig;
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #logger: Logger;
  #connected = true;

  private constructor(config: JetStreamBusConfig, nc: NatsConnection, logger: Logger) {
    this.#config = config;
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#logger = logger;
    void this.#watch();
  }

  static async connect(config: JetStreamBusConfig, logger: Logger): Promise<JetStreamBus> {
    const nc = await connectNats(config.natsUrl, 'weir-capture');
    await ensureStreams(await jetstreamManager(nc), { replicas: 1, duplicateWindowMs: 120_000 });
    return new JetStreamBus(config, nc, logger);
  }

  async publish(batches: readonly EventBatch[]): Promise<void> {
    if (!this.#connected) {
      throw new AppError('unavailable', {
        detail: 'The event bus is unreachable.',
        retryAfterSeconds: 1,
        retriable: true,
      });
    }
    const messages: { subject: string; data: Uint8Array; msgID: string }[] = [];
    // Leave room for headers under the server's max_payload (1 MiB by default).
    const maxBytes = Math.max(64 * 1024, (this.#nc.info?.max_payload ?? 1024 * 1024) - 16 * 1024);
    for (const batch of batches) {
      // Historical events are one ordered sequence: not split by partition, published in request order
      // (one connection publishes in order, and the historical consumer handles one message at a time).
      const groups =
        batch.lane === 'historical'
          ? new Map([[0, batch]])
          : splitByPartition(batch, this.#config.busPartitions);
      for (const [partition, part] of groups) {
        for (const chunk of chunkBySize(part, maxBytes)) {
          const data = encodeBatch(chunk);
          messages.push({
            subject: subjectOf(batch.lane, partition),
            data,
            msgID: batchMessageId(chunk, partition),
          });
        }
      }
    }
    try {
      await Promise.all(
        messages.map((m) =>
          this.#js.publish(m.subject, m.data, { msgID: m.msgID, timeout: this.#config.publishTimeoutMs }),
        ),
      );
    } catch (err) {
      throw new AppError('unavailable', {
        detail: 'The event bus did not acknowledge the events; retry after the time in Retry-After.',
        retryAfterSeconds: 1,
        retriable: true,
        cause: err,
      });
    }
  }

  isReady(): boolean {
    return this.#connected && !this.#nc.isClosed();
  }

  async close(): Promise<void> {
    await this.#nc.drain();
  }

  async #watch(): Promise<void> {
    for await (const s of this.#nc.status()) {
      if (s.type === 'disconnect') {
        this.#connected = false;
        this.#logger.warn({ server: s.server }, 'nats disconnected');
      } else if (s.type === 'reconnect') {
        this.#connected = true;
        this.#logger.info({ server: s.server }, 'nats reconnected');
      }
    }
  }
}

/** Connects with reconnection forever: a NATS outage is a 503 while it lasts, never a crash. */
export function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: false,
  });
}

/** The batch's events grouped by partition; warnings ride with the first group. */
function splitByPartition(batch: EventBatch, partitions: number): Map<number, EventBatch> {
  const groups = new Map<number, EventBatch['events'][number][]>();
  for (const e of batch.events) {
    const p = partitionOf(e.projectId, e.distinctId, partitions);
    const g = groups.get(p);
    if (g) g.push(e);
    else groups.set(p, [e]);
  }
  const out = new Map<number, EventBatch>();
  let first = true;
  for (const [p, events] of groups) {
    out.set(p, { lane: batch.lane, events, warnings: first ? batch.warnings : [] });
    first = false;
  }
  if (groups.size === 0 && batch.warnings.length > 0)
    out.set(0, { lane: batch.lane, events: [], warnings: batch.warnings });
  return out;
}

/** Splits a batch, in order, into pieces whose encoded size stays under `maxBytes`. */
function chunkBySize(batch: EventBatch, maxBytes: number): EventBatch[] {
  const chunks: EventBatch[] = [];
  let events: EventBatch['events'][number][] = [];
  let size = 256 + JSON.stringify(batch.warnings).length;
  let warnings = batch.warnings;
  for (const e of batch.events) {
    const s = Buffer.byteLength(JSON.stringify(e)) + 1;
    if (events.length > 0 && size + s > maxBytes) {
      chunks.push({ lane: batch.lane, events, warnings });
      events = [];
      warnings = [];
      size = 256;
    }
    events.push(e);
    size += s;
  }
  if (events.length > 0 || warnings.length > 0) chunks.push({ lane: batch.lane, events, warnings });
  return chunks;
}
