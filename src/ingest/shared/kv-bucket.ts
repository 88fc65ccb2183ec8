import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { isWrongLastSequence } from '../../bus/jetstream/kv-conditions.ts';
import { Kvm, KvWatchInclude, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

/** Thrown when a conditional write lost: the record is no longer at the revision it was read at. */
export class KvConflict extends Error {
  constructor(readonly key: string) {
    super(`the record ${key} changed since it was read`);
  }
}

/** A record as read, with its revision (the bucket's stream sequence of its last write). */
export interface KvEntry<T> {
  readonly value: T;
  readonly revision: number;
}

export interface KvBucketOptions {
  readonly bucket: string;
  /** JetStream replicas of the bucket's stream when it is made. @default 1 */
  readonly replicas?: number;
  /**
   * Which condition writes carry: the record's revision alone, or the bucket's last sequence as well;
   * `auto` takes the bucket-wide one only where the per-record one does not hold. @default 'auto'
   */
  readonly condition?: 'auto' | 'record' | 'bucket';
}

/** The first nats-server that holds a per-record condition against concurrent writes in a cluster (#4320). */
const FIXED_SERVER = [2, 9, 21];
/** The header that marks a KV message a delete or purge marker. */
const KV_OPERATION = 'KV-Operation';
/** The last token of fence records: no record of state has it (their second token is a project number). */
const FENCE = 'fence';
/** How long a watch that ended waits before it is started again. */
const REWATCH_MS = 250;
/** Rounds of the bucket-wide condition before a write gives up (each lost round means another write landed). */
const MAX_ROUNDS = 200;

/** Whether the per-record condition of a KV write holds on this server with these replicas. */
export function perRecordConditionHolds(version: string | undefined, replicas: number): boolean {
  if (replicas <= 1) return true;
  const parts = (version ?? '').split('.').map((p) => Number.parseInt(p, 10));
  if (parts.length < 3 || parts.some((p) => Number.isNaN(p))) return false;
  for (let i = 0; i < 3; i++) if (parts[i] !== FIXED_SERVER[i]) return parts[i]! > FIXED_SERVER[i]!;
  return true;
}

/**
 * A NATS KV bucket of JSON records written by compare-and-set, for state several processes change.
 *
 * Every write is conditional on the revision of the record as read (a create on its absence). nats-server
 * before 2.9.21 does not hold that condition against concurrent writes to a replicated stream
 * (nats-io/nats-server#4320: it was checked before the Raft proposal, not in it); on such a server with more
 * than one replica, writes are made conditional on the bucket's last sequence as well, which the server does
 * check in order (see kv-catalog.ts). That serialises every write of the bucket, one round trip each, with
 * retries whenever two processes write at once: correct, but slow, so the process logs it (`bucketWide`).
 */
export class KvBucket {
  readonly #kv: KV;
  readonly #bucket: string;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #stops: (() => void)[] = [];
  /** Per watched prefix, the revision of the last fence it delivered, and who waits for one. */
  readonly #fences = new Map<string, { seen: number; waiters: { revision: number; done: () => void }[] }>();
  #closed = false;
  /** Whether writes carry the bucket-wide condition (an old server, replicated). */
  readonly bucketWide: boolean;

  private constructor(
    kv: KV,
    bucket: string,
    jets: { js: JetStreamClient; jsm: JetStreamManager },
    wide: boolean,
  ) {
    this.#kv = kv;
    this.#bucket = bucket;
    this.#js = jets.js;
    this.#jsm = jets.jsm;
    this.bucketWide = wide;
  }

  /** Opens the bucket on `nc` (made when missing; the connection stays the caller's). */
  static async open(nc: NatsConnection, options: KvBucketOptions): Promise<KvBucket> {
    const replicas = options.replicas ?? 1;
    const kv = await new Kvm(nc).create(options.bucket, { replicas, history: 1 });
    const jsm = await jetstreamManager(nc);
    // The bucket may exist already with other replicas: what counts is what its stream has.
    const actual = (await jsm.streams.info(`KV_${options.bucket}`)).config.num_replicas;
    const condition = options.condition ?? 'auto';
    const wide =
      condition === 'auto' ? !perRecordConditionHolds(nc.info?.version, actual) : condition === 'bucket';
    return new KvBucket(kv, options.bucket, { js: jetstream(nc), jsm }, wide);
  }

  /**
   * The record, or undefined when there is none (never written, or deleted). Read from any replica: in a
   * cluster it may be a little behind, which costs a write from it a lost condition and a retry, no more.
   */
  async get<T>(key: string): Promise<KvEntry<T> | undefined> {
    const e = await this.#kv.get(key);
    if (!e || e.operation !== 'PUT') return undefined;
    return { value: e.json<T>(), revision: e.revision };
  }

  /** Writes a record that must not exist yet; its revision. KvConflict when it exists. */
  async create(key: string, value: unknown): Promise<number> {
    const data = JSON.stringify(value);
    if (this.bucketWide) return this.#conditional(key, undefined, data);
    try {
      return await this.#kv.create(key, data);
    } catch (err) {
      if (isWrongLastSequence(err)) throw new KvConflict(key);
      throw err;
    }
  }

  /** Writes a record if it is still at `revision`; its new revision. KvConflict when it is not. */
  async update(key: string, value: unknown, revision: number): Promise<number> {
    const data = JSON.stringify(value);
    if (this.bucketWide) return this.#conditional(key, revision, data);
    try {
      return await this.#kv.update(key, data, revision);
    } catch (err) {
      if (isWrongLastSequence(err)) throw new KvConflict(key);
      throw err;
    }
  }

  /** Deletes a record whatever its revision (only for records nobody can reach). */
  async delete(key: string): Promise<void> {
    await this.#kv.delete(key);
  }

  /**
   * The bucket-wide write: reads the bucket's last sequence, then the record; publishes only if the record
   * is as expected (`undefined`: absent) and nothing at all was written since. A write of another record
   * meanwhile makes it read both again; a change of this record is a conflict.
   */
  async #conditional(key: string, expected: number | undefined, data: string): Promise<number> {
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const stream = `KV_${this.#bucket}`;
      const subject = `$KV.${this.#bucket}.${key}`;
      const last = (await this.#jsm.streams.info(stream)).state.last_seq;
      // From the stream's leader: a replica's direct get may not have the newest write yet.
      const entry = await this.#jsm.streams.getMessage(stream, { last_by_subj: subject });
      const live = entry !== null && (entry.header?.get(KV_OPERATION) ?? '') === '';
      if (expected === undefined ? live : !live || entry.seq !== expected) throw new KvConflict(key);
      try {
        const ack = await this.#js.publish(subject, data, {
          expect: { lastSequence: last, lastSubjectSequence: entry?.seq ?? 0 },
        });
        return ack.seq;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
    }
    throw new KvConflict(key);
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
      const watcher = await this.#kv.watch({ key: `${prefix}.>`, include: KvWatchInclude.UpdatesOnly });
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
        const revision = await this.#kv.put(`${prefix}.${FENCE}`, '{}');
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
