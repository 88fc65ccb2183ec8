import type { EventBatch, Lane } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Bus } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { mergeByLane, settleByLane, type WaitingRequest } from './merge-requests.ts';

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
 *
 * Requests published in the same turn of the event loop are handed to ingest together, one batch per lane:
 * under load many single-event requests arrive per turn, and ingest's per-batch costs (actor messages, a
 * pipeline run, commit bookkeeping) are then paid once for all of them. A lane's batch keeps the requests'
 * arrival order. If its commit fails, every request in it is answered 503 and retried by its client (the
 * events' uuids make the retry idempotent).
 */
export class EmbeddedBus implements Bus {
  readonly #config: EmbeddedBusConfig;
  readonly #sink: EventSink;
  readonly #metrics: Metrics;
  #pending = 0;
  #closed = false;
  #waiting: WaitingRequest[] = [];
  #scheduled = false;

  constructor(config: EmbeddedBusConfig, deps: { sink: EventSink; metrics: Metrics }) {
    this.#config = config;
    this.#sink = deps.sink;
    this.#metrics = deps.metrics;
  }

  publish(batches: readonly EventBatch[]): Promise<void> {
    if (this.#closed)
      return Promise.reject(
        new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }),
      );
    let count = 0;
    for (const b of batches) count += b.events.length;
    if (
      (this.#pending > 0 && this.#pending + count > this.#config.maxPendingEvents) ||
      !this.#sink.accepting()
    ) {
      return Promise.reject(new AppError('unavailable', { retryAfterSeconds: 1, retriable: true }));
    }
    this.#pending += count;
    this.#metrics.pendingEvents.set(this.#pending);
    let waiting!: WaitingRequest;
    const handed = new Promise<void>((resolve, reject) => {
      waiting = { batches, resolve, reject };
    });
    this.#waiting.push(waiting);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
    return this.#committed(handed, count);
  }

  /**
   * Waits for ingest to commit what `publish` handed over. Separate from `publish` so that the batches are
   * not kept alive by its frame while the commit waits for the disk; one callback each way rather than an
   * async function, which costs a request two promises more.
   */
  #committed(handed: Promise<void>, count: number): Promise<void> {
    return handed.then(
      () => this.#release(count),
      (err: unknown) => {
        this.#release(count);
        throw new AppError('unavailable', {
          detail: 'The events could not be stored; retry after the time in Retry-After.',
          retryAfterSeconds: 1,
          retriable: true,
          cause: err,
        });
      },
    );
  }

  #release(count: number): void {
    this.#pending -= count;
    this.#metrics.pendingEvents.set(this.#pending);
  }

  isReady(): boolean {
    return !this.#closed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.resolve();
  }

  /** Hands what this turn published to ingest: one batch per lane, each request answered with its lanes. */
  #flush(): void {
    this.#scheduled = false;
    const waiting = this.#waiting;
    this.#waiting = [];
    // The callbacks hold a request's resolve and reject, never its batches: those are ingest's to let go of.
    if (waiting.length === 1) {
      const { batches, resolve, reject } = waiting[0]!;
      Promise.all(batches.map((b) => this.#sink.handle(b))).then(() => resolve(), reject);
      return;
    }
    const handled = new Map<Lane, Promise<void>>();
    for (const batch of mergeByLane(waiting)) handled.set(batch.lane, this.#sink.handle(batch));
    void settleByLane(waiting, handled);
  }
}
