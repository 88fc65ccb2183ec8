import { checkBusDurability, type BusDurabilityConfig } from './durability.ts';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import type { EventBatch, Lane } from '../../core/event.ts';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { partitionOf } from '../../core/partition.ts';
import type { Bus } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import { mergeByLane, settleByLane, type WaitingRequest } from '../merge-requests.ts';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { ENCODING_HEADER, batchJson, batchMessageId, encodeJson, type BusEncoding } from './codec.ts';
import { NatsLink, replicasFor } from './connection.ts';
import { IngestBucket } from './ingest-bucket.ts';
import { ensureStream, subjectOf } from './streams.ts';

export interface JetStreamBusConfig extends BusDurabilityConfig {
  readonly natsUrl: string;
  /** JetStream replicas of the stream; undefined: worked out from the cluster (connection.ts `replicasFor`). */
  readonly natsReplicas?: number | undefined;
  /**
   * Subject partitions of the live and overflow lanes: `events.<lane>.<0..N-1>`. Must be the count recorded
   * in the bus (ingest-bucket.ts): `connect` refuses another.
   */
  readonly busPartitions: number;
  /** Whether large messages are deflated (codec.ts). */
  readonly busCompression: 'deflate' | 'none';
  /** How long a publish may wait for its ack before capture answers 503. @default 5000 */
  readonly publishTimeoutMs: number;
}

export interface JetStreamBusDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * Most events one flight takes: more wait for the next. Keeps a flight's message near one piece (a batch over
 * the size bound is serialised again to be cut), while letting many requests share it.
 */
const FLIGHT_EVENTS = 2000;

/**
 * Flights out at once. Two, not one: at moderate load a request then seldom waits for another's ack (with one,
 * the median request waited about one ack more), and under load the requests still gather behind them. On one
 * connection, JetStream stores messages in the order they were published, so a lane's order holds.
 */
const MAX_FLIGHTS = 2;

/**
 * The Bus over NATS JetStream. Requests' events are grouped by lane and partition (hash of
 * project:distinct_id) and each group is published as one message with a Nats-Msg-Id derived from its
 * uuids; `publish` resolves only when every message holding the request's events is acknowledged by
 * JetStream. While NATS is unreachable, or when an ack does not come in time, publishing fails with 503
 * `unavailable`.
 *
 * Publishing is group-committed, as the store's writes are: while flights of messages wait for their acks
 * (MAX_FLIGHTS at most), the requests that arrive meanwhile wait too, and the next flight carries them
 * together (in arrival order, so a lane's order is kept). At low load a request flies alone, as soon as its
 * turn of the event loop ends; under load many requests share each message, and nats-server, which spends
 * nearly as much CPU on a small message as on a large one, and ingest, which
 * pays per message for the ack and the batch around it, do a fraction of the work. If a flight
 * fails, each request in it is answered 503 and retried by its client (the uuids make that idempotent; a
 * retried request that flies with others gets another Nats-Msg-Id, and ingest's duplicate window drops it).
 */
export class JetStreamBus implements Bus {
  readonly #config: JetStreamBusConfig;
  readonly #link: NatsLink;
  readonly #js: JetStreamClient;
  readonly #metrics: Metrics;
  /** Requests for the next flight, in arrival order. */
  #waiting: WaitingRequest[] = [];
  /** Flights published and not yet acknowledged. */
  #flights = 0;
  /** Whether a flight will leave at the end of this turn. */
  #scheduled = false;

  private constructor(config: JetStreamBusConfig, link: NatsLink, metrics: Metrics) {
    this.#config = config;
    this.#link = link;
    this.#js = jetstream(link.nc);
    this.#metrics = metrics;
  }

  static async connect(config: JetStreamBusConfig, deps: JetStreamBusDeps): Promise<JetStreamBus> {
    const link = await NatsLink.open(config.natsUrl, 'publish', deps);
    try {
      await checkBusDurability(link.nc, config, deps);
      const replicas = replicasFor(link.nc, config.natsReplicas);
      await ensureStream(await jetstreamManager(link.nc), {
        replicas,
        replicasConfigured: config.natsReplicas !== undefined,
        duplicateWindowMs: 120_000,
      });
      // The partition a person's events go to must be the one ingest leases: a count other than the one
      // recorded is refused here, before anything is published.
      await (await IngestBucket.open(link.nc, replicas)).agreedPartitions(config.busPartitions);
    } catch (err) {
      await link.close();
      throw err;
    }
    return new JetStreamBus(config, link, deps.metrics);
  }

  async publish(batches: readonly EventBatch[]): Promise<void> {
    if (!this.#link.connected) {
      this.#metrics.busPublishFailures.inc({ reason: 'disconnected' });
      this.#link.assertConnected();
    }
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ batches, resolve, reject });
      if (this.#scheduled || this.#flights >= MAX_FLIGHTS) return;
      // Not at once: the requests of this turn of the event loop fly together.
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#fly();
      });
    });
  }

  isReady(): boolean {
    return this.#link.connected;
  }

  async close(): Promise<void> {
    await this.#link.close();
  }

  /** Sends waiting requests off in flights (FLIGHT_EVENTS events at most) while under MAX_FLIGHTS are out. */
  #fly(): void {
    while (this.#flights < MAX_FLIGHTS && this.#waiting.length > 0) {
      const flight = takeFlight(this.#waiting, FLIGHT_EVENTS);
      this.#flights++;
      void this.#publishFlight(flight).then(() => {
        this.#flights--;
        this.#fly();
      });
    }
  }

  /** Publishes a flight's events, lane by lane, and answers each request when its lanes are acknowledged. */
  async #publishFlight(flight: readonly WaitingRequest[]): Promise<void> {
    // Leave room for headers under the server's max_payload (1 MiB by default).
    const maxBytes = Math.max(64 * 1024, (this.#link.nc.info?.max_payload ?? 1024 * 1024) - 16 * 1024);
    const started = performance.now();
    const acked = new Map<Lane, Promise<void>>();
    try {
      const messages = busMessages(
        mergeByLane(flight),
        this.#config.busPartitions,
        maxBytes,
        this.#config.busCompression,
      );
      const byLane = new Map<Lane, Promise<void>[]>();
      for (const m of messages) {
        const sent = this.#js
          .publish(m.subject, m.data, {
            msgID: m.msgID,
            timeout: this.#config.publishTimeoutMs,
            headers: headersOf(m),
          })
          .then(() => this.#metrics.busPublishedMessages.inc({ lane: m.lane }));
        const list = byLane.get(m.lane);
        if (list) list.push(sent);
        else byLane.set(m.lane, [sent]);
      }
      for (const [lane, sends] of byLane)
        acked.set(
          lane,
          Promise.all(sends).then(() => undefined),
        );
    } catch (err) {
      // Encoding failed (not expected: capture's events are JSON already); nothing of the flight was sent.
      for (const w of flight) w.reject(this.#unavailable(err));
      return;
    }
    await settleByLane(flight, acked, (err) => this.#unavailable(err));
    this.#metrics.busPublishDuration.observe((performance.now() - started) / 1000);
  }

  #unavailable(err: unknown): AppError {
    this.#metrics.busPublishFailures.inc({ reason: isTimeout(err) ? 'timeout' : 'error' });
    return new AppError('unavailable', {
      detail: 'The event bus did not acknowledge the events; retry after the time in Retry-After.',
      retryAfterSeconds: 1,
      retriable: true,
      cause: err,
    });
  }
}

/**
 * Takes requests off the front of `waiting` until they hold `maxEvents` events (at least one request, however
 * large).
 */
function takeFlight(waiting: WaitingRequest[], maxEvents: number): WaitingRequest[] {
  let events = 0;
  let n = 0;
  while (n < waiting.length) {
    let count = 0;
    for (const b of waiting[n]!.batches) count += b.events.length;
    if (n > 0 && events + count > maxEvents) break;
    events += count;
    n++;
  }
  return waiting.splice(0, n);
}

/** One JetStream message of a publish: a micro-batch of one lane and partition, encoded. */
export interface BusMessage {
  readonly lane: Lane;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly encoding: BusEncoding;
  readonly msgID: string;
}

/** The headers a message is published with beside its Nats-Msg-Id: its Content-Encoding, when deflated. */
export function headersOf(m: BusMessage): MsgHdrs | undefined {
  if (m.encoding === 'json') return undefined;
  const h = natsHeaders();
  h.set(ENCODING_HEADER, m.encoding);
  return h;
}

/**
 * The messages a request's batches become: grouped by lane and partition, each group cut into pieces under
 * `maxBytes` and encoded, with its Nats-Msg-Id. Pure, so the benchmark's raw-JetStream ceiling publishes
 * exactly the bytes Weir does.
 */
export function busMessages(
  batches: readonly EventBatch[],
  partitions: number,
  maxBytes: number,
  compression: 'deflate' | 'none',
): BusMessage[] {
  const messages: BusMessage[] = [];
  for (const batch of batches) {
    // Historical events are one ordered sequence: not split by partition, published in request order
    // (one connection publishes in order, and the historical consumer handles one message at a time).
    const groups = batch.lane === 'historical' ? new Map([[0, batch]]) : splitByPartition(batch, partitions);
    for (const [partition, part] of groups) {
      for (const [chunk, json] of encodedUnder(part, maxBytes)) {
        const { data, encoding } = encodeJson(json, compression);
        messages.push({
          lane: batch.lane,
          subject: subjectOf(batch.lane, partition),
          data,
          encoding,
          msgID: batchMessageId(chunk, partition),
        });
      }
    }
  }
  return messages;
}

function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; message?: string };
  return e.name === 'TimeoutError' || /timeout/i.test(String(e.message));
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

/**
 * A batch as pieces whose JSON stays under `maxBytes`, in order, each with its JSON: the whole batch when it
 * fits (nearly always), else as many even pieces as its size says (with a margin), any still over the bound
 * cut again. A single event over the bound is a piece of its own (capture's own limits keep it under the
 * server's). So a batch is serialised about twice when it is cut, once when it is not.
 */
function encodedUnder(batch: EventBatch, maxBytes: number): [EventBatch, Buffer][] {
  const json = batchJson(batch);
  if (json.length <= maxBytes || batch.events.length <= 1) return [[batch, json]];
  const pieces = Math.min(batch.events.length, Math.ceil((json.length / maxBytes) * 1.1));
  const per = Math.ceil(batch.events.length / pieces);
  const out: [EventBatch, Buffer][] = [];
  for (let i = 0; i < batch.events.length; i += per) {
    const events = batch.events.slice(i, i + per);
    out.push(
      ...encodedUnder({ lane: batch.lane, events, warnings: i === 0 ? batch.warnings : [] }, maxBytes),
    );
  }
  return out;
}
