import type { Logger } from '../core/logger.ts';
import { asError } from '../errors/app-error.ts';

type Step = () => Promise<void> | void;

/**
 * What a role has acquired, released in reverse order: on shutdown, and when starting fails half way, so
 * a failed start never leaves a lock, a connection or an open store behind. Acquiring in dependency order
 * (data directory → store → ingest → bus → HTTP) makes the reverse the right shutdown order.
 */
export class Teardown {
  readonly #steps: { what: string; step: Step }[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  push(what: string, step: Step): void {
    this.#steps.push({ what, step });
  }

  /** Runs every step, newest first; a failing step is logged and the rest still run. Rejects with the first failure. */
  async run(): Promise<void> {
    let first: Error | undefined;
    for (let s = this.#steps.pop(); s !== undefined; s = this.#steps.pop()) {
      try {
        await s.step();
      } catch (err) {
        this.#logger.error({ err, step: s.what }, 'shutdown step failed');
        first ??= asError(err);
      }
    }
    if (first !== undefined) throw first;
  }

  /** For a start that failed: releases what was acquired, then rethrows the start's own error. */
  async abandon(err: unknown): Promise<never> {
    await this.run().catch(() => undefined);
    throw err;
  }
}
