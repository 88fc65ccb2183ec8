import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { ChunkSource } from '../core/object-store.ts';

export interface UploadOptions {
  /** Bytes of each part but the last. */
  readonly partSize: number;
  /** Parts sent at once. */
  readonly queueSize: number;
}

/** Carries an error thrown by the caller's source, so it goes back as it is rather than as the store's. */
export class SourceError extends Error {
  override name = 'SourceError';
  constructor(readonly error: unknown) {
    super('the source of a streamed upload failed', { cause: error });
  }
}

/**
 * Streams `chunks` to `bucket/key`: one PUT when the source ends within the first part, else a multipart
 * upload, aborted when anything fails so that no parts linger. Chunks are copied into part buffers of exactly
 * `partSize`, so this code holds (queueSize + 1) × partSize and a chunk, whatever the chunks' sizes; the HTTP
 * client keeps the last body each connection sent until it sends the next (one part more). lib-storage's
 * Upload held more: it concatenates chunks and keeps a part's whole backing buffer alive through the
 * remainder. Resolves with the bytes stored.
 */
export async function uploadStream(
  client: S3Client,
  bucket: string,
  key: string,
  chunks: ChunkSource,
  options: UploadOptions,
): Promise<number> {
  const iterator =
    Symbol.asyncIterator in chunks ? chunks[Symbol.asyncIterator]() : chunks[Symbol.iterator]();
  let pending: Uint8Array | undefined; // the rest of a chunk that did not fit in the last part
  let done = false;
  let size = 0;

  /** The next part: full unless the source ended, in which case it is cut to what came. */
  const fill = async (): Promise<Buffer> => {
    const part = Buffer.allocUnsafe(options.partSize);
    let at = 0;
    while (at < part.length) {
      if (!pending) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await iterator.next();
        } catch (err) {
          throw new SourceError(err);
        }
        if (next.done) {
          done = true;
          break;
        }
        pending = next.value;
      }
      const take = Math.min(pending.byteLength, part.length - at);
      part.set(pending.subarray(0, take), at);
      at += take;
      size += take;
      pending = take === pending.byteLength ? undefined : pending.subarray(take);
    }
    return at === part.length ? part : part.subarray(0, at);
  };

  const first = await fill();
  if (done) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: first }));
    return size;
  }
  const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const uploadId = created.UploadId;
  if (uploadId === undefined) throw new Error('CreateMultipartUpload gave no upload id');
  const parts: CompletedPart[] = [];
  const inFlight: Promise<void>[] = [];
  try {
    let part: Buffer | undefined = first;
    for (let n = 1; part && part.length > 0; n++) {
      const body: Buffer = part;
      const sent = client
        .send(
          new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: n, Body: body }),
        )
        .then((out) => void parts.push({ PartNumber: n, ETag: out.ETag }));
      sent.catch(() => undefined); // awaited below; this keeps a failure meanwhile from being "unhandled"
      inFlight.push(sent);
      // Up to queueSize parts travel while the next one fills.
      if (inFlight.length > options.queueSize) await inFlight.shift();
      part = done ? undefined : await fill();
    }
    await Promise.all(inFlight);
    parts.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
    return size;
  } catch (err) {
    await Promise.allSettled(inFlight);
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
      .catch(() => undefined); // best effort: a bucket lifecycle rule is the backstop for what stays
    await Promise.resolve(iterator.return?.()).catch(() => undefined);
    throw err;
  }
}
