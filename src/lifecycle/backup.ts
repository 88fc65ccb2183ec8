import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { CatalogState, type CatalogSnapshot } from '../catalog/catalog-state.ts';
import { writeAtomically } from '../catalog/file-catalog.ts';
import {
  ObjectStoreError,
  type ChunkSource,
  type ObjectInfo,
  type ObjectStore,
} from '../core/object-store.ts';
import { DirectoryObjectStore } from '../objects/directory-store.ts';
import { openObjectStore, type ObjectStoreConfig } from '../objects/open-object-store.ts';
import { sqlString } from '../store/sql.ts';

/**
 * A backup of the embedded store's data directory (docs/operations.md, "Backup and restore"), in a directory
 * or under an S3 prefix:
 * - `store/`: ClickHouse's BACKUP of every table, taken at one point of the commit log;
 * - `catalog.json`: the catalog as it was at that point;
 * - `objects/…`: the materializations of the data directory's object store (none when they live in S3);
 * - `weir-backup.json`: the manifest, written last, so a backup without one is incomplete and never restored.
 */

export const MANIFEST = 'weir-backup.json';
const FORMAT = 'weir-backup';

/** Where a backup goes or comes from: a directory, or `s3://bucket/prefix`. */
export type BackupLocation =
  | { readonly kind: 'dir'; readonly path: string }
  | { readonly kind: 's3'; readonly bucket: string; readonly prefix: string };

/** How S3 is reached: the same WEIR_S3_* settings the materializations use, the bucket from the URL. */
export type BackupS3Settings = Omit<ObjectStoreConfig, 's3Bucket'>;

export interface BackupManifest {
  readonly format: typeof FORMAT;
  readonly version: 1;
  readonly createdAt: string;
  readonly finishedAt: string;
  /** The commit log's point the tables were copied at (the log of the data directory backed up). */
  readonly log: { readonly id: string; readonly segment: number; readonly offset: number };
  /** Each table's rows at that point, checked again by the restore. */
  readonly tables: Readonly<Record<string, number>>;
  readonly catalog: { readonly projects: number; readonly endpoints: number; readonly deletions: number };
  readonly objects: { readonly count: number; readonly bytes: number };
}

/** What a backup needs of the embedded store: LoggedStore.backup. */
export interface BackupSource {
  backup<T>(
    destination: string,
    at: (point: {
      logId: string;
      position: { segment: number; offset: number };
      rows: Record<string, number>;
    }) => Promise<T> | T,
  ): Promise<T>;
}

export function isBackupSource(store: object): store is BackupSource {
  return typeof (store as Partial<BackupSource>).backup === 'function';
}

export class BackupError extends Error {
  override name = 'BackupError';
}

/** `s3://bucket/prefix` or a directory (relative to `cwd`). */
export function parseBackupLocation(text: string, cwd = process.cwd()): BackupLocation {
  if (text.trim() === '')
    throw new BackupError('give where the backup is: a directory or s3://bucket/prefix');
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text);
  if (s3) {
    const prefix = s3[2]!.replace(/\/+$/, '');
    if (prefix.split('/').some((s) => s === '.' || s === '..' || (s === '' && prefix !== '')))
      throw new BackupError(`the S3 prefix of ${text} has an empty, '.' or '..' segment`);
    return { kind: 's3', bucket: s3[1]!, prefix };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text))
    throw new BackupError(`${text}: a backup goes to a directory or to s3://bucket/prefix`);
  return { kind: 'dir', path: isAbsolute(text) ? resolve(text) : resolve(cwd, text) };
}

export function describeLocation(location: BackupLocation): string {
  return location.kind === 'dir'
    ? location.path
    : `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
}

/**
 * The engine's name for the backup's `store/` part: a `File(…)` path, or an `S3(…)` URL with the keys.
 * The statement is never logged, and the engine's messages name the URL without the keys.
 */
export function engineLocation(location: BackupLocation, s3: BackupS3Settings): string {
  if (location.kind === 'dir') return `File(${sqlString(join(location.path, 'store'))})`;
  const key = [location.prefix, 'store'].filter((s) => s !== '').join('/');
  const base = s3.s3Endpoint
    ? `${s3.s3Endpoint.replace(/\/+$/, '')}/${location.bucket}`
    : s3.s3ForcePathStyle
      ? `https://s3.${s3.s3Region}.amazonaws.com/${location.bucket}`
      : `https://${location.bucket}.s3.${s3.s3Region}.amazonaws.com`;
  const url = `${base}/${key.split('/').map(encodeURIComponent).join('/')}`;
  const keys =
    s3.s3AccessKeyId !== undefined && s3.s3SecretAccessKey !== undefined
      ? `, ${sqlString(s3.s3AccessKeyId)}, ${sqlString(s3.s3SecretAccessKey)}`
      : '';
  return `S3(${sqlString(url)}${keys})`;
}

/** The files of a backup other than `store/`, through the object store port, under the location's prefix. */
class BackupFiles {
  readonly #objects: ObjectStore;
  readonly #prefix: string;

  constructor(location: BackupLocation, s3: BackupS3Settings) {
    if (location.kind === 'dir') {
      this.#objects = new DirectoryObjectStore({ root: location.path });
      this.#prefix = '';
    } else {
      this.#objects = openObjectStore({ ...s3, s3Bucket: location.bucket }, '');
      this.#prefix = location.prefix === '' ? '' : `${location.prefix}/`;
    }
  }

  put(key: string, body: Uint8Array): Promise<void> {
    return this.#objects.put(this.#prefix + key, body);
  }

  putStream(key: string, chunks: ChunkSource): Promise<{ size: number }> {
    return this.#objects.putStream(this.#prefix + key, chunks);
  }

  get(key: string): Promise<Buffer> {
    return this.#objects.get(this.#prefix + key);
  }

  getStream(key: string): Promise<Readable> {
    return this.#objects.getStream(this.#prefix + key);
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    for await (const info of this.#objects.list(this.#prefix + prefix))
      yield { ...info, key: info.key.slice(this.#prefix.length) };
  }

  async holdsAnything(): Promise<boolean> {
    for await (const _ of this.list('')) return true;
    return false;
  }

  close(): Promise<void> {
    return this.#objects.close();
  }
}

export interface BackupDeps {
  readonly store: BackupSource;
  /** The catalog's state now; read at the store's point. */
  readonly catalog: () => CatalogSnapshot;
  /** The data directory's own object store, copied whole; undefined when materializations live in S3. */
  readonly objects: ObjectStore | undefined;
}

/**
 * Writes a backup of a running (or stopped) Weir's data directory to `location`, which must hold nothing yet.
 * The tables and the catalog are taken at one point (LoggedStore.backup); the materializations after it:
 * one a refresh replaced meanwhile is missing, and a run of it reads the raw data until the next refresh.
 */
export async function writeBackup(
  deps: BackupDeps,
  location: BackupLocation,
  s3: BackupS3Settings,
): Promise<BackupManifest> {
  const files = new BackupFiles(location, s3);
  try {
    if (location.kind === 'dir' ? await nonEmptyDir(location.path) : await files.holdsAnything())
      throw new BackupError(`${describeLocation(location)} is not empty: a backup goes to a new place`);
    // The catalog's key hashes and project keys are in it: as private as the data directory.
    if (location.kind === 'dir') await mkdir(location.path, { recursive: true, mode: 0o700 });
    const createdAt = new Date().toISOString();
    const at = await deps.store.backup(engineLocation(location, s3), async (point) => {
      const snapshot = deps.catalog();
      await files.put('catalog.json', Buffer.from(JSON.stringify(snapshot, null, 2)));
      return { point, snapshot };
    });
    let count = 0;
    let bytes = 0;
    if (deps.objects) {
      for await (const info of deps.objects.list('')) {
        let stream: Readable;
        try {
          stream = await deps.objects.getStream(info.key);
        } catch (err) {
          if (err instanceof ObjectStoreError && err.kind === 'not_found') continue; // replaced meanwhile
          throw err;
        }
        bytes += (await files.putStream(`objects/${info.key}`, stream)).size;
        count += 1;
      }
    }
    const manifest: BackupManifest = {
      format: FORMAT,
      version: 1,
      createdAt,
      finishedAt: new Date().toISOString(),
      log: { id: at.point.logId, ...at.point.position },
      tables: at.point.rows,
      catalog: {
        projects: at.snapshot.projects.length,
        endpoints: at.snapshot.endpoints.length,
        deletions: at.snapshot.deletions.length,
      },
      objects: { count, bytes },
    };
    await files.put(MANIFEST, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    return manifest;
  } finally {
    await files.close();
  }
}

/** What a restore needs of the engine: the embedded store's client on the new data directory. */
export interface RestoreEngine {
  command(sql: string): Promise<void>;
  query<T>(sql: string): Promise<T[]>;
}

/** Reads a backup's manifest: refuses a place with none (nothing there, or a backup that did not finish). */
export async function readManifest(location: BackupLocation, s3: BackupS3Settings): Promise<BackupManifest> {
  const files = new BackupFiles(location, s3);
  try {
    return await manifestOf(files, location);
  } finally {
    await files.close();
  }
}

async function manifestOf(files: BackupFiles, location: BackupLocation): Promise<BackupManifest> {
  let text: string;
  try {
    text = (await files.get(MANIFEST)).toString('utf8');
  } catch (err) {
    if (err instanceof ObjectStoreError && err.kind === 'not_found')
      throw new BackupError(
        `${describeLocation(location)} holds no complete Weir backup (no ${MANIFEST}: nothing is there, or the backup did not finish)`,
      );
    throw err;
  }
  const manifest = JSON.parse(text) as Partial<BackupManifest>;
  if (manifest.format !== FORMAT || manifest.version !== 1 || typeof manifest.tables !== 'object')
    throw new BackupError(
      `${describeLocation(location)}/${MANIFEST} is not a Weir backup manifest of version 1`,
    );
  return manifest as BackupManifest;
}

/**
 * Restores a backup into `dataDir`, which holds nothing (its lock aside): the tables through the engine's
 * RESTORE, checked against the manifest's counts, then the catalog and the materializations. What a restore
 * that fails wrote is removed, leaving the directory as empty as it found it.
 */
export async function restoreBackup(
  location: BackupLocation,
  s3: BackupS3Settings,
  dataDir: string,
  openEngine: () => Promise<RestoreEngine & { close(): Promise<void> }>,
): Promise<BackupManifest> {
  const present = (await readdir(dataDir).catch(() => [])).filter((f) => f !== 'weir.lock');
  if (present.length > 0)
    throw new BackupError(
      `${dataDir} is not empty (${present.slice(0, 5).join(', ')}): a backup is restored into an empty data directory`,
    );
  const files = new BackupFiles(location, s3);
  try {
    const manifest = await manifestOf(files, location);
    try {
      const engine = await openEngine();
      try {
        await engine.command(`RESTORE DATABASE default FROM ${engineLocation(location, s3)}`);
        for (const [table, rows] of Object.entries(manifest.tables)) {
          const [found] = await engine.query<{ n: string }>(
            `SELECT toString(count()) AS n FROM \`${table}\``,
          );
          if (Number(found?.n) !== rows)
            throw new BackupError(
              `the restored table ${table} has ${found?.n ?? 'no'} rows where the backup recorded ${rows}`,
            );
        }
      } finally {
        await engine.close();
      }
      const catalog = CatalogState.fromJson((await files.get('catalog.json')).toString('utf8'));
      await writeAtomically(join(dataDir, 'catalog.json'), catalog.snapshot);
      const objects = new DirectoryObjectStore({ root: join(dataDir, 'objects') });
      try {
        for await (const info of files.list('objects/'))
          await objects.putStream(info.key.slice('objects/'.length), await files.getStream(info.key));
      } finally {
        await objects.close();
      }
      return manifest;
    } catch (err) {
      for (const made of ['chdb', 'catalog.json', 'objects'])
        await rm(join(dataDir, made), { recursive: true, force: true });
      throw err;
    }
  } finally {
    await files.close();
  }
}

async function nonEmptyDir(path: string): Promise<boolean> {
  if (!existsSync(path)) return false;
  return (await readdir(path)).length > 0;
}
