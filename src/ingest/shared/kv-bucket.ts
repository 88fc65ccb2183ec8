import { KvWatchInclude } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { CasBucket, type KvCondition } from '../../kv/cas-bucket.ts';

/** A record as read, with its revision (the bucket's stream sequence of its last write). */
export interface KvEntry<T> {
  readonly value: T;
  readonly revision: number;
}

export interface KvBucketOptions {
  readonly bucket: string;
  /** JetStream replicas of the bucket's stream when it is made. @default 1 */
  readonly replicas?: number;
  /** Which condition writes carry (CasBucket). @default 'auto' */
  readonly condition?: KvCondition;
}

/** The last token of fence records: no record of state has it (their second token is a project number). */
const FENCE = 'fence';
/** How long a watch that ended waits before it is started again. */
const REWATCH_MS = 250;

/**
 * A NATS KV bucket of JSON records written by compare-and-set (CasBucket), for state several processes change,
 * with watches of its prefixes and fences that tell when they have caught up. On a server that does not hold
 * the per-record condition every write waits for all others: the process logs it (`bucketWide`).
 */
export class KvBucket {
  readonly #cas: CasBucket;
  readonly #stops: (() => void)[] = [];
  /** Per watched prefix, the revision of the last fence it delivered, and who waits for one. */
  readonly #fences = new Map<string, { seen: number; waiters: { revision: number; done: () => void }[] }>();
  #closed = false;

  private constructor(cas: CasBucket) {
    this.#cas = cas;
  }

  /** Opens the bucket on `nc` (made when missing; the connection stays the caller's). */
  static async open(nc: NatsConnection, options: KvBucketOptions): Promise<KvBucket> {
    return new KvBucket(await CasBucket.open(nc, options));
  }

  /** Whether writes carry the bucket-wide condition (an old server, replicated). */
  get bucketWide(): boolean {
    return this.#cas.bucketWide;
  }

  /**
   * The record, or undefined when there is none (never written, or deleted). Read from any replica: in a
   * cluster it may be a little behind, which costs a write from it a lost condition and a retry, no more.
   */
  async get<T>(key: string): Promise<KvEntry<T> | undefined> {
    const e = await this.#cas.kv.get(key);
    if (!e || e.operation !== 'PUT') return undefined;
    return { value: e.json<T>(), revision: e.revision };
  }

  /** Writes a record that must not exist yet; its revision. KvConflict when it exists. */
  create(key: string, value: unknown): Promise<number> {
    return this.#cas.create(key, value);
  }

  /** Writes a record if it is still at `revision`; its new revision. KvConflict when it is not. */
  update(key: string, value: unknown, revision: number): Promise<number> {
    return this.#cas.set(key, value, revision);
  }

  /** Deletes a record whatever its revision (only for records nobody can reach). */
  async delete(key: string): Promise<void> {
    await this.#cas.write(key, undefined);
  }

  /**
   * Calls `apply` with every change of a record under `prefix.` from now on (value undefined: deleted), and
   * `reset` whenever the watch had to be started again (changes may have been missed in between: whoever
   * cached records drops them). Stopped by `close`.
   */
  watch(
    prefix: string,
    apply: (key: string, value: unknown, revision: number) => void,
    reset: () => void,
  ): Promise<void> {
    const fenceKey = `${prefix}.${FENCE}`;
    const fence = { seen: 0, waiters: [] as { revision: number; done: () => void }[] };
    this.#fences.set(prefix, fence);
    const run = async (): Promise<void> => {
      const watcher = await this.#cas.kv.watch({ key: `${prefix}.>`, include: KvWatchInclude.UpdatesOnly });
      this.#stops.push(() => watcher.stop());
      void (async () => {
        try {
          for await (const e of watcher) {
            if (e.key === fenceKey) {
              fence.seen = e.revision;
              const due = fence.waiters.filter((w) => w.revision <= e.revision);
              fence.waiters = fence.waiters.filter((w) => w.revision > e.revision);
              for (const w of due) w.done();
              continue;
            }
            let value: unknown;
            if (e.operation === 'PUT') {
              try {
                value = e.json();
              } catch {
                continue; // not a record of ours: nothing to apply
              }
            }
            apply(e.key, value, e.revision);
          }
        } catch {
          // The watch failed (its server went away for good): started again below.
        }
        if (this.#closed) return;
        reset();
        for (;;) {
          await new Promise((r) => setTimeout(r, REWATCH_MS));
          if (this.#closed) return;
          try {
            await run();
            return;
          } catch {
            // NATS is still away: try again.
          }
        }
      })();
    };
    return run();
  }

  /**
   * Resolves once every watch has delivered every change made before the call (a fence record written under
   * each watched prefix comes back through its watch after them): for tests and tools that need this
   * process's caches to have seen what other processes did.
   */
  async fence(): Promise<void> {
    await Promise.all(
      [...this.#fences].map(async ([prefix, fence]) => {
        const revision = await this.#cas.kv.put(`${prefix}.${FENCE}`, '{}');
        if (fence.seen >= revision) return;
        await new Promise<void>((done) => fence.waiters.push({ revision, done }));
      }),
    );
  }

  /** Stops the watches. The connection is the caller's to close. */
  close(): void {
    this.#closed = true;
    for (const stop of this.#stops) stop();
  }
}
