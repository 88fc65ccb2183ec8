/**
 * Compare-and-set over a NATS JetStream KV bucket, for records several processes change: the catalog, the
 * ingest processes' partition leases, the persons they share.
 *
 * A write is conditional on the record's revision as read: the stream sequence of its last write, a delete
 * marker's included (0: never written). nats-server before 2.9.21 does not hold that per-record condition
 * against concurrent writes to a replicated stream (nats-io/nats-server#4320: it was checked before the Raft
 * proposal, not in it), so there the write is made conditional on the bucket's last sequence as well, which
 * the server does check in order. That serialises every write of the bucket, with a retry whenever another
 * write lands in between: correct but slow, so it is taken only where the per-record condition does not hold.
 */
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';

/** Thrown when a conditional write lost: the record (or the bucket) is no longer as it was read. */
export class KvConflict extends Error {
  override name = 'KvConflict';
  constructor(readonly key: string) {
    super(`the record ${key} changed since it was read`);
  }
}

/** Whether a publish was refused because its expected sequence no longer held: another write landed first. */
export function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * Orders two nats-server versions (`2.10.9`, `v2.11.0`, `2.9.21-RC.1`) by major, minor and patch; a part that
 * is missing or not a number counts as 0, so an unknown version orders before every real one.
 */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string): number[] =>
    v
      .replace(/^v/, '')
      .split(/[.-]/)
      .map((p) => Number.parseInt(p, 10) || 0);
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

/** The first nats-server that holds a per-record condition against concurrent writes to a replicated stream. */
export const FIXED_SERVER = '2.9.21';

/** Whether the per-record condition holds on a server of `version` (undefined: unknown) with `replicas`. */
export function perRecordConditionHolds(version: string | undefined, replicas: number): boolean {
  if (replicas <= 1) return true; // one replica: no Raft proposal to race
  return version !== undefined && compareVersions(version, FIXED_SERVER) >= 0;
}

/**
 * Which condition writes carry: `record` the record's revision alone, `bucket` the bucket's last sequence as
 * well, `auto` the bucket-wide one only where the per-record one does not hold.
 */
export type KvCondition = 'auto' | 'record' | 'bucket';

/** Whether writes take the bucket-wide condition. */
export function bucketWideFor(
  condition: KvCondition,
  version: string | undefined,
  replicas: number,
): boolean {
  return condition === 'auto' ? !perRecordConditionHolds(version, replicas) : condition === 'bucket';
}

export interface CasBucketOptions {
  readonly bucket: string;
  /** JetStream replicas of the bucket's stream when it is made. @default 1 */
  readonly replicas?: number;
  /** Whether an existing bucket's stream is changed to `replicas`; otherwise it keeps what it has. @default false */
  readonly resize?: boolean;
  /** @default 'auto' */
  readonly condition?: KvCondition;
}

/** The header that marks a KV message a delete or purge marker. */
const KV_OPERATION = 'KV-Operation';
/** Rounds of the bucket-wide condition before a write gives up (each lost round means another write landed). */
const MAX_ROUNDS = 200;

/**
 * A KV bucket written by compare-and-set. Values are JSON; a value of `undefined` writes a delete marker.
 * Reads and watches are the owner's, on `kv`.
 */
export class CasBucket {
  readonly kv: KV;
  readonly name: string;
  /**
   * Whether writes carry the bucket-wide condition (a server before 2.9.21, replicated): owners may log it.
   * Chosen at open from the replicas the bucket has then: on such a server, a bucket raised from one replica
   * to more needs every process that has it open to open it again.
   */
  readonly bucketWide: boolean;
  readonly #stream: string;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;

  private constructor(
    kv: KV,
    name: string,
    jets: { js: JetStreamClient; jsm: JetStreamManager },
    bucketWide: boolean,
  ) {
    this.kv = kv;
    this.name = name;
    this.bucketWide = bucketWide;
    this.#stream = `KV_${name}`;
    this.#js = jets.js;
    this.#jsm = jets.jsm;
  }

  /** Opens the bucket on `nc` (made when missing; the connection stays the caller's). */
  static async open(nc: NatsConnection, options: CasBucketOptions): Promise<CasBucket> {
    const replicas = options.replicas ?? 1;
    const kv = await new Kvm(nc).create(options.bucket, { replicas, history: 1 });
    const jsm = await jetstreamManager(nc);
    const stream = `KV_${options.bucket}`;
    // The bucket may exist already with other replicas: what counts is what its stream has.
    const { config } = await jsm.streams.info(stream);
    let actual = config.num_replicas;
    if (options.resize && actual !== replicas) {
      await jsm.streams.update(stream, { ...config, num_replicas: replicas });
      actual = replicas;
    }
    const wide = bucketWideFor(options.condition ?? 'auto', nc.info?.version, actual);
    return new CasBucket(kv, options.bucket, { js: jetstream(nc), jsm }, wide);
  }

  /** The bucket's last sequence now (from the stream's leader). */
  async lastSequence(): Promise<number> {
    return (await this.#jsm.streams.info(this.#stream)).state.last_seq;
  }

  /**
   * Writes `value` if the record is still at `revision` (0: never written; a delete marker's sequence: deleted
   * then); its new revision. KvConflict when it is not.
   */
  async set(key: string, value: unknown, revision: number): Promise<number> {
    if (this.bucketWide) return this.#bucketWide(key, value, revision);
    try {
      return (await this.#publish(key, value, { lastSubjectSequence: revision })).seq;
    } catch (err) {
      if (isWrongLastSequence(err)) throw new KvConflict(key);
      throw err;
    }
  }

  /** Writes a record that must not exist (never written, or deleted); its revision. KvConflict when it does. */
  async create(key: string, value: unknown): Promise<number> {
    if (this.bucketWide) return this.#bucketWide(key, value, 'absent');
    try {
      return await this.set(key, value, 0);
    } catch (err) {
      if (!(err instanceof KvConflict)) throw err;
    }
    // Written before: free again only if its last write is a delete marker, which is then the condition.
    const e = await this.kv.get(key);
    if (!e || e.operation === 'PUT') throw new KvConflict(key);
    return this.set(key, value, e.revision);
  }

  /**
   * Writes `value` if nothing at all was written to the bucket after `lastSequence`, for a decision made from
   * the whole bucket as a watch delivered it; its sequence. KvConflict when something was.
   */
  async setIfBucketAt(key: string, value: unknown, lastSequence: number): Promise<number> {
    try {
      return (await this.#publish(key, value, { lastSequence })).seq;
    } catch (err) {
      if (isWrongLastSequence(err)) throw new KvConflict(key);
      throw err;
    }
  }

  /** Writes `value` whatever else was written; its sequence. Gives up after `timeoutMs` (JetStream's default). */
  async write(key: string, value: unknown, timeoutMs?: number): Promise<number> {
    return (await this.#publish(key, value, undefined, timeoutMs)).seq;
  }

  /**
   * The bucket-wide write: reads the bucket's last sequence, then the record, both from the stream's leader (a
   * replica's direct get may not have the newest write yet); publishes only if the record is as expected and
   * nothing at all was written since. A write of another record meanwhile makes it read both again; a change
   * of this record is a conflict.
   */
  async #bucketWide(key: string, value: unknown, expected: number | 'absent'): Promise<number> {
    const subject = `$KV.${this.name}.${key}`;
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const last = await this.lastSequence();
      const entry = await this.#jsm.streams.getMessage(this.#stream, { last_by_subj: subject });
      const current = entry?.seq ?? 0;
      const live = entry !== null && (entry.header?.get(KV_OPERATION) ?? '') === '';
      if (expected === 'absent' ? live : current !== expected) throw new KvConflict(key);
      if (current > last) continue; // written between the two reads: the condition on `last` cannot hold
      try {
        return (await this.#publish(key, value, { lastSequence: last, lastSubjectSequence: current })).seq;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
    }
    throw new KvConflict(key);
  }

  #publish(
    key: string,
    value: unknown,
    expect: { lastSequence?: number; lastSubjectSequence?: number } | undefined,
    timeout?: number,
  ): Promise<PubAck> {
    let headers;
    if (value === undefined) {
      headers = natsHeaders();
      headers.set(KV_OPERATION, 'DEL');
    }
    return this.#js.publish(`$KV.${this.name}.${key}`, value === undefined ? '' : JSON.stringify(value), {
      expect,
      headers,
      timeout,
    });
  }
}
