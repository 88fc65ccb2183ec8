import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { AppError } from '../../errors/app-error.ts';

/**
 * How long a shutdown waits for the server to confirm what a connection sent (a PING's PONG, a drain): a
 * server that answers at all answers that at once, so one that has not by then is frozen or cut off, and
 * waiting on only spends the shutdown deadline (cli/run-until-signal.ts).
 */
export const CONFIRM_TIMEOUT_MS = 2000;

export interface NatsLinkDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * One NATS connection and what is known of its state. It reconnects forever (a NATS outage is a 503 while
 * it lasts, never a crash); each change of state is logged and shown on `weir_nats_connected{connection}`,
 * and `connected` is what publishing and `/_ready` consult.
 */
/** `WEIR_NATS_URL` as the client's server list: comma-separated URLs, each tried in turn. */
export function natsServers(url: string): string[] {
  return url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * The JetStream replicas of a stream or bucket this process makes: the configured number, else 3 in a
 * cluster of three servers or more (the servers the one it reached tells of), else 1.
 */
export function replicasFor(nc: NatsConnection, configured: number | undefined): number {
  if (configured !== undefined) return configured;
  const info = nc.info;
  const servers = info?.cluster ? Math.max(1, info.connect_urls?.length ?? 1) : 1;
  return servers >= 3 ? 3 : 1;
}

export class NatsLink {
  readonly nc: NatsConnection;
  readonly #name: string;
  readonly #deps: NatsLinkDeps;
  #connected = true;
  #waiters: (() => void)[] = [];
  readonly #watching: Promise<void>;

  private constructor(nc: NatsConnection, name: string, deps: NatsLinkDeps) {
    this.nc = nc;
    this.#name = name;
    this.#deps = deps;
    deps.metrics.natsConnected.set({ connection: name }, 1);
    this.#watching = this.#watch();
  }

  /**
   * Connects, or fails with a plain message when the server cannot be reached at all: a process that has
   * never reached NATS has nothing to offer, and its supervisor restarts it. Later outages are survived.
   */
  static async open(url: string, name: string, deps: NatsLinkDeps): Promise<NatsLink> {
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: natsServers(url),
        name,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 100,
        waitOnFirstConnect: false,
        // The client otherwise makes an Error (a stack capture) up front for every request it sends, in case
        // it times out: every publish ack and every ack confirmation. That was 9% of ingest's CPU under load.
        noAsyncTraces: true,
      });
    } catch (err) {
      throw new Error(`cannot connect to NATS at ${url}: ${(err as Error).message}`, { cause: err });
    }
    deps.logger.info({ connection: name, server: nc.getServer() }, 'nats connected');
    return new NatsLink(nc, name, deps);
  }

  get connected(): boolean {
    return this.#connected && !this.nc.isClosed() && !this.nc.isDraining();
  }

  /**
   * Resolves true once connected (at once if it is), false if that takes longer than `timeoutMs`, it closes,
   * or `signal` aborts (a consumer stopping waits for no reconnection).
   */
  waitConnected(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.nc.isClosed() || signal?.aborted === true) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (connected: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        this.#waiters = this.#waiters.filter((w) => w !== wake);
        resolve(connected);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const abort = (): void => done(this.connected);
      const wake = (): void => done(this.connected);
      signal?.addEventListener('abort', abort, { once: true });
      this.#waiters.push(wake);
    });
  }

  /**
   * Resolves true once the server has answered a PING sent now, so it has everything sent before it; false
   * when it does not within `timeoutMs` (frozen, or cut off without the client knowing yet) or cannot be sent.
   */
  confirmed(timeoutMs: number = CONFIRM_TIMEOUT_MS): Promise<boolean> {
    if (!this.connected) return Promise.resolve(false);
    return within(
      this.nc.flush().then(
        () => true,
        () => false,
      ),
      timeoutMs,
      false,
    );
  }

  /** Throws the 503 a client should see while NATS is unreachable. */
  assertConnected(): void {
    if (!this.connected)
      throw new AppError('unavailable', {
        detail: 'The event bus is unreachable; retry after the time in Retry-After.',
        retryAfterSeconds: 1,
        retriable: true,
      });
  }

  /** Flushes what is buffered (acks, publishes) and closes: `closeConfirmed` for callers that need no answer. */
  async close(): Promise<void> {
    await this.closeConfirmed();
  }

  /**
   * Flushes what is buffered (acks, publishes) and closes, waiting at most `CONFIRM_TIMEOUT_MS` for the
   * server. Resolves false when a server still connected did not confirm the flush by then: what was sent
   * last may not have reached it.
   */
  async closeConfirmed(): Promise<boolean> {
    let confirmed = true;
    if (!this.nc.isClosed() && !this.nc.isDraining()) {
      // Draining needs the server: it refuses at once while disconnected, and then there is nothing to flush.
      const drained = await within(
        this.nc.drain().then(
          () => 'drained' as const,
          () => 'refused' as const,
        ),
        CONFIRM_TIMEOUT_MS,
        'late' as const,
      );
      if (drained === 'late') {
        confirmed = false;
        this.#deps.logger.warn(
          { connection: this.#name, timeoutMs: CONFIRM_TIMEOUT_MS },
          'nats did not confirm the last messages in time; closing without it',
        );
      }
      if (!this.nc.isClosed()) await this.nc.close();
    }
    await this.#watching;
    return confirmed;
  }

  async #watch(): Promise<void> {
    const { metrics, logger } = this.#deps;
    const connection = this.#name;
    for await (const s of this.nc.status()) {
      switch (s.type) {
        case 'disconnect':
          this.#connected = false;
          metrics.natsConnected.set({ connection }, 0);
          logger.warn({ connection, server: s.server }, 'nats disconnected; reconnecting');
          break;
        case 'reconnect':
          this.#connected = true;
          metrics.natsConnected.set({ connection }, 1);
          logger.info({ connection, server: s.server }, 'nats reconnected');
          this.#wake();
          break;
        case 'error':
          logger.warn({ connection, err: s.error }, 'nats error');
          break;
        case 'staleConnection':
          logger.warn({ connection }, 'nats connection stale; reconnecting');
          break;
        default:
          break;
      }
    }
    this.#connected = false;
    metrics.natsConnected.set({ connection }, 0);
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/** `promise`, or `late` if it has not settled within `timeoutMs`; the timer is cleared either way. */
function within<T, L>(promise: Promise<T>, timeoutMs: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), timeoutMs);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
