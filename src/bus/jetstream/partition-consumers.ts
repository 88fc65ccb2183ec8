import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { NatsLink } from './connection.ts';
import { LaneConsumer, type BatchSink, type LeftOnBus } from './consumer.ts';
import type { LeaseHolder } from './partition-leases.ts';
import { CONSUMERS, liveConsumer, resetConsumer, type ConsumerSpec } from './streams.ts';

export interface PartitionConsumersConfig {
  /** The live lane's partitions (the count every capture and ingest agreed on). */
  readonly partitions: number;
  readonly ackWaitMs: number;
}

export interface PartitionConsumersDeps {
  readonly link: NatsLink;
  readonly jsm: JetStreamManager;
  readonly sink: BatchSink;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Whether this process still holds `unit`'s lease in time (partition-leases.ts `holds`). */
  readonly holds: (unit: string) => boolean;
}

/** The units leased: the historical lane (one, read in stream order) and each live partition. */
export function leaseUnits(partitions: number): string[] {
  return ['historical', ...Array.from({ length: partitions }, (_, n) => `live-${n}`)];
}

/**
 * The consumers of the units this process holds. Taking a unit makes its consumer again (so a dead holder's
 * unacknowledged batches come first, at once: streams.ts `resetConsumer`) and pulls it; letting go stops
 * pulling and finishes what is in flight. The steps for one unit run one after another.
 */
export class PartitionConsumers implements LeaseHolder {
  readonly #config: PartitionConsumersConfig;
  readonly #deps: PartitionConsumersDeps;
  readonly #consumers = new Map<string, LaneConsumer>();
  readonly #tails = new Map<string, Promise<unknown>>();
  /** What the units let go of since `leaving` was called left on the bus; undefined before that. */
  #left: { unacknowledged: number; unconfirmed: boolean } | undefined;

  constructor(config: PartitionConsumersConfig, deps: PartitionConsumersDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  acquire(unit: string): Promise<void> {
    return this.#inTurn(unit, async () => {
      await this.#consumers.get(unit)?.stop();
      const spec = this.#spec(unit);
      const maybeStoredUntil = await resetConsumer(this.#deps.jsm, spec, {
        ackWaitMs: this.#config.ackWaitMs,
      });
      const consumer = new LaneConsumer(
        {
          lane: unit === 'historical' ? 'historical' : 'live',
          consumer: spec,
          ackWaitMs: this.#config.ackWaitMs,
          maybeStoredUntil,
        },
        { ...this.#deps, mayHandle: () => this.#deps.holds(unit) },
      );
      await consumer.start(this.#deps.link);
      this.#consumers.set(unit, consumer);
      this.#deps.logger.info({ unit, consumer: spec.durable, maybeStoredUntil }, 'consuming partition');
    });
  }

  release(unit: string): Promise<void> {
    return this.#inTurn(unit, async () => {
      const consumer = this.#consumers.get(unit);
      this.#consumers.delete(unit);
      const left = await consumer?.stop();
      if (left !== undefined && this.#left !== undefined) {
        this.#left.unacknowledged += left.unacknowledged;
        this.#left.unconfirmed ||= left.unconfirmed;
      }
    });
  }

  /**
   * Counts from now on what the units let go of leave on the bus, and returns the count (read it once they
   * are all let go). Called as the process leaves: a unit handed over before that is the new holder's to
   * finish, and what it left is no concern of this shutdown.
   */
  leaving(): LeftOnBus {
    this.#left = { unacknowledged: 0, unconfirmed: false };
    return this.#left;
  }

  /** The durable names of the consumers held now (for the lag metrics). */
  held(): { unit: string; durable: string }[] {
    return [...this.#consumers.keys()].map((unit) => ({ unit, durable: this.#spec(unit).durable }));
  }

  #spec(unit: string): ConsumerSpec {
    if (unit === 'historical') return CONSUMERS.historical;
    return liveConsumer(Number(unit.slice('live-'.length)), this.#config.partitions);
  }

  #inTurn(unit: string, step: () => Promise<void>): Promise<void> {
    const run = (this.#tails.get(unit) ?? Promise.resolve()).then(step);
    const tail = run.catch(() => undefined);
    this.#tails.set(unit, tail);
    void tail.then(() => {
      if (this.#tails.get(unit) === tail) this.#tails.delete(unit);
    });
    return run;
  }
}
