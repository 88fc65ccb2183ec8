import { jetstream, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Lane } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import type { EventSink } from '../embedded-bus.ts';
import { decodeBatch } from './codec.ts';
import { CONSUMERS, STREAM } from './streams.ts';

/**
 * Pulls one lane's batches from its durable consumer and hands them to ingest, acknowledging a message
 * only after ingest has committed it. A failure is a `nak` with a delay, so JetStream redelivers it later;
 * `max_ack_pending` on the consumer bounds what is in flight (the back-pressure valve). Messages are handed
 * on in delivery order, and ingest's keyed actors keep that order per (project, distinct_id).
 */
export class LaneConsumer {
  readonly #lane: Lane;
  readonly #sink: EventSink;
  readonly #logger: Logger;
  #messages: ConsumerMessages | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;

  constructor(lane: Lane, deps: { sink: EventSink; logger: Logger }) {
    this.#lane = lane;
    this.#sink = deps.sink;
    this.#logger = deps.logger;
  }

  async start(nc: NatsConnection): Promise<void> {
    const spec = CONSUMERS[this.#lane];
    const consumer = await jetstream(nc).consumers.get(STREAM, spec.durable);
    this.#messages = await consumer.consume({ max_messages: spec.maxAckPending });
    this.#loop = this.#run(this.#messages);
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    for await (const m of messages) {
      const p = this.#handle(m);
      this.#inFlight.add(p);
      void p.finally(() => this.#inFlight.delete(p));
      // Historical: strictly one at a time, in stream order.
      if (this.#lane === 'historical') await p;
    }
  }

  async #handle(m: JsMsg): Promise<void> {
    let batch;
    try {
      batch = decodeBatch(m.data);
    } catch (err) {
      // A message that can never be read must not block the lane: terminate it and say so.
      this.#logger.error({ err, seq: m.seq, subject: m.subject }, 'undecodable bus message terminated');
      m.term();
      return;
    }
    try {
      await this.#sink.handle(batch);
      m.ack();
    } catch (err) {
      const delayMs = Math.min(30_000, 250 * 2 ** Math.min(m.info.deliveryCount, 7));
      this.#logger.warn(
        { err, seq: m.seq, deliveries: m.info.deliveryCount, delayMs },
        'ingest failed; batch will be redelivered',
      );
      m.nak(delayMs);
    }
  }

  /** Stops pulling and waits for the batches being handled. */
  async stop(): Promise<void> {
    await this.#messages?.close();
    await this.#loop?.catch(() => undefined);
    await Promise.all(this.#inFlight);
  }
}
