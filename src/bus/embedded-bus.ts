import type { EventBatch } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Bus } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';

/** Where the embedded bus delivers: ingest, in the same process. */
export interface EventSink {
  handle(batch: EventBatch): Promise<void>;
  /** False while ingest cannot take more (its store is behind): the request is refused before any of it is taken. */
  accepting(): boolean;
}

export interface EmbeddedBusConfig {
  /** Events accepted and not yet committed before publishing is refused with 503. */
  readonly maxPendingEvents: number;
}

/**
 * The Bus in one process: capture hands batches straight to ingest and the publish resolves when ingest has
 * committed them. The pending-events bound is the back-pressure valve: past it, capture answers 503 with
 * Retry-After instead of buffering without limit.
 */
export class EmbeddedBus implements Bus {
  readonly #config: EmbeddedBusConfig;
  readonly #sink: EventSink;
  readonly #metrics: Metrics;
  #pending = 0;
  #closed = false;

  constructor(config: EmbeddedBusConfig, deps: { sink: EventSink; metrics: Metrics }) {
    this.#config = config;
    this.#sink = deps.sink;
    this.#metrics = deps.metrics;
  }

  async publish(batches: readonly EventBatch[]): Promise<void> {
    if (this.#closed)
      throw new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 });
    let count = 0;
    for (const b of batches) count += b.events.length;
    if (
      (this.#pending > 0 && this.#pending + count > this.#config.maxPendingEvents) ||
      !this.#sink.accepting()
    ) {
      throw new AppError('unavailable', { retryAfterSeconds: 1, retriable: true });
    }
    this.#pending += count;
    this.#metrics.pendingEvents.set(this.#pending);
    try {
      await Promise.all(batches.map((b) => this.#sink.handle(b)));
    } catch (err) {
      throw new AppError('unavailable', {
        detail: 'The events could not be stored; retry after the time in Retry-After.',
        retryAfterSeconds: 1,
        retriable: true,
        cause: err,
      });
    } finally {
      this.#pending -= count;
      this.#metrics.pendingEvents.set(this.#pending);
    }
  }

  isReady(): boolean {
    return !this.#closed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.resolve();
  }
}
