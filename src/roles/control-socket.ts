import { chmod, rm } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import type { Logger } from '../core/logger.ts';
import type { ObjectStore } from '../core/object-store.ts';
import {
  BackupError,
  describeLocation,
  parseBackupLocation,
  writeBackup,
  type BackupManifest,
  type BackupS3Settings,
  type BackupSource,
} from '../lifecycle/backup.ts';
import type { RoleCatalog } from './catalog.ts';

/**
 * The control socket of the process that owns a data directory: `<data dir>/weir.sock`, a Unix socket as
 * private as the directory (mode 0600), over which `weir backup` asks a running Weir for a backup (the engine
 * is in this process, and the directory is locked to it). No network port, no key: whoever may read the data
 * directory may copy it anyway. docs/operations.md, "Backup and restore".
 *
 * - `POST /backup` `{location, s3}` → `200 {manifest}` once the backup is complete, `409` while another runs,
 *   `422 {error}` for a refusal (a place that is not empty), `500 {error}` for a failure.
 */
export const CONTROL_SOCKET = 'weir.sock';

/** Linux's limit on a socket's path (sun_path, 108 bytes with its terminating zero). */
const MAX_SOCKET_PATH = 107;

export interface BackupRequest {
  readonly location: string;
  readonly s3: BackupS3Settings;
}

export interface ControlDeps {
  readonly store: BackupSource;
  readonly catalog: Pick<RoleCatalog, 'snapshot'>;
  readonly objects: ObjectStore | undefined;
  readonly logger: Logger;
}

export class ControlSocket {
  readonly #server: Server;
  readonly #path: string;

  private constructor(server: Server, path: string) {
    this.#server = server;
    this.#path = path;
  }

  /** Serves the data directory's socket; undefined (logged) where its path is too long for one. */
  static async open(dataDir: string, deps: ControlDeps): Promise<ControlSocket | undefined> {
    const path = join(dataDir, CONTROL_SOCKET);
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
      deps.logger.warn(
        { path },
        'the data directory path is too long for a control socket: weir backup needs Weir stopped',
      );
      return undefined;
    }
    // The data directory is locked to this process: a socket there is one a killed process left.
    await rm(path, { force: true });
    let running = false;
    const server = createServer((req, res) => {
      const answer = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.url !== '/backup') return answer(404, { error: 'no such operation' });
      if (running) return answer(409, { error: 'a backup of this data directory is running already' });
      running = true;
      void readJson(req)
        .then(async (body) => {
          const r = body as Partial<BackupRequest>;
          if (typeof r.location !== 'string' || typeof r.s3 !== 'object' || r.s3 === null)
            throw new BackupError('a backup request needs location and s3');
          const location = parseBackupLocation(r.location);
          deps.logger.info({ location: describeLocation(location) }, 'backup started');
          const manifest = await writeBackup(
            { store: deps.store, catalog: () => deps.catalog.snapshot(), objects: deps.objects },
            location,
            r.s3,
          );
          deps.logger.info({ location: describeLocation(location), tables: manifest.tables }, 'backup done');
          answer(200, { manifest });
        })
        .catch((err: unknown) => {
          if (err instanceof BackupError) deps.logger.warn({ err }, 'backup refused');
          else deps.logger.error({ err }, 'backup failed');
          answer(err instanceof BackupError ? 422 : 500, { error: (err as Error).message });
        })
        .finally(() => (running = false));
    });
    // A backup of a large store takes minutes: no request timeout on a socket only the operator reaches.
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    await chmod(path, 0o600);
    return new ControlSocket(server, path);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await rm(this.#path, { force: true });
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** Asks the Weir holding `dataDir` for a backup through its control socket (weir backup). */
export function requestBackup(dataDir: string, body: BackupRequest): Promise<BackupManifest> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: join(dataDir, CONTROL_SOCKET), path: '/backup', method: 'POST' },
      (res) => {
        readJson(res)
          .then((answer) => {
            const a = answer as { manifest?: BackupManifest; error?: string };
            if (res.statusCode === 200 && a.manifest) resolve(a.manifest);
            else reject(new BackupError(a.error ?? `the running Weir answered ${res.statusCode}`));
          })
          .catch(reject);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT' || err.code === 'ECONNREFUSED'
          ? new BackupError(
              `the Weir holding ${dataDir} has no control socket (${CONTROL_SOCKET}): it is older than weir backup, or its path is too long for one; stop it and run weir backup again`,
            )
          : err,
      ),
    );
    req.end(JSON.stringify(body));
  });
}
