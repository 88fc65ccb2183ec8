import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  toWire,
  type PublishItem,
  type PublishResult,
  type ThreadProject,
  type ToMain,
  type ToThread,
} from '../bus/thread-bus.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';
import type { MetricsJson } from '../core/metrics.ts';
import type { Bus, Project } from '../core/ports.ts';
import { freePort } from '../http/server.ts';
import type { RoleCatalog } from './catalog.ts';
import type { CaptureThreadInit } from './capture-thread.ts';
import type { GeoipSource } from '../capture/geoip.ts';

const ENTRY = join(import.meta.dirname, '../../bin/capture-thread.js');
/** Longest a capture thread may take to start listening. */
const START_TIMEOUT_MS = 30_000;
/** Longest `/metrics` waits for a thread's figures. */
const METRICS_TIMEOUT_MS = 5_000;

/**
 * The capture threads of `weir start`. On one thread, HTTP and capture (decode, validate, normalise, reply)
 * took about as much of the main thread as ingest did, so one core capped both; with capture on threads of
 * its own, the main thread keeps ingest, the store and the API, and the cores share the work. The threads
 * listen on the public port (uWS sets SO_REUSEPORT: with several, the kernel spreads connections over
 * them) and pass every request that is not capture to the main thread's server on a loopback port.
 *
 * What a thread publishes comes here and goes to the main thread's bus; the answer goes back when the bus
 * has made the events durable, so "200 only once durable" holds as before. The threads get the project keys
 * from the catalog, and again after every change, before the change's own request is answered.
 */
export class CaptureThreads {
  readonly #threads: Thread[];
  readonly #logger: Logger;
  #failed = false;

  private constructor(threads: Thread[], logger: Logger) {
    this.#threads = threads;
    this.#logger = logger;
  }

  static async start(
    config: Config,
    deps: { bus: Bus; catalog: RoleCatalog; logger: Logger; target: string; geoip: GeoipSource | undefined },
  ): Promise<CaptureThreads> {
    const projects = threadProjects(deps.catalog.listProjects());
    const threads: Thread[] = [];
    const started = new CaptureThreads(threads, deps.logger);
    // The threads share the port among themselves, and with nobody else.
    const port = await freePort(config.host, config.port);
    try {
      for (let index = 0; index < config.captureThreads; index++) {
        const init: CaptureThreadInit = {
          config: { ...config, port },
          target: deps.target,
          projects,
          index,
          geoip: deps.geoip,
        };
        threads.push(await Thread.start(init, deps, () => started.#onFailure(index)));
      }
    } catch (err) {
      await started.stop();
      throw err;
    }
    deps.catalog.onChange((all) => {
      const message: ToThread = { type: 'projects', projects: threadProjects(all) };
      for (const t of threads) t.post(message);
    });
    return started;
  }

  /** The public port (every thread listens on it). */
  get port(): number {
    return this.#threads[0]!.port;
  }

  /** False once a thread has died: capture on it is gone, so the process should be replaced. */
  get healthy(): boolean {
    return !this.#failed;
  }

  /** Each thread's capture metrics, as prom-client JSON, for the main thread's `/metrics`. */
  async metrics(): Promise<MetricsJson[]> {
    return Promise.all(this.#threads.map((t) => t.metrics()));
  }

  /** Stops listening and waits for the requests in progress (their events are committed or refused). */
  async drain(timeoutMs: number): Promise<void> {
    await Promise.all(this.#threads.map((t) => t.drain(timeoutMs)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#threads.map((t) => t.stop()));
  }

  #onFailure(index: number): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#logger.fatal({ thread: index }, 'a capture thread died; Weir reports itself unhealthy');
  }
}

/** One worker thread and its side of the protocol. */
class Thread {
  readonly #worker: Worker;
  readonly #bus: Bus;
  readonly #logger: Logger;
  readonly port: number;
  #results: PublishResult[] = [];
  #scheduled = false;
  #nextMetrics = 1;
  readonly #metricsWaiting = new Map<number, (json: MetricsJson) => void>();
  #drained: (() => void) | undefined;
  #exited: Promise<void>;
  #stopping = false;
  #gone = false;

  private constructor(
    worker: Worker,
    port: number,
    exited: Promise<void>,
    deps: { bus: Bus; logger: Logger },
  ) {
    this.#worker = worker;
    this.port = port;
    this.#exited = exited;
    void exited.then(() => (this.#gone = true));
    this.#bus = deps.bus;
    this.#logger = deps.logger;
  }

  static start(
    init: CaptureThreadInit,
    deps: { bus: Bus; logger: Logger },
    onFailure: () => void,
  ): Promise<Thread> {
    const worker = new Worker(ENTRY, { workerData: init, name: `weir-capture-${init.index}` });
    return new Promise((resolve, reject) => {
      let thread: Thread | undefined;
      const timer = setTimeout(() => {
        reject(new Error('a capture thread did not start listening in time'));
        void worker.terminate();
      }, START_TIMEOUT_MS);
      const exited = new Promise<void>((done) =>
        worker.once('exit', (code) => {
          clearTimeout(timer);
          if (!thread) reject(new Error(`a capture thread exited before listening (code ${code})`));
          else if (!thread.#stopping) {
            deps.logger.error({ code }, 'a capture thread exited');
            onFailure();
          }
          done();
        }),
      );
      worker.on('error', (err) => deps.logger.error({ err }, 'a capture thread failed'));
      worker.on('message', (message: ToMain) => {
        if (message.type === 'listening') {
          clearTimeout(timer);
          thread = new Thread(worker, message.port, exited, deps);
          resolve(thread);
        } else if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`a capture thread could not start: ${message.message}`));
        } else if (thread) thread.#receive(message);
      });
    });
  }

  post(message: ToThread): void {
    this.#worker.postMessage(message);
  }

  /** The thread's metrics; none from a thread that is gone or does not answer within a few seconds. */
  metrics(): Promise<MetricsJson> {
    if (this.#gone) return Promise.resolve([]);
    const id = this.#nextMetrics++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#metricsWaiting.delete(id);
        resolve([]);
      }, METRICS_TIMEOUT_MS);
      this.#metricsWaiting.set(id, (json) => {
        clearTimeout(timer);
        resolve(json);
      });
      this.post({ type: 'metrics', id });
    });
  }

  drain(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      this.#drained = resolve;
      this.post({ type: 'drain', timeoutMs });
      // A thread that is gone has nothing left to drain.
      void this.#exited.then(resolve);
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.post({ type: 'stop' });
    const timer = setTimeout(() => void this.#worker.terminate(), 5000);
    await this.#exited;
    clearTimeout(timer);
  }

  #receive(message: ToMain): void {
    switch (message.type) {
      case 'publish':
        for (const item of message.items) this.#publish(item);
        break;
      case 'metrics':
        this.#metricsWaiting.get(message.id)?.(message.metrics as MetricsJson);
        this.#metricsWaiting.delete(message.id);
        break;
      case 'drained':
        this.#drained?.();
        break;
      default:
        this.#logger.warn({ type: message.type }, 'unexpected message from a capture thread');
    }
  }

  #publish(item: PublishItem): void {
    this.#bus.publish(item.batches).then(
      () => this.#answer({ id: item.id }),
      (err: unknown) => this.#answer({ id: item.id, error: toWire(err) }),
    );
  }

  /** Answers go back once a turn, together. */
  #answer(result: PublishResult): void {
    this.#results.push(result);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const results = this.#results;
      this.#results = [];
      this.post({ type: 'published', results });
    });
  }
}

function threadProjects(projects: readonly Project[]): ThreadProject[] {
  return projects.map((p) => ({ ...p }));
}
