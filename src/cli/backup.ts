import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CatalogState } from '../catalog/catalog-state.ts';
import { loadConfig, type Config } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import {
  BackupError,
  describeLocation,
  isBackupSource,
  parseBackupLocation,
  restoreBackup,
  writeBackup,
  type BackupManifest,
  type BackupS3Settings,
} from '../lifecycle/backup.ts';
import { openObjectStore } from '../objects/open-object-store.ts';
import { requestBackup } from '../roles/control-socket.ts';
import { DataDirBusyError, DataDirLock } from '../store/data-dir-lock.ts';
import { openStore } from '../store/open-store.ts';

const USAGE = `usage: weir backup DEST [--data-dir DIR]
       weir restore SRC [--data-dir DIR]

backup copies a data directory's store, catalog and materializations to DEST, a new directory or
s3://bucket/prefix, at one point: every event acknowledged before it started is in it. A running Weir makes
it (through <data dir>/weir.sock) and goes on taking events; a stopped one's directory is opened for it.
restore fills an empty data directory from such a backup; then weir start runs on it.

S3 is reached with WEIR_S3_ENDPOINT, WEIR_S3_REGION, WEIR_S3_ACCESS_KEY_ID, WEIR_S3_SECRET_ACCESS_KEY and
WEIR_S3_FORCE_PATH_STYLE, the bucket from the URL. docs/operations.md, "Backup and restore".

options:
  --data-dir DIR     the data directory (default: WEIR_DATA_DIR, else ./data)
`;

/** `weir backup DEST` / `weir restore SRC`: 0 when done, 1 when refused or failed, 2 on bad usage. */
export async function runBackupCommand(command: 'backup' | 'restore', args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    process.stderr.write(`weir ${command}: give one ${command === 'backup' ? 'DEST' : 'SRC'}\n\n${USAGE}`);
    return 2;
  }
  const config = loadConfig(
    process.env,
    values['data-dir'] === undefined ? {} : { 'data-dir': values['data-dir'] },
  );
  if (config.clickhouseUrl !== undefined)
    throw new BackupError(
      `weir ${command} is for the embedded store's data directory; a ClickHouse server is backed up with its own BACKUP and weir catalog export (docs/operations.md)`,
    );
  const location = parseBackupLocation(positionals[0]!);
  const s3 = s3Settings(config);
  const manifest =
    command === 'backup' ? await backup(config, location, s3) : await restore(config, location, s3);
  process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
  const rows = Object.values(manifest.tables).reduce((a, b) => a + b, 0);
  process.stderr.write(
    command === 'backup'
      ? `backed up ${config.dataDir} to ${describeLocation(location)}: ${rows} rows in ${Object.keys(manifest.tables).length} tables, ${manifest.catalog.projects} projects, ${manifest.objects.count} objects\n`
      : `restored ${describeLocation(location)} (taken ${manifest.createdAt}) into ${config.dataDir}: ${rows} rows, ${manifest.catalog.projects} projects, ${manifest.objects.count} objects\n`,
  );
  return 0;
}

function s3Settings(config: Config): BackupS3Settings {
  const { s3Endpoint, s3Region, s3AccessKeyId, s3SecretAccessKey, s3ForcePathStyle } = config;
  return { s3Endpoint, s3Region, s3AccessKeyId, s3SecretAccessKey, s3ForcePathStyle };
}

async function backup(
  config: Config,
  location: ReturnType<typeof parseBackupLocation>,
  s3: BackupS3Settings,
): Promise<BackupManifest> {
  let lock: DataDirLock;
  try {
    if (!existsSync(join(config.dataDir, 'catalog.json')) && !existsSync(join(config.dataDir, 'weir.lock')))
      throw new BackupError(`${config.dataDir} is not a Weir data directory (it has no catalog.json)`);
    lock = DataDirLock.acquire(config.dataDir);
  } catch (err) {
    if (!(err instanceof DataDirBusyError)) throw err;
    // A running Weir holds the directory and its engine: it makes the backup.
    return requestBackup(config.dataDir, { location: positionalText(location), s3 });
  }
  try {
    if (config.catalog === 'nats')
      throw new BackupError(
        'with the catalog in NATS KV, back up while weir ingest runs (it copies the catalog it follows)',
      );
    const catalog = CatalogState.fromJson(await readFile(join(config.dataDir, 'catalog.json'), 'utf8'));
    const store = await openStore(config, {
      logger: createLogger('warn', process.stderr),
      metrics: new Metrics({ defaultMetrics: false }),
    });
    const objects = config.s3Bucket === undefined ? openObjectStore(config, config.dataDir) : undefined;
    try {
      if (!isBackupSource(store)) throw new BackupError('this store cannot be backed up by weir backup');
      return await writeBackup({ store, catalog: () => catalog.snapshot, objects }, location, s3);
    } finally {
      await objects?.close();
      await store.close();
    }
  } finally {
    lock.release();
  }
}

/** The location as the running Weir parses it again (a directory made absolute here, where it was named). */
function positionalText(location: ReturnType<typeof parseBackupLocation>): string {
  return location.kind === 'dir' ? location.path : describeLocation(location);
}

async function restore(
  config: Config,
  location: ReturnType<typeof parseBackupLocation>,
  s3: BackupS3Settings,
): Promise<BackupManifest> {
  const lock = DataDirLock.acquire(config.dataDir);
  try {
    return await restoreBackup(location, s3, config.dataDir, async () => {
      const { ChdbClient } = await import('../store/embedded/chdb-client.ts');
      const engine = ChdbClient.open(join(config.dataDir, 'chdb'), { reads: { readers: 1 } });
      return {
        command: (sql) => engine.command(sql),
        query: (sql) => engine.query(sql),
        close: () => engine.close(),
      };
    });
  } finally {
    lock.release();
  }
}
