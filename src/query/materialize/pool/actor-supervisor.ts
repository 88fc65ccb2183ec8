import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../../core/logger.ts';
import { ObjectStoreError, type ObjectStore } from '../../../core/object-store.ts';
import { AppError } from '../../../errors/app-error.ts';
import {
  MaterializedTableError,
  fromWire,
  toWire,
  type ActorInit,
  type ActorStats,
  type FromActor,
  type RunAnswer,
  type RunRequest,
  type TableProblem,
  type ToActor,
} from './protocol.ts';

const ENTRY = join(import.meta.dirname, '../../../../bin/query-actor.js');
/** Longest wait before starting again an actor that keeps dying at once (a start that cannot succeed). */
const MAX_RESTART_DELAY_MS = 30_000;
/** Threads a run may have been in when they died: the first death retries it, the second answers 503. */
const MAX_ATTEMPTS = 2;

export interface SupervisorDeps {
  readonly objects: ObjectStore;
  readonly logger: Logger;
  /** The actor's latest figures; undefined when it died (what it held is gone). */
  readonly onStats: (stats: ActorStats | undefined) => void;
  readonly onRestart: (reason: 'crash' | 'retire') => void;
}

interface Flight {
  readonly message: Extract<ToActor, { type: 'run' }>;
  /** Sent to the thread that runs now (and not answered yet). */
  posted: boolean;
  /** Threads that died with this run in them. */
  deaths: number;
  readonly resolve: (answer: RunAnswer) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Keeps one query actor's thread running: starts it, starts it again when it dies, and holds every run sent
 * to it until the run is answered, so that none is lost with a thread. A run in a thread that dies is sent
 * to the next one; a run in two threads that died (it may be what kills them) is answered 503. It also reads
 * the tables the actor asks for from the ObjectStore, here on the main thread, where the store's clients
 * live; reading is I/O, so it costs this thread little.
 */
export class ActorSupervisor {
  readonly #init: ActorInit;
  readonly #deps: SupervisorDeps;
  readonly #flights = new Map<number, Flight>();
  #nextId = 1;
  #worker: Worker | undefined;
  /** Bumped at every start, so that a table read for a thread that has died is not sent to its successor. */
  #generation = 0;
  #retiring = false;
  /** Deaths since the actor last answered anything: the restart delay grows with them. */
  #failedStarts = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #closed: Promise<void> | undefined;
  #exited: (() => void) | undefined;

  constructor(init: ActorInit, deps: SupervisorDeps) {
    this.#init = init;
    this.#deps = deps;
    this.#start();
  }

  run(request: RunRequest): Promise<RunAnswer> {
    if (this.#closed) return Promise.reject(closedError());
    const message = { type: 'run' as const, id: this.#nextId++, ...request };
    return new Promise((resolve, reject) => {
      const flight: Flight = { message, posted: false, deaths: 0, resolve, reject };
      this.#flights.set(message.id, flight);
      if (this.#worker && !this.#retiring) this.#post(flight);
    });
  }

  forget(tableKey: string): void {
    if (this.#worker && !this.#retiring)
      this.#worker.postMessage({ type: 'forget', tableKey } satisfies ToActor);
  }

  /** Ends the thread; runs not answered yet are answered 503. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((done) => {
      clearTimeout(this.#restartTimer);
      if (!this.#worker) return done();
      this.#exited = done;
      void this.#worker.terminate();
    }).then(() => {
      for (const flight of this.#flights.values()) flight.reject(closedError());
      this.#flights.clear();
    });
    return this.#closed;
  }

  #start(): void {
    this.#restartTimer = undefined;
    const generation = ++this.#generation;
    const worker = new Worker(ENTRY, {
      workerData: this.#init,
      name: `weir-query-actor-${this.#init.index}`,
    });
    this.#worker = worker;
    this.#retiring = false;
    worker.on('message', (message: FromActor) => this.#receive(message, generation));
    worker.on('error', (err) =>
      this.#deps.logger.error({ err, actor: this.#init.index }, 'a query actor failed'),
    );
    worker.once('exit', (code) => this.#onExit(code));
    for (const flight of this.#flights.values()) this.#post(flight);
  }

  #post(flight: Flight): void {
    flight.posted = true;
    this.#worker!.postMessage(flight.message);
  }

  #receive(message: FromActor, generation: number): void {
    switch (message.type) {
      case 'need':
        void this.#fetch(message.tableKey, generation);
        return;
      case 'answer': {
        this.#failedStarts = 0;
        const flight = this.#flights.get(message.id);
        this.#flights.delete(message.id);
        flight?.resolve(message.answer);
        return;
      }
      case 'failed': {
        this.#failedStarts = 0;
        const flight = this.#flights.get(message.id);
        this.#flights.delete(message.id);
        const err = fromWire(message.error);
        if (message.error.kind === 'other')
          this.#deps.logger.error({ err, actor: this.#init.index }, 'a materialized run failed');
        flight?.reject(err);
        return;
      }
      case 'stats':
        this.#deps.onStats(message);
        return;
      case 'retire':
        this.#deps.logger.warn({ actor: this.#init.index, reason: message.reason }, 'a query actor retires');
        this.#retiring = true;
        void this.#worker?.terminate();
        return;
    }
  }

  /** Reads a table for the actor and hands its bytes over; a failure answers the runs waiting for it. */
  async #fetch(tableKey: string, generation: number): Promise<void> {
    let message: ToActor;
    const transfer: ArrayBuffer[] = [];
    try {
      const bytes = ownBytes(await this.#deps.objects.get(tableKey));
      message = { type: 'table', tableKey, bytes };
      transfer.push(bytes.buffer);
    } catch (err) {
      const problem = tableProblem(err);
      this.#deps.logger.warn(
        { err, tableKey, location: this.#deps.objects.location },
        'a materialization could not be read from object storage',
      );
      const detail = `the materialization ${tableKey} could not be read from object storage (${problem})`;
      message = {
        type: 'table-failed',
        tableKey,
        error: toWire(new MaterializedTableError(problem, tableKey, detail)),
      };
    }
    // A thread that died in the meantime took its waiting runs' state with it; they ask again in the next.
    if (generation === this.#generation && this.#worker && !this.#retiring)
      this.#worker.postMessage(message, transfer);
  }

  #onExit(code: number): void {
    const planned = this.#retiring;
    this.#worker = undefined;
    this.#retiring = false;
    this.#deps.onStats(undefined);
    if (this.#closed) return this.#exited?.();
    if (!planned)
      this.#deps.logger.error({ actor: this.#init.index, code }, 'a query actor died; starting it again');
    for (const flight of this.#flights.values()) {
      if (!flight.posted) continue;
      flight.posted = false;
      if (planned) continue;
      if (++flight.deaths < MAX_ATTEMPTS) continue;
      this.#flights.delete(flight.message.id);
      flight.reject(
        new AppError('unavailable', {
          detail: 'The query actor serving this materialization stopped twice while running it; retry later.',
          retriable: true,
          retryAfterSeconds: 1,
        }),
      );
    }
    this.#deps.onRestart(planned ? 'retire' : 'crash');
    // A thread that dies before answering anything may never start: wait longer each time, not in a loop.
    const delay = planned ? 0 : restartDelay(this.#failedStarts++);
    this.#restartTimer = setTimeout(() => this.#start(), delay);
  }
}

function restartDelay(failedStarts: number): number {
  return failedStarts === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** (failedStarts - 1));
}

/** Bytes in an ArrayBuffer of their own, so that handing it over moves nothing else (a pooled slice would). */
function ownBytes(buffer: Uint8Array): Uint8Array<ArrayBuffer> {
  const whole = buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength;
  if (whole && buffer.buffer instanceof ArrayBuffer) return new Uint8Array(buffer.buffer);
  return new Uint8Array(buffer);
}

function tableProblem(err: unknown): TableProblem {
  if (!(err instanceof ObjectStoreError)) return 'failed';
  if (err.kind === 'not_found' || err.kind === 'unavailable') return err.kind;
  return 'failed';
}

function closedError(): AppError {
  return new AppError('unavailable', { detail: 'The query pool is closed.', retriable: true });
}
