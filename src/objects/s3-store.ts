import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import {
  checkObjectKey,
  checkObjectPrefix,
  guardedStream,
  ObjectStoreError,
  type ByteRange,
  type ChunkSource,
  type ObjectInfo,
  type ObjectStore,
} from '../core/object-store.ts';
import { s3Error } from './s3-errors.ts';
import { SourceError, uploadStream } from './s3-upload.ts';

export interface S3StoreOptions {
  /** The bucket; it must exist (Weir does not create buckets, whose policies are the operator's). */
  readonly bucket: string;
  /** Endpoint URL of an S3-compatible service. @default undefined (AWS's endpoint for the region) */
  readonly endpoint?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** Access key id and secret; both or neither. @default undefined (the AWS SDK's credential chain) */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** `endpoint/bucket` addressing instead of `bucket.endpoint`. @default false */
  readonly forcePathStyle?: boolean;
  /** Longest wait for a connection to open. @default 5000 */
  readonly connectTimeoutMs?: number;
  /**
   * Longest a request's connection may stay silent: waiting for an answer, or between the chunks of a streamed
   * download or upload. A whole request has no limit, since a large part on a slow link takes its time.
   * @default 30000
   */
  readonly idleTimeoutMs?: number;
  /** Tries of a request that failed in a way a retry may fix (the SDK's own backoff in between). @default 3 */
  readonly maxAttempts?: number;
  /**
   * Bytes of one part of a streamed upload; a source shorter than this is sent as one PUT. S3 allows 5 MiB to
   * 5 GiB and 10,000 parts, so the default stores objects up to ~78 GiB. @default 8388608 (8 MiB)
   */
  readonly partSizeBytes?: number;
  /**
   * Parts of a streamed upload sent at once. A streamed upload holds about (this + 2) × `partSizeBytes` and
   * one chunk of its source: the parts being sent, the one being filled, and the last one sent, which the
   * HTTP client keeps until its connection is used again (s3-upload.ts). @default 2
   */
  readonly uploadQueueSize?: number;
}

/** S3's smallest part but the last: a smaller `partSizeBytes` would fail on the second part. */
const MIN_PART_BYTES = 5 * 1024 * 1024;

/**
 * Objects in an S3 bucket (the scaled-out store), through `@aws-sdk/client-s3`. A PUT replaces an object whole
 * and atomically, and a multipart upload becomes visible only when completed, so the port's promise holds
 * without more work here; a failed streamed upload is aborted so its parts do not linger (and cost).
 */
export class S3ObjectStore implements ObjectStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly partSize: number;
  private readonly queueSize: number;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.partSize = options.partSizeBytes ?? 8 * 1024 * 1024;
    this.queueSize = options.uploadQueueSize ?? 2;
    if (this.partSize < MIN_PART_BYTES) throw new Error(`partSizeBytes must be at least ${MIN_PART_BYTES}`);
    if (this.queueSize < 1) throw new Error('uploadQueueSize must be at least 1');
    this.location = `s3 bucket ${this.bucket}${options.endpoint ? ` at ${options.endpoint}` : ''}`;
    this.client = new S3Client({
      region: options.region ?? 'us-east-1',
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
      forcePathStyle: options.forcePathStyle ?? false,
      maxAttempts: options.maxAttempts ?? 3,
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs ?? 5000,
        // The handler's socketTimeout is the idle one; its requestTimeout would bound whole requests.
        socketTimeout: options.idleTimeoutMs ?? 30_000,
      },
      // Checksums only when an operation needs one: S3-compatible services vary in the ones they take.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    checkObjectKey(key);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body }));
    } catch (err) {
      throw s3Error(err, this.bucket, key, 'write');
    }
  }

  async putStream(key: string, chunks: ChunkSource): Promise<{ size: number }> {
    checkObjectKey(key);
    try {
      const size = await uploadStream(this.client, this.bucket, key, chunks, {
        partSize: this.partSize,
        queueSize: this.queueSize,
      });
      return { size };
    } catch (err) {
      // The caller's source failed: its own error goes back, not one of the store's.
      if (err instanceof SourceError) throw err.error;
      throw s3Error(err, this.bucket, key, 'write');
    }
  }

  async get(key: string, range?: ByteRange): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.getStream(key, range)) chunks.push(chunk as Buffer);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }

  async getStream(key: string, range?: ByteRange): Promise<Readable> {
    checkObjectKey(key);
    const start = Math.max(range?.start ?? 0, 0);
    const end = range?.end;
    if (end !== undefined && end <= start) {
      // HTTP cannot ask for no bytes; the object must still exist for the answer to be empty.
      if (!(await this.head(key))) throw new ObjectStoreError('not_found', `no object ${key}`, { key });
      return guardedStream([], (err) => s3Error(err, this.bucket, key, 'read'));
    }
    const wanted =
      start > 0 || end !== undefined ? `bytes=${start}-${end === undefined ? '' : end - 1}` : undefined;
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, ...(wanted ? { Range: wanted } : {}) }),
      );
      if (!(out.Body instanceof Readable)) throw new Error('the S3 client gave no Node.js stream');
      return guardedStream(out.Body, (err) => s3Error(err, this.bucket, key, 'read'));
    } catch (err) {
      // 416: the range starts past the end; the object exists, and has no bytes there.
      if ((err as { name?: unknown }).name === 'InvalidRange')
        return guardedStream([], (e) => s3Error(e, this.bucket, key, 'read'));
      throw s3Error(err, this.bucket, key, 'read');
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { key, size: out.ContentLength ?? 0, modifiedAt: out.LastModified ?? new Date(0) };
    } catch (err) {
      const converted = s3Error(err, this.bucket, key, 'stat');
      if (converted.kind === 'not_found') return undefined;
      throw converted;
    }
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    try {
      // S3 answers 204 for a missing key too, as the port wants.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (err) {
      const converted = s3Error(err, this.bucket, key, 'delete');
      if (converted.kind !== 'not_found') throw converted;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    checkObjectPrefix(prefix);
    const pages = paginateListObjectsV2({ client: this.client }, { Bucket: this.bucket, Prefix: prefix });
    try {
      for await (const page of pages) {
        for (const o of page.Contents ?? []) {
          if (o.Key === undefined) continue;
          yield { key: o.Key, size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) };
        }
      }
    } catch (err) {
      throw s3Error(err, this.bucket, undefined, 'list');
    }
  }

  close(): Promise<void> {
    this.client.destroy();
    return Promise.resolve();
  }
}
