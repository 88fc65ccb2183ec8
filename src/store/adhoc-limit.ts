import { StoreThrottled } from '../core/ports.ts';

/**
 * The server store's cap on one project's ad-hoc queries (the query API) under way at once. A server runs
 * queries side by side and queues nothing here, but its own limit of queries at once is shared by every
 * project: one project's burst of ad-hoc SQL must not take it all. (The embedded store caps them in its
 * reader gate, counting those waiting for a connection too.)
 */
export class AdhocLimit {
  readonly #limit: number;
  readonly #onRefused: (() => void) | undefined;
  readonly #running = new Map<number, number>();

  constructor(limit: number, onRefused?: () => void) {
    this.#limit = Math.max(1, limit);
    this.#onRefused = onRefused;
  }

  /** Takes a place for one of `project`'s ad-hoc queries: the release, or StoreThrottled past the limit. */
  take(project: number): () => void {
    const n = this.#running.get(project) ?? 0;
    if (n >= this.#limit) {
      this.#onRefused?.();
      throw new StoreThrottled(
        `project ${project} already has ${this.#limit} ad-hoc ${this.#limit === 1 ? 'query' : 'queries'} running, its limit (WEIR_QUERY_ADHOC_CONCURRENCY)`,
        'WEIR_QUERY_ADHOC_CONCURRENCY',
      );
    }
    this.#running.set(project, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#running.get(project) ?? 1) - 1;
      if (left === 0) this.#running.delete(project);
      else this.#running.set(project, left);
    };
  }
}
