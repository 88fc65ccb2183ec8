/**
 * The NATS KV bucket ingest processes share (`weir_ingest`): the live lane's partition count, recorded once,
 * and the members' heartbeats and the partitions' leases (partition-leases.ts). A lease is taken on the whole
 * bucket's state as the taker's watch saw it, so its writes are conditional on the bucket's last sequence.
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { ConfigError } from '../../config/config.ts';
import { CasBucket, KvConflict } from '../../kv/cas-bucket.ts';

export const INGEST_BUCKET = 'weir_ingest';
/** The key of the partition count. */
const PARTITIONS = 'partitions';
/** Conflicts in a row after which recording the count gives up (each one means another write landed). */
const MAX_ATTEMPTS = 100;
const WRITE_TIMEOUT_MS = 5000;

/** The bucket, opened (made if need be) on a connection that stays the caller's. */
export class IngestBucket {
  readonly #cas: CasBucket;

  private constructor(cas: CasBucket) {
    this.#cas = cas;
  }

  static async open(nc: NatsConnection, replicas: number): Promise<IngestBucket> {
    // Made with `replicas` if it does not exist; an existing bucket is left as it is.
    return new IngestBucket(await CasBucket.open(nc, { bucket: INGEST_BUCKET, replicas }));
  }

  get kv(): KV {
    return this.#cas.kv;
  }

  /** The bucket's last sequence now. */
  lastSequence(): Promise<number> {
    return this.#cas.lastSequence();
  }

  /**
   * Writes `value` (undefined: a delete marker) to `key` if the bucket's last sequence is still `expected`;
   * resolves with the write's sequence, or undefined when something else was written first.
   */
  async writeIf(key: string, value: unknown, expected: number): Promise<number | undefined> {
    try {
      return await this.#cas.setIfBucketAt(key, value, expected);
    } catch (err) {
      if (err instanceof KvConflict) return undefined;
      throw err;
    }
  }

  /**
   * Writes `value` (undefined: a delete marker) to `key` whatever else was written; its sequence. Gives up
   * after `timeoutMs` (a heartbeat late is no heartbeat).
   */
  write(key: string, value: unknown, timeoutMs = WRITE_TIMEOUT_MS): Promise<number> {
    return this.#cas.write(key, value, timeoutMs);
  }

  /**
   * The live lane's partition count every capture and ingest must use: the one recorded, or `configured`,
   * recorded now, when none is. A process configured with another count is refused: capture would publish a
   * person's events to another subject than before, and ingest would lease partitions nobody publishes to, so
   * the order of a person's events would no longer hold.
   */
  async agreedPartitions(configured: number): Promise<number> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const entry = await this.kv.get(PARTITIONS);
      const recorded = entry?.operation === 'PUT' ? Number(entry.json<number>()) : undefined;
      if (recorded !== undefined) {
        if (recorded === configured) return recorded;
        throw new ConfigError(
          `WEIR_BUS_PARTITIONS is ${configured} here, but the bus was set up with ${recorded} partitions ` +
            `(recorded in the NATS KV bucket '${INGEST_BUCKET}', key '${PARTITIONS}'): give every capture and ` +
            `ingest WEIR_BUS_PARTITIONS=${recorded}, or change the count as docs/scaling.md says`,
        );
      }
      try {
        await this.#cas.create(PARTITIONS, configured);
        return configured;
      } catch (err) {
        if (!(err instanceof KvConflict)) throw err;
      }
    }
    throw new Error(`could not record the partition count in '${INGEST_BUCKET}': the bucket kept changing`);
  }
}
