import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { LANES } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { EventSink } from '../embedded-bus.ts';
import { NatsLink, replicasFor } from './connection.ts';
import { LaneConsumer } from './consumer.ts';
import { CONSUMERS, STREAM, ensureConsumers, ensureStream } from './streams.ts';

export interface IngestConsumersConfig {
  readonly natsUrl: string;
  /** JetStream replicas of the stream; undefined: worked out from the cluster (connection.ts `replicasFor`). */
  readonly natsReplicas?: number | undefined;
  /** How long JetStream waits for ingest to acknowledge a batch before delivering it again. @default 30000 */
  readonly busAckWaitMs: number;
  /** How often consumer lag is read from JetStream for the metrics. @default 5000 */
  readonly lagPollMs?: number;
}

export interface IngestConsumersDeps {
  readonly sink: EventSink;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * Ingest's side of the JetStream bus: one connection, the stream and the durable consumers made sure of,
 * one LaneConsumer per lane feeding the sink, and the consumers' lag polled into the metrics.
 */
export class IngestConsumers {
  readonly #link: NatsLink;
  readonly #consumers: LaneConsumer[];
  readonly #deps: IngestConsumersDeps;
  readonly #jsm: JetStreamManager;
  #poll: NodeJS.Timeout | undefined;

  private constructor(
    link: NatsLink,
    jsm: JetStreamManager,
    consumers: LaneConsumer[],
    deps: IngestConsumersDeps,
  ) {
    this.#link = link;
    this.#jsm = jsm;
    this.#consumers = consumers;
    this.#deps = deps;
  }

  static async start(config: IngestConsumersConfig, deps: IngestConsumersDeps): Promise<IngestConsumers> {
    const link = await NatsLink.open(config.natsUrl, 'consume', deps);
    try {
      const jsm = await jetstreamManager(link.nc);
      await ensureStream(jsm, {
        replicas: replicasFor(link.nc, config.natsReplicas),
        replicasConfigured: config.natsReplicas !== undefined,
        duplicateWindowMs: 120_000,
      });
      await ensureConsumers(jsm, { ackWaitMs: config.busAckWaitMs });
      const consumers = LANES.map((lane) => new LaneConsumer(lane, { ackWaitMs: config.busAckWaitMs }, deps));
      for (const c of consumers) await c.start(link);
      const self = new IngestConsumers(link, jsm, consumers, deps);
      await self.#pollLag();
      self.#poll = setInterval(() => void self.#pollLag(), config.lagPollMs ?? 5000);
      self.#poll.unref();
      deps.logger.info({ natsUrl: config.natsUrl }, 'consuming the JetStream bus');
      return self;
    } catch (err) {
      await link.close();
      throw err;
    }
  }

  /** Whether the consumers can receive batches now (NATS connected). */
  isReady(): boolean {
    return this.#link.connected;
  }

  /** Stops pulling, waits for the batches being handled, and sends their acks before closing. */
  async stop(): Promise<void> {
    clearInterval(this.#poll);
    await Promise.all(this.#consumers.map((c) => c.stop()));
    await this.#link.close();
  }

  async #pollLag(): Promise<void> {
    if (!this.#link.connected) return;
    for (const lane of LANES) {
      try {
        const info = await this.#jsm.consumers.info(STREAM, CONSUMERS[lane].durable);
        this.#deps.metrics.busConsumerPending.set({ lane }, info.num_pending);
        this.#deps.metrics.busConsumerAckPending.set({ lane }, info.num_ack_pending);
      } catch (err) {
        this.#deps.logger.debug({ err, lane }, 'consumer lag not read');
      }
    }
  }
}
