import type { NatsConnection } from '@nats-io/transport-node';
import type { Metrics } from '../../core/metrics.ts';
import type { BatchWriter } from '../batch-writer.ts';
import type { Groups, Persons } from '../persons/persons.ts';
import { KvBucket } from './kv-bucket.ts';
import { SharedGroups } from './shared-groups.ts';
import { SharedPersons } from './shared-persons.ts';
import { GROUP_PREFIX, PERSON_PREFIX, TYPES_PREFIX } from './state-keys.ts';

/** The bucket of shared person and group state (`weir ingest` on a store with several writers). */
export const PERSONS_BUCKET = 'weir_persons';

export interface SharedStateOptions {
  /** @default 'weir_persons' */
  readonly bucket?: string;
  /** JetStream replicas of the bucket when it is made (as the other buckets: connection.ts `replicasFor`). */
  readonly replicas?: number;
}

/** What ingest needs to make its person and group state shared (IngestService's `sharedState`). */
export interface SharedStateSource {
  persons(config: { cacheSize: number }, deps: { writer: BatchWriter; metrics?: Metrics }): Persons;
  groups(config: { cacheSize: number }, deps: { writer: BatchWriter; metrics?: Metrics }): Groups;
}

/**
 * Person and group state shared by every ingest process of a store that has several writers (issue 28): the
 * NATS KV bucket, and a watch of its person, group and group-type records that keeps each process's caches
 * current, so a merge made by another process is seen within milliseconds rather than on the next lost
 * write. Links (`d.`) are not watched: they never change once made.
 */
export class SharedState implements SharedStateSource {
  readonly #bucket: KvBucket;
  readonly #persons: SharedPersons[] = [];
  readonly #groups: SharedGroups[] = [];

  private constructor(bucket: KvBucket) {
    this.#bucket = bucket;
  }

  /** Opens (making it if need be) the bucket on `nc`, which stays the caller's to close, and starts the watches. */
  static async open(nc: NatsConnection, options: SharedStateOptions = {}): Promise<SharedState> {
    const bucket = await KvBucket.open(nc, {
      bucket: options.bucket ?? PERSONS_BUCKET,
      replicas: options.replicas,
    });
    const state = new SharedState(bucket);
    try {
      await state.#watch();
    } catch (err) {
      bucket.close();
      throw err;
    }
    return state;
  }

  /**
   * Whether every write is conditional on the whole bucket (an old nats-server with a replicated bucket:
   * see KvBucket): correct, but each write then waits for all others. The role logs it.
   */
  get bucketWide(): boolean {
    return this.#bucket.bucketWide;
  }

  persons(config: { cacheSize: number }, deps: { writer: BatchWriter; metrics?: Metrics }): SharedPersons {
    const persons = new SharedPersons(config, { ...deps, bucket: this.#bucket });
    this.#persons.push(persons);
    return persons;
  }

  groups(config: { cacheSize: number }, deps: { writer: BatchWriter; metrics?: Metrics }): SharedGroups {
    const groups = new SharedGroups(config, { ...deps, bucket: this.#bucket });
    this.#groups.push(groups);
    return groups;
  }

  /** Resolves once the caches have seen every change any process made before the call (KvBucket.fence). */
  fence(): Promise<void> {
    return this.#bucket.fence();
  }

  /** Stops the watches; the connection is the caller's. */
  close(): void {
    this.#bucket.close();
  }

  async #watch(): Promise<void> {
    const reset = (): void => {
      for (const p of this.#persons) p.reset();
      for (const g of this.#groups) g.reset();
    };
    await this.#bucket.watch(
      PERSON_PREFIX,
      (key, value, revision) => {
        for (const p of this.#persons) p.apply(key, value, revision);
      },
      reset,
    );
    await this.#bucket.watch(
      GROUP_PREFIX,
      (key, value, revision) => {
        for (const g of this.#groups) g.applyGroup(key, value, revision);
      },
      reset,
    );
    await this.#bucket.watch(
      TYPES_PREFIX,
      (key, value, revision) => {
        for (const g of this.#groups) g.applyTypes(key, value, revision);
      },
      reset,
    );
  }
}
