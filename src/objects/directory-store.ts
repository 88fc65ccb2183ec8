import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import {
  checkObjectKey,
  checkObjectPrefix,
  guardedStream,
  ObjectStoreError,
  RESERVED_SEGMENT_PREFIX,
  type ByteRange,
  type ChunkSource,
  type ObjectInfo,
  type ObjectStore,
} from '../core/object-store.ts';

export interface DirectoryStoreOptions {
  /** The directory holding the objects, one file per key; made when missing. */
  readonly root: string;
  /**
   * fsync each object, and the directories that name it, before a put or delete resolves: an acknowledged
   * write then survives a power loss, not only a crash of Weir. @default true
   */
  readonly fsync?: boolean;
}

/** Errors of the file system that say "not now" rather than "never": a full disk, too many open files. */
const TRANSIENT = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'ENOMEM']);
/** A key under a name that is a file, or a name that is a folder: there is no such object. */
const MISSING = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);
/** How often a put makes its folder again when a concurrent delete removed it as empty meanwhile. */
const MKDIR_ATTEMPTS = 5;

/**
 * Objects as files under a root directory (the embedded default, `<data dir>/objects/`). A write goes to a
 * temporary file beside its target, is fsynced and renamed over it: rename is atomic, so a reader (or a
 * restart after a crash) finds the old file or the new one under the key, never a torn one. Temporary files
 * are named `.weir-tmp-…` (a prefix keys may not use) and left out of listings; a crash may leave one behind.
 */
export class DirectoryObjectStore implements ObjectStore {
  readonly location: string;
  private readonly root: string;
  private readonly fsync: boolean;

  constructor(options: DirectoryStoreOptions) {
    this.root = resolve(options.root);
    this.fsync = options.fsync ?? true;
    this.location = `directory ${this.root}`;
  }

  put(key: string, body: Uint8Array): Promise<void> {
    return this.putStream(key, [body]).then(() => undefined);
  }

  async putStream(key: string, chunks: ChunkSource): Promise<{ size: number }> {
    const path = this.pathOf(key);
    const dir = dirname(path);
    const temp = join(dir, `${RESERVED_SEGMENT_PREFIX}${randomBytes(8).toString('hex')}`);
    const file = await this.createTemp(dir, temp, key);
    let size = 0;
    let sourceFailed = false;
    const iterator =
      Symbol.asyncIterator in chunks ? chunks[Symbol.asyncIterator]() : chunks[Symbol.iterator]();
    try {
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await iterator.next();
        } catch (err) {
          // The caller's source failed: its own error goes back to the caller, not one of the store's.
          sourceFailed = true;
          throw err;
        }
        if (next.done) break;
        await writeAll(file, next.value);
        size += next.value.byteLength;
      }
      if (this.fsync) await file.sync();
      await file.close();
      await rename(temp, path);
      if (this.fsync) await syncDir(dir);
      return { size };
    } catch (err) {
      await file.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      if (sourceFailed) throw err;
      // The store failed mid-way: let the source release what it holds (a file, a socket).
      await Promise.resolve(iterator.return?.()).catch(() => undefined);
      throw fsError(err, key, 'write');
    }
  }

  async get(key: string, range?: ByteRange): Promise<Buffer> {
    const file = await this.openForRead(key);
    try {
      const { start, end } = clamp(range, (await file.stat()).size);
      const out = Buffer.allocUnsafe(end - start);
      let at = 0;
      while (at < out.length) {
        const { bytesRead } = await file.read(out, at, out.length - at, start + at);
        if (bytesRead === 0) break; // the file was cut short meanwhile: give what there is
        at += bytesRead;
      }
      return at === out.length ? out : out.subarray(0, at);
    } catch (err) {
      throw fsError(err, key, 'read');
    } finally {
      await file.close().catch(() => undefined);
    }
  }

  async getStream(key: string, range?: ByteRange): Promise<Readable> {
    const file = await this.openForRead(key);
    let bounds: { start: number; end: number };
    try {
      bounds = clamp(range, (await file.stat()).size);
    } catch (err) {
      await file.close().catch(() => undefined);
      throw fsError(err, key, 'read');
    }
    if (bounds.end === bounds.start) {
      await file.close();
      return guardedStream([], (err) => fsError(err, key, 'read'));
    }
    // The stream owns the handle from here and closes it at its end or when destroyed.
    const source = file.createReadStream({ start: bounds.start, end: bounds.end - 1 });
    return guardedStream(source, (err) => fsError(err, key, 'read'));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const path = this.pathOf(key);
    try {
      const s = await stat(path);
      return s.isFile() ? { key, size: s.size, modifiedAt: s.mtime } : undefined;
    } catch (err) {
      if (MISSING.has(codeOf(err))) return undefined;
      throw fsError(err, key, 'stat');
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (err) {
      if (MISSING.has(codeOf(err))) return;
      throw fsError(err, key, 'delete');
    }
    try {
      if (this.fsync) await syncDir(dirname(path));
    } catch (err) {
      throw fsError(err, key, 'delete');
    }
    await this.pruneEmpty(dirname(path));
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    checkObjectPrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const folder = prefix.slice(0, slash + 1);
    const found: ObjectInfo[] = [];
    await this.collect(join(this.root, folder), folder, prefix, found);
    // S3 lists in the byte order of the keys' UTF-8; sorting the same way keeps the adapters alike.
    found.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
    yield* found;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** The file of a key, once the key is known not to lead outside the root. */
  private pathOf(key: string): string {
    checkObjectKey(key);
    const path = join(this.root, ...key.split('/'));
    // checkObjectKey already refuses `..` and absolute keys; this is the guard should it ever let one through.
    if (!path.startsWith(this.root + sep))
      throw new ObjectStoreError('invalid_key', `key ${key} leaves the root`, { key });
    return path;
  }

  private async openForRead(key: string): Promise<FileHandle> {
    const path = this.pathOf(key);
    try {
      return await open(path, 'r');
    } catch (err) {
      throw fsError(err, key, 'read');
    }
  }

  private async createTemp(dir: string, temp: string, key: string): Promise<FileHandle> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.makeDir(dir);
        return await open(temp, 'wx');
      } catch (err) {
        // ENOENT: a delete pruned the folder between mkdir and open; make it again.
        if (codeOf(err) === 'ENOENT' && attempt < MKDIR_ATTEMPTS) continue;
        throw fsError(err, key, 'write');
      }
    }
  }

  /** mkdir -p, then fsync the parent of each folder it made, so that the folders survive a power loss too. */
  private async makeDir(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true });
    if (first === undefined || !this.fsync) return;
    for (let d = dir; ; d = dirname(d)) {
      await syncDir(dirname(d));
      if (d === first || d.length <= this.root.length) break;
    }
  }

  /** Removes the folders a delete left empty, up to the root, so old versions do not leave folders behind. */
  private async pruneEmpty(dir: string): Promise<void> {
    for (let d = dir; d.startsWith(this.root + sep); d = dirname(d)) {
      try {
        await rmdir(d);
      } catch {
        return; // not empty (or gone): a put is using it or the next one up is still needed
      }
    }
  }

  private async collect(dir: string, dirKey: string, prefix: string, out: ObjectInfo[]): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (MISSING.has(codeOf(err))) return;
      throw fsError(err, undefined, 'list');
    }
    for (const entry of entries) {
      if (entry.name.startsWith(RESERVED_SEGMENT_PREFIX)) continue;
      const key = dirKey + entry.name;
      if (entry.isDirectory()) {
        // The walk starts at the prefix's folder: below it, only folders whose keys can match.
        if ((key + '/').startsWith(prefix)) await this.collect(join(dir, entry.name), key + '/', prefix, out);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        const info = await this.head(key).catch(() => undefined);
        if (info) out.push(info); // gone since the folder was read, or not a valid key: leave it out
      }
    }
  }
}

async function writeAll(file: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let at = 0; at < chunk.byteLength;) {
    const { bytesWritten } = await file.write(chunk, at, chunk.byteLength - at);
    at += bytesWritten;
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function clamp(range: ByteRange | undefined, size: number): { start: number; end: number } {
  const start = Math.min(Math.max(range?.start ?? 0, 0), size);
  const end = Math.min(Math.max(range?.end ?? size, start), size);
  return { start, end };
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

function fsError(err: unknown, key: string | undefined, action: string): ObjectStoreError {
  if (err instanceof ObjectStoreError) return err;
  const code = codeOf(err);
  const about = key === undefined ? '' : ` ${key}`;
  const why = err instanceof Error ? err.message : String(err);
  if (MISSING.has(code) && action !== 'write')
    return new ObjectStoreError('not_found', `no object${about}`, { key, cause: err });
  const kind = TRANSIENT.has(code) ? 'unavailable' : 'failed';
  return new ObjectStoreError(kind, `cannot ${action} object${about}: ${why}`, { key, cause: err });
}
