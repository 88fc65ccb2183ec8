import { checkBusDurability, type BusDurabilityConfig } from './durability.ts';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { LANES, type Lane } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { NatsLink, replicasFor } from './connection.ts';
import { LaneConsumer, type BatchSink, type LeftOnBus } from './consumer.ts';
import { IngestBucket } from './ingest-bucket.ts';
import { PartitionConsumers, leaseUnits } from './partition-consumers.ts';
import { PartitionLeases } from './partition-leases.ts';
import { CONSUMERS, STREAM, ensureConsumers, ensureStream } from './streams.ts';

export interface IngestConsumersConfig extends BusDurabilityConfig {
  readonly natsUrl: string;
  /** JetStream replicas of the stream; undefined: worked out from the cluster (connection.ts `replicasFor`). */
  readonly natsReplicas?: number | undefined;
  /** The live lane's partitions; must be the count recorded in the bus (ingest-bucket.ts). */
  readonly busPartitions: number;
  /** How long JetStream waits for ingest to acknowledge a batch before delivering it again. @default 30000 */
  readonly busAckWaitMs: number;
  /** How long a silent ingest process keeps its partitions before others take them. @default 5000 */
  readonly busLeaseMs: number;
  /** How often consumer lag is read from JetStream for the metrics. @default 5000 */
  readonly lagPollMs?: number;
}

export interface IngestConsumersDeps {
  readonly sink: BatchSink;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** A connection to use instead of opening one; it stays the caller's to close. */
  readonly link?: NatsLink;
}

/**
 * Ingest's side of the JetStream bus: one connection; the stream, the partition count and the overflow
 * consumer made sure of; this process's membership of the ingest processes, which share the live partitions
 * and the historical lane by leases (partition-leases.ts), each held unit consumed; the overflow lane pulled by
 * every process; and the consumers' lag polled into the metrics.
 */
export class IngestConsumers {
  readonly #link: NatsLink;
  readonly #ownsLink: boolean;
  readonly #jsm: JetStreamManager;
  readonly #overflow: LaneConsumer;
  readonly #leases: PartitionLeases;
  readonly #partitions: PartitionConsumers;
  readonly #deps: IngestConsumersDeps;
  #poll: NodeJS.Timeout | undefined;

  private constructor(
    parts: {
      link: NatsLink;
      ownsLink: boolean;
      jsm: JetStreamManager;
      overflow: LaneConsumer;
      leases: PartitionLeases;
      partitions: PartitionConsumers;
    },
    deps: IngestConsumersDeps,
  ) {
    this.#link = parts.link;
    this.#ownsLink = parts.ownsLink;
    this.#jsm = parts.jsm;
    this.#overflow = parts.overflow;
    this.#leases = parts.leases;
    this.#partitions = parts.partitions;
    this.#deps = deps;
  }

  static async start(config: IngestConsumersConfig, deps: IngestConsumersDeps): Promise<IngestConsumers> {
    const link = deps.link ?? (await NatsLink.open(config.natsUrl, 'consume', deps));
    try {
      const jsm = await jetstreamManager(link.nc);
      await checkBusDurability(link.nc, config, deps);
      const replicas = replicasFor(link.nc, config.natsReplicas);
      await ensureStream(jsm, {
        replicas,
        replicasConfigured: config.natsReplicas !== undefined,
        duplicateWindowMs: 120_000,
      });
      const bucket = await IngestBucket.open(link.nc, replicas);
      const partitions = await bucket.agreedPartitions(config.busPartitions);
      await ensureConsumers(jsm, { ackWaitMs: config.busAckWaitMs }, deps.logger);
      const overflow = new LaneConsumer(
        { lane: 'overflow', consumer: CONSUMERS.overflow, ackWaitMs: config.busAckWaitMs },
        deps,
      );
      await overflow.start(link);
      // Each needs the other: the leases start and stop the consumers, which ask the leases before each batch.
      const leases: PartitionLeases = new PartitionLeases(
        { leaseMs: config.busLeaseMs, units: leaseUnits(partitions) },
        {
          bucket,
          holder: { acquire: (u) => consumers.acquire(u), release: (u) => consumers.release(u) },
          metrics: deps.metrics,
          logger: deps.logger,
        },
      );
      const consumers: PartitionConsumers = new PartitionConsumers(
        { partitions, ackWaitMs: config.busAckWaitMs },
        { ...deps, link, jsm, holds: (unit) => leases.holds(unit) },
      );
      await leases.start();
      const self = new IngestConsumers(
        { link, ownsLink: deps.link === undefined, jsm, overflow, leases, partitions: consumers },
        deps,
      );
      await self.#pollLag();
      self.#poll = setInterval(() => void self.#pollLag(), config.lagPollMs ?? 5000);
      self.#poll.unref();
      deps.logger.info(
        { natsUrl: config.natsUrl, partitions, member: leases.id },
        'consuming the JetStream bus (live partitions shared by lease)',
      );
      return self;
    } catch (err) {
      if (deps.link === undefined) await link.close();
      throw err;
    }
  }

  /** Whether the consumers can receive batches now (NATS connected). */
  isReady(): boolean {
    return this.#link.connected;
  }

  /** The units (`historical`, `live-<n>`) this process holds now. */
  held(): string[] {
    return this.#leases.held();
  }

  /**
   * Stops pulling, hands every partition over (the batches in flight finished and acknowledged first), and
   * closes the connection. Resolves with what is left on the bus: batches handed to ingest and not
   * acknowledged (it could not commit them, or NATS was unreachable), and whether NATS confirmed the last acks.
   */
  async stop(): Promise<LeftOnBus> {
    clearInterval(this.#poll);
    const partitions = this.#partitions.leaving();
    const [overflow] = await Promise.all([this.#overflow.stop(), this.#leases.stop()]);
    const closed = this.#ownsLink ? await this.#link.closeConfirmed() : true;
    return {
      unacknowledged: overflow.unacknowledged + partitions.unacknowledged,
      unconfirmed: overflow.unconfirmed || partitions.unconfirmed || !closed,
    };
  }

  /** Lag of the consumers this process reads: the overflow lane's, and those of the units it holds, by lane. */
  async #pollLag(): Promise<void> {
    if (!this.#link.connected) return;
    const lag = new Map<Lane, { pending: number; ackPending: number }>(
      LANES.map((lane) => [lane, { pending: 0, ackPending: 0 }]),
    );
    const read: { lane: Lane; durable: string }[] = [
      { lane: 'overflow', durable: CONSUMERS.overflow.durable },
      ...this.#partitions.held().map(({ unit, durable }) => ({
        lane: unit === 'historical' ? ('historical' as const) : ('live' as const),
        durable,
      })),
    ];
    for (const { lane, durable } of read) {
      try {
        const info = await this.#jsm.consumers.info(STREAM, durable);
        const sum = lag.get(lane)!;
        sum.pending += info.num_pending;
        sum.ackPending += info.num_ack_pending;
      } catch (err) {
        this.#deps.logger.debug({ err, durable }, 'consumer lag not read');
      }
    }
    for (const [lane, { pending, ackPending }] of lag) {
      this.#deps.metrics.busConsumerPending.set({ lane }, pending);
      this.#deps.metrics.busConsumerAckPending.set({ lane }, ackPending);
    }
  }
}
