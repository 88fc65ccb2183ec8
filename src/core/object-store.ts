import { Readable } from 'node:stream';

/**
 * The ObjectStore port: where materializations (Parquet objects and their manifests) live. Its adapters are a
 * directory in the data directory (embedded) and an S3-compatible bucket (scaled out), in src/objects/; nothing
 * above this port knows which one runs, and no adapter's library types cross it.
 *
 * What a writer can build on:
 * - `put` and `putStream` replace an object whole: a reader sees the previous bytes or the new ones, never a
 *   mix or a prefix, and a write that fails or is interrupted (even by a crash) leaves the previous object in
 *   place. So "write the data object under a new key, then `put` the small manifest naming it" publishes
 *   atomically, and the old data object can be deleted once the manifest has moved.
 * - `put` has resolved only once the object is durable (fsynced, or acknowledged by the bucket).
 * - `delete` of a missing object succeeds, so a clean-up may be retried.
 */
export interface ObjectStore {
  /** Where the objects are, for logs and errors (`directory /data/objects`, `s3 bucket weir at …`). */
  readonly location: string;
  /** Stores `body` under `key`, replacing any object there whole. */
  put(key: string, body: Uint8Array): Promise<void>;
  /**
   * Stores the bytes of `chunks` under `key` as `put` does, without holding them all in memory: the source is
   * read as the store takes it (a few parts of an S3 multipart upload at a time). If the source
   * throws, nothing is stored, the previous object stays, and the call rejects with the source's own error.
   * Resolves with the bytes stored.
   */
  putStream(key: string, chunks: ChunkSource): Promise<{ size: number }>;
  /** The object's bytes (or `range` of them); rejects `not_found` when there is none. */
  get(key: string, range?: ByteRange): Promise<Buffer>;
  /**
   * The object's bytes (or `range` of them) as a stream. Rejects `not_found` before any byte when there is no
   * object; an error later on is emitted by the stream, already an ObjectStoreError.
   */
  getStream(key: string, range?: ByteRange): Promise<Readable>;
  /** The object's size and time of writing, or undefined when there is none. */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** The objects whose keys start with `prefix` (a plain string prefix, not only a folder), in key order. */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** Releases connections; the store is not used after. */
  close(): Promise<void>;
}

/** Bytes to store, read one chunk at a time (a Node Readable of Buffers is one). */
export type ChunkSource = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export interface ObjectInfo {
  readonly key: string;
  /** Bytes. */
  readonly size: number;
  /** When the object was written, as the store records it (second precision on S3). */
  readonly modifiedAt: Date;
}

/**
 * Bytes `start` (inclusive) to `end` (exclusive) of an object, as a Parquet reader asks for a footer or a
 * column chunk. A range past the end is cut at the end.
 */
export interface ByteRange {
  /** First byte. @default 0 */
  readonly start?: number;
  /** One past the last byte. @default the object's size */
  readonly end?: number;
}

/**
 * - `not_found`: no object under the key.
 * - `unavailable`: the store cannot be reached or is out of resources now (connection refused or timed out,
 *   5xx, a full disk); the same call may succeed later.
 * - `invalid_key`: the key breaks the rules of `checkObjectKey`.
 * - `failed`: anything else (access denied, a missing bucket, a key that collides with a folder); a retry will
 *   not help until someone changes something.
 */
export type ObjectStoreErrorKind = 'not_found' | 'unavailable' | 'invalid_key' | 'failed';

/** The one error of the port: adapters convert what their library throws into it where it is thrown. */
export class ObjectStoreError extends Error {
  override name = 'ObjectStoreError';
  readonly kind: ObjectStoreErrorKind;
  /** The key the call was about, when there was one. */
  readonly key: string | undefined;

  constructor(kind: ObjectStoreErrorKind, message: string, options: { key?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.kind = kind;
    this.key = options.key;
  }

  /** Whether the same call may succeed later without anyone changing anything. */
  get retriable(): boolean {
    return this.kind === 'unavailable';
  }
}

/** The longest key, in UTF-8 bytes: S3's limit, so a key that works on one adapter works on the other. */
export const MAX_KEY_BYTES = 1024;
/** The longest key segment, in UTF-8 bytes: a file name's limit on Linux file systems. */
export const MAX_SEGMENT_BYTES = 255;
/** Segments starting with this are the directory adapter's temporary files, so no key may use it. */
export const RESERVED_SEGMENT_PREFIX = '.weir-tmp-';

/**
 * Refuses a key that is not a plain relative path of `/`-separated segments, so that the directory adapter
 * can never be led outside its root and both adapters accept the same keys: no empty key, no leading or
 * trailing `/`, no empty, `.` or `..` segment, no NUL or other control character, no `\` (a separator on
 * Windows), no segment starting with `.weir-tmp-`, at most 1024 bytes and 255 bytes a segment.
 * A key may not also be the folder of another (`a` and `a/b`): the directory adapter cannot hold both.
 */
export function checkObjectKey(key: string): void {
  const refuse = (why: string): never => {
    throw new ObjectStoreError('invalid_key', `invalid object key ${JSON.stringify(key)}: ${why}`, { key });
  };
  checkKeyText(key, refuse);
  if (key === '') refuse('it is empty');
  if (key.startsWith('/')) refuse('it is absolute');
  for (const segment of key.split('/')) {
    if (segment === '') refuse('it has an empty segment');
    if (segment === '.' || segment === '..') refuse(`it has a '${segment}' segment`);
    if (segment.startsWith(RESERVED_SEGMENT_PREFIX)) refuse(`'${RESERVED_SEGMENT_PREFIX}' is reserved`);
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES)
      refuse(`a segment is over ${MAX_SEGMENT_BYTES} bytes`);
  }
}

/**
 * A listing prefix follows the key rules for its characters and length, and its folder part (up to the last
 * `/`) those for segments; what follows the last `/` only filters names, so any start of a name is fine.
 * `''` lists everything.
 */
export function checkObjectPrefix(prefix: string): void {
  const refuse = (why: string): never => {
    throw new ObjectStoreError('invalid_key', `invalid prefix ${JSON.stringify(prefix)}: ${why}`);
  };
  checkKeyText(prefix, refuse);
  if (prefix.startsWith('/')) refuse('it is absolute');
  for (const segment of prefix.split('/').slice(0, -1)) {
    if (segment === '' || segment === '.' || segment === '..') refuse(`it has a '${segment}' folder`);
  }
}

function checkKeyText(text: string, refuse: (why: string) => never): void {
  if (Buffer.byteLength(text) > MAX_KEY_BYTES) refuse(`it is over ${MAX_KEY_BYTES} bytes`);
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(text)) refuse('it has a NUL or control character');
  if (text.includes('\\')) refuse('it has a backslash');
}

/**
 * A stream of `source`'s bytes whose errors are turned into the port's by `convert` as they happen, so that an
 * adapter's stream never emits its library's error to a reader.
 */
export function guardedStream(source: ChunkSource, convert: (err: unknown) => ObjectStoreError): Readable {
  async function* guarded(): AsyncGenerator<Uint8Array> {
    try {
      yield* source;
    } catch (err) {
      throw err instanceof ObjectStoreError ? err : convert(err);
    }
  }
  // Not object mode: a reader's highWaterMark then bounds what is read ahead in bytes, not in chunks.
  return Readable.from(guarded(), { objectMode: false });
}
