import { jetstream, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { BatchOrigin, EventBatch, Lane } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { ENCODING_HEADER, UnknownFormatError, decodeBatch } from './codec.ts';
import { CONFIRM_TIMEOUT_MS, type NatsLink } from './connection.ts';
import { STREAM, type ConsumerSpec } from './streams.ts';

const ACK_TIMEOUT_MS = 2000;
/**
 * How long one pull request lives (the client sends heartbeats at half of it and pulls again after two
 * missed). The client's 30 s default held a lane still for 30-40 s when the cluster node leading its consumer
 * stopped (the pull was lost with it, and ingest's own connection stayed up); at 5 s it is pulled again
 * within ~5 s, for one idle request per lane every 5 s.
 */
const PULL_EXPIRES_MS = 5000;
/** How long a message in an unknown format waits before it is offered again. */
const UNKNOWN_FORMAT_DELAY_MS = 30_000;

export interface LaneConsumerConfig {
  readonly lane: Lane;
  /** The durable consumer pulled. */
  readonly consumer: ConsumerSpec;
  /** The consumer's ack wait: a batch still being handled is reported in progress well within it. */
  readonly ackWaitMs: number;
  /**
   * The stream sequence up to which a batch may have been stored already by an earlier holder of the consumer
   * that died before acknowledging it (streams.ts `resetConsumer`). @default 0
   */
  readonly maybeStoredUntil?: number;
}

/** What a stopped consumer leaves on the bus, for the shutdown to say (and to exit non-zero on). */
export interface LeftOnBus {
  /** Batches handed to ingest and not committed, or committed with no ack sent (NATS unreachable): redelivered. */
  readonly unacknowledged: number;
  /** NATS did not confirm the last acks in time: those batches may come again (their events dropped then). */
  readonly unconfirmed: boolean;
}

/** Where batches go: ingest. */
export interface BatchSink {
  handle(batch: EventBatch, origin?: BatchOrigin): Promise<void>;
}

export interface LaneConsumerDeps {
  readonly sink: BatchSink;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /**
   * Whether a batch may be handed on now; one that may not is left unacknowledged, for whoever holds the
   * consumer next. A partition's consumer asks its lease (partition-leases.ts). @default always
   */
  readonly mayHandle?: () => boolean;
}

/**
 * Pulls batches from one durable consumer (a live partition's, the overflow lane's or the historical lane's)
 * and hands them to ingest, acknowledging a message
 * only after ingest has committed it. A failure is a `nak` with a growing delay, so JetStream redelivers it
 * later; `max_ack_pending` on the consumer bounds what is in flight (the back-pressure valve). Messages are
 * handed on in delivery order, and ingest's keyed actors keep that order per (project, distinct_id).
 *
 * A batch that takes long (a large backlog, a slow store) is reported in progress (`working`) every third of
 * the ack wait, so only a crashed ingest's batches are redelivered, after one ack wait. A batch delivered
 * again, or one up to `maybeStoredUntil`, may have been stored by the process that had it before: ingest is
 * told so, and drops what the store holds.
 *
 * Acks wait for the connection. On the historical lane they are also confirmed by the server: the NATS client
 * drops what it is asked to send while it reconnects, and an ack lost in a NATS outage would hold the batch —
 * and with it the whole lane, which runs one batch at a time — until the ack wait runs out. On the live and
 * overflow lanes a lost ack costs only a redelivery, whose events ingest drops as duplicates; there a plain
 * ack is enough, and it spares a request per batch (the client makes an Error for every request it
 * completes: 5% of ingest's CPU under load with confirmed acks everywhere).
 */
export class LaneConsumer {
  readonly #lane: Lane;
  readonly #config: LaneConsumerConfig;
  #stopping = false;
  /** Aborted when stopping: an ack waits for no reconnection then. */
  readonly #stopped = new AbortController();
  /**
   * Stream sequences of the batches handed to ingest whose last delivery here was not acknowledged (ingest
   * failed, or NATS was unreachable for the ack); one acknowledged on a later delivery is taken out.
   */
  readonly #unacknowledged = new Set<number>();
  readonly #deps: LaneConsumerDeps;
  #messages: ConsumerMessages | undefined;
  readonly #inFlight = new Map<Promise<void>, JsMsg>();
  #loop: Promise<void> | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #link: NatsLink | undefined;

  constructor(config: LaneConsumerConfig, deps: LaneConsumerDeps) {
    this.#lane = config.lane;
    this.#config = config;
    this.#deps = deps;
  }

  async start(link: NatsLink): Promise<void> {
    this.#link = link;
    const spec = this.#config.consumer;
    const consumer = await jetstream(link.nc).consumers.get(STREAM, spec.durable);
    this.#messages = await consumer.consume({ max_messages: spec.maxAckPending, expires: PULL_EXPIRES_MS });
    this.#loop = this.#run(this.#messages);
    void this.#watchStatus(this.#messages);
    this.#heartbeat = setInterval(
      () => {
        for (const m of this.#inFlight.values()) m.working();
      },
      Math.max(100, Math.floor(this.#config.ackWaitMs / 3)),
    );
    this.#heartbeat.unref();
  }

  /** Says when pulls go unanswered (a node lost, a consumer moving): otherwise a stalled lane is silent. */
  async #watchStatus(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const s of messages.status()) {
        if (s.type === 'heartbeats_missed')
          this.#deps.logger.warn(
            { lane: this.#lane, missed: s.count },
            'bus consumer heartbeats missed; pulling again',
          );
        else if (
          s.type === 'consumer_not_found' ||
          s.type === 'consumer_deleted' ||
          s.type === 'stream_not_found'
        )
          this.#deps.logger.error({ lane: this.#lane, status: s.type }, 'bus consumer unavailable; retrying');
      }
    } catch {
      // The iterator ends with the consumer; nothing left to report.
    }
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    for await (const m of messages) {
      // Stopping, or the lease is no longer renewed in time: left for whoever holds the consumer next.
      if (this.#stopping || !(this.#deps.mayHandle?.() ?? true)) continue;
      const p = this.#handle(m);
      this.#inFlight.set(p, m);
      void p.finally(() => this.#inFlight.delete(p));
      // Historical: strictly one at a time, in stream order.
      if (this.#lane === 'historical') await p;
    }
  }

  async #handle(m: JsMsg): Promise<void> {
    const lane = this.#lane;
    if (m.info.redelivered) this.#deps.metrics.busRedeliveries.inc({ lane });
    let batch;
    try {
      batch = decodeBatch(m.data, m.headers?.get(ENCODING_HEADER));
    } catch (err) {
      if (err instanceof UnknownFormatError) {
        // A newer capture's message, most likely: it stays in the stream, for an ingest that reads it.
        this.#deps.metrics.busNaks.inc({ lane });
        this.#deps.logger.error(
          { err, seq: m.seq, subject: m.subject, delayMs: UNKNOWN_FORMAT_DELAY_MS },
          'bus message in a format this ingest does not read (upgrade ingest before capture); left in the stream',
        );
        m.nak(UNKNOWN_FORMAT_DELAY_MS);
        return;
      }
      // A damaged message can never be read and must not block the lane: terminate it and say so.
      this.#deps.logger.error({ err, seq: m.seq, subject: m.subject }, 'undecodable bus message terminated');
      m.term();
      return;
    }
    try {
      const maybeStored = m.info.redelivered || m.seq <= (this.#config.maybeStoredUntil ?? 0);
      await this.#deps.sink.handle(batch, maybeStored ? { maybeStored } : undefined);
    } catch (err) {
      const delayMs = Math.min(30_000, 250 * 2 ** Math.min(m.info.deliveryCount, 7));
      this.#deps.metrics.busNaks.inc({ lane });
      this.#deps.logger.warn(
        { err, lane, seq: m.seq, deliveries: m.info.deliveryCount, delayMs },
        'ingest failed; batch will be redelivered',
      );
      this.#unacknowledged.add(m.seq);
      m.nak(delayMs);
      return;
    }
    await this.#ack(m);
  }

  /**
   * Acks once connected (waiting through a reconnect, at most an ack wait: by then JetStream delivers the
   * batch again anyway, and ingest drops its events as duplicates; no longer once stopping, when the shutdown
   * must not wait on NATS); on the historical lane the server confirms it.
   */
  async #ack(m: JsMsg): Promise<void> {
    const link = this.#link!;
    if (!(await link.waitConnected(this.#config.ackWaitMs, this.#stopped.signal))) {
      this.#deps.logger.warn(
        { seq: m.seq, lane: this.#lane },
        'not acked (NATS unreachable); it will be redelivered',
      );
      this.#unacknowledged.add(m.seq);
      return;
    }
    this.#unacknowledged.delete(m.seq);
    if (this.#lane !== 'historical') {
      m.ack();
      return;
    }
    try {
      await m.ackAck({ timeout: ACK_TIMEOUT_MS });
    } catch (err) {
      this.#deps.logger.warn(
        { err, seq: m.seq, lane: this.#lane },
        'ack not confirmed; it may be redelivered',
      );
    }
  }

  /**
   * Stops pulling, waits for the batches being handled, and flushes their acks to the server (waiting at most
   * `CONFIRM_TIMEOUT_MS` for it), so that the next holder of the consumer is given as little as possible
   * again. Resolves with what it leaves on the bus.
   */
  async stop(): Promise<LeftOnBus> {
    this.#stopping = true;
    this.#stopped.abort();
    clearInterval(this.#heartbeat);
    await this.#messages?.close().catch(() => undefined);
    await this.#loop?.catch(() => undefined);
    await Promise.all(this.#inFlight.keys());
    const link = this.#link;
    const unconfirmed = link?.connected === true && !(await link.confirmed(CONFIRM_TIMEOUT_MS));
    return { unacknowledged: this.#unacknowledged.size, unconfirmed };
  }
}
