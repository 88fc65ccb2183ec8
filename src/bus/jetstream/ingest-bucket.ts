/**
 * The NATS KV bucket ingest processes share (`weir_ingest`): the live lane's partition count, recorded once,
 * and the members' heartbeats and the partitions' leases (partition-leases.ts). Writes that must not be lost
 * to a concurrent one are conditional on the bucket's last sequence, not only on their key's: nats-server
 * before 2.9.21 does not hold the per-key condition against concurrent writes in a cluster
 * (nats-io/nats-server#4320), as the KV catalog found (kv-catalog.ts).
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { isWrongLastSequence } from './kv-conditions.ts';
import { Kvm, type KV } from '@nats-io/kv';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { ConfigError } from '../../config/config.ts';

export const INGEST_BUCKET = 'weir_ingest';
/** The key of the partition count. */
const PARTITIONS = 'partitions';
/** Conflicts in a row after which recording the count gives up (each one means another write landed). */
const MAX_ATTEMPTS = 100;
const WRITE_TIMEOUT_MS = 5000;

/** The bucket, opened (made if need be) on a connection that stays the caller's. */
export class IngestBucket {
  readonly kv: KV;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;

  private constructor(kv: KV, js: JetStreamClient, jsm: JetStreamManager) {
    this.kv = kv;
    this.#js = js;
    this.#jsm = jsm;
  }

  static async open(nc: NatsConnection, replicas: number): Promise<IngestBucket> {
    // Made with `replicas` if it does not exist; an existing bucket is left as it is.
    const kv = await new Kvm(nc).create(INGEST_BUCKET, { replicas, history: 1 });
    return new IngestBucket(kv, jetstream(nc), await jetstreamManager(nc));
  }

  /** The bucket's last sequence now. */
  async lastSequence(): Promise<number> {
    return (await this.#jsm.streams.info(`KV_${INGEST_BUCKET}`)).state.last_seq;
  }

  /**
   * Writes `value` (undefined: a delete marker) to `key` if the bucket's last sequence is still `expected`;
   * resolves with the write's sequence, or undefined when something else was written first.
   */
  async writeIf(key: string, value: unknown, expected: number): Promise<number | undefined> {
    try {
      return await this.#write(key, value, expected);
    } catch (err) {
      if (isWrongLastSequence(err)) return undefined;
      throw err;
    }
  }

  /**
   * Writes `value` (undefined: a delete marker) to `key` whatever else was written; its sequence. Gives up
   * after `timeoutMs` (a heartbeat late is no heartbeat).
   */
  write(key: string, value: unknown, timeoutMs = WRITE_TIMEOUT_MS): Promise<number> {
    return this.#write(key, value, undefined, timeoutMs);
  }

  async #write(
    key: string,
    value: unknown,
    expected: number | undefined,
    timeoutMs = WRITE_TIMEOUT_MS,
  ): Promise<number> {
    let headers;
    if (value === undefined) {
      headers = natsHeaders();
      headers.set('KV-Operation', 'DEL');
    }
    const ack = await this.#js.publish(
      `$KV.${INGEST_BUCKET}.${key}`,
      value === undefined ? '' : JSON.stringify(value),
      {
        ...(expected !== undefined ? { expect: { lastSequence: expected } } : {}),
        headers,
        timeout: timeoutMs,
      },
    );
    return ack.seq;
  }

  /**
   * The live lane's partition count every capture and ingest must use: the one recorded, or `configured`,
   * recorded now, when none is. A process configured with another count is refused: capture would publish a
   * person's events to another subject than before, and ingest would lease partitions nobody publishes to, so
   * the order of a person's events would no longer hold.
   */
  async agreedPartitions(configured: number): Promise<number> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const last = await this.lastSequence();
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
      if ((await this.writeIf(PARTITIONS, configured, last)) !== undefined) return configured;
    }
    throw new Error(`could not record the partition count in '${INGEST_BUCKET}': the bucket kept changing`);
  }
}
