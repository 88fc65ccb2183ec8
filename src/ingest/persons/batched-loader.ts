/**
 * Coalesces store look-ups made by many actors at once into few queries. The embedded store runs one query
 * at a time and each costs a few milliseconds whatever its size, so one query per cache miss would cap
 * ingest of new users at a few hundred events a second. Like the batch writer, it is adaptive: requests
 * that arrive while a query is in flight wait and go together in the next.
 */
export type Fetch<V> = (keys: readonly string[]) => Promise<Map<string, V>>;

interface Waiter<V> {
  readonly keys: readonly string[];
  readonly resolve: (found: Map<string, V>) => void;
  readonly reject: (err: unknown) => void;
}

export interface BatchedLoaderConfig {
  /** Most keys in one query; more wait for the next. */
  readonly maxKeys: number;
}

export class BatchedLoader<V> {
  readonly #config: BatchedLoaderConfig;
  readonly #fetch: Fetch<V>;
  #queue: Waiter<V>[] = [];
  #running = false;

  constructor(config: BatchedLoaderConfig, fetch: Fetch<V>) {
    this.#config = config;
    this.#fetch = fetch;
  }

  /** What the store holds for these keys; a key it has nothing for is absent from the map. */
  load(keys: readonly string[]): Promise<Map<string, V>> {
    if (keys.length === 0) return Promise.resolve(new Map<string, V>());
    return new Promise((resolve, reject) => {
      this.#queue.push({ keys, resolve, reject });
      if (!this.#running) void this.#loop();
    });
  }

  async #loop(): Promise<void> {
    this.#running = true;
    // Let the rest of this turn of the event loop ask too: one request's batches reach every actor in
    // the same turn, and their look-ups then share the first query instead of queueing behind it.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.#queue.length > 0) {
      let take = 0;
      const keys = new Set<string>();
      while (take < this.#queue.length) {
        const w = this.#queue[take]!;
        if (take > 0 && keys.size + w.keys.length > this.#config.maxKeys) break;
        for (const k of w.keys) keys.add(k);
        take++;
      }
      const taken = this.#queue.splice(0, take);
      try {
        const found = await this.#fetch([...keys]);
        for (const w of taken) w.resolve(found);
      } catch (err) {
        for (const w of taken) w.reject(err);
      }
    }
    this.#running = false;
  }
}
