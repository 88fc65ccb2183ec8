import type { Logger } from '../core/logger.ts';
import { asError } from '../errors/app-error.ts';

type Step = () => Promise<void> | void;

/** What exiting leaves of requests still in progress (`leaves` of the steps that wait for them). */
export const CUT_OFF_REQUESTS =
  'requests still in progress are cut off unanswered; clients send them again (an event is stored once, by its uuid)';

/** What exiting while the JetStream publisher closes leaves: capture's 200 came after JetStream's ack. */
export const PUBLISHED = 'nothing accepted is lost: every event answered 200 was acknowledged by JetStream';

/** Where a teardown is: the step running, what abandoning it leaves, and the steps not run yet. */
export interface TeardownState {
  /** The step under way; undefined between steps, before the first and after the last. */
  readonly step: string | undefined;
  /** What exiting now leaves behind of that step's work, as a sentence, when it leaves anything. */
  readonly leaves: string | undefined;
  /** The steps that have not started, in the order they would run. */
  readonly notRun: readonly string[];
}

/**
 * What a role has acquired, released in reverse order: on shutdown, and when starting fails half way, so
 * a failed start never leaves a lock, a connection or an open store behind. Acquiring in dependency order
 * (data directory → store → ingest → bus → HTTP) makes the reverse the right shutdown order.
 *
 * A step that talks to another server (NATS, ClickHouse) says what it leaves when the process exits before it
 * is done (`leaves`): the shutdown deadline (cli/run-until-signal.ts) names it in its last line.
 */
export class Teardown {
  readonly #steps: { what: string; step: Step; leaves: string | undefined }[] = [];
  readonly #logger: Logger;
  #running: { what: string; leaves: string | undefined } | undefined;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  push(what: string, step: Step, leaves?: string): void {
    this.#steps.push({ what, step, leaves });
  }

  /** Runs every step, newest first; a failing step is logged and the rest still run. Rejects with the first failure. */
  async run(): Promise<void> {
    let first: Error | undefined;
    for (let s = this.#steps.pop(); s !== undefined; s = this.#steps.pop()) {
      this.#running = s;
      try {
        await s.step();
      } catch (err) {
        this.#logger.error({ err, step: s.what }, 'shutdown step failed');
        first ??= asError(err);
      } finally {
        this.#running = undefined;
      }
    }
    if (first !== undefined) throw first;
  }

  state(): TeardownState {
    return {
      step: this.#running?.what,
      leaves: this.#running?.leaves,
      notRun: this.#steps.map((s) => s.what).reverse(),
    };
  }

  /** For a start that failed: releases what was acquired, then rethrows the start's own error. */
  async abandon(err: unknown): Promise<never> {
    await this.run().catch(() => undefined);
    throw err;
  }
}
