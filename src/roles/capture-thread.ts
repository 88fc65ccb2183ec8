/**
 * A capture thread of `weir start` (see capture-threads.ts): HTTP on the public port with the capture routes,
 * publishing through the main thread, and every other path passed on to the main thread's own server. It
 * needs no store and no catalog file: the main thread sends it the project keys, and again on every change.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ThreadBus, type ThreadProject, type ToMain, type ToThread } from '../bus/thread-bus.ts';
import type { Config } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import type { Project, ProjectKeys } from '../core/ports.ts';
import { registerProxy } from '../http/proxy.ts';
import { chooseTransport } from '../http/choose-transport.ts';
import { drainRequests } from '../http/server.ts';
import { mountCapture } from './capture-role.ts';
import type { GeoipSource } from '../capture/geoip.ts';

export interface CaptureThreadInit {
  readonly config: Config;
  /** The main thread's server, for everything but capture. */
  readonly target: string;
  readonly projects: readonly ThreadProject[];
  /** The main thread's GeoIP database, shared memory (read, never copied, here). */
  readonly geoip: GeoipSource | undefined;
  /** Index of this thread, for the log. */
  readonly index: number;
}

/** The project keys the main thread sent, by token. */
class ThreadProjectKeys implements ProjectKeys {
  #byToken = new Map<string, Project>();

  constructor(projects: readonly ThreadProject[]) {
    this.replace(projects);
  }

  replace(projects: readonly ThreadProject[]): void {
    this.#byToken = new Map(projects.map((p) => [p.apiToken, p]));
  }

  projectByApiToken(token: string): Project | undefined {
    return this.#byToken.get(token);
  }

  async close(): Promise<void> {
    await Promise.resolve();
  }
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('capture-thread.ts runs as a worker thread of weir start');
  const init = workerData as CaptureThreadInit;
  const { config } = init;
  const send = (message: ToMain): void => port.postMessage(message);
  const logger = createLogger(config.logLevel).child({ thread: `capture-${init.index}` });
  // Process-wide figures (memory, CPU, event-loop lag of the main thread) come from the main thread's registry.
  const metrics = new Metrics({ defaultMetrics: false });
  const catalog = new ThreadProjectKeys(init.projects);
  const bus = new ThreadBus(port);

  // The main thread chose the same way and logged why; a thread alone on the port need not share it.
  const { transport } = chooseTransport(config.httpTransport);
  const app = transport.createApp();
  const inFlight = mountCapture(app, config, { catalog, bus, metrics, logger, geoip: init.geoip });
  registerProxy(app, { target: init.target, inFlight, logger });
  const server = await transport.listen(app, config.host, config.port, {
    sharePort: config.captureThreads > 1,
  });

  port.on('message', (message: ToThread) => {
    switch (message.type) {
      case 'published':
        bus.settle(message.results);
        break;
      case 'projects':
        catalog.replace(message.projects);
        break;
      case 'metrics':
        metrics.registry.getMetricsAsJSON().then(
          (json) => send({ type: 'metrics', id: message.id, metrics: json }),
          (err: unknown) => {
            logger.error({ err }, 'metrics collection failed');
            send({ type: 'metrics', id: message.id, metrics: [] });
          },
        );
        break;
      case 'drain':
        server.stopListening();
        void drainRequests(inFlight, message.timeoutMs, logger).then(() => send({ type: 'drained' }));
        break;
      case 'stop':
        // Every handle closed, the thread ends on its own (exiting with sockets open aborts the process).
        server.stopListening();
        transport.closeAll(app);
        port.close();
        break;
    }
  });
  send({ type: 'listening', port: server.port });
}

main().catch((err: unknown) => {
  parentPort?.postMessage({
    type: 'failed',
    message: err instanceof Error ? err.message : String(err),
  } satisfies ToMain);
});
