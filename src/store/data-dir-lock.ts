import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One process owns a data directory (chDB allows one per directory). The owner writes its pid to
 * `weir.lock`; another process refuses the directory while that pid is alive, and takes over a stale lock.
 */
export class DataDirLock {
  readonly #path: string;

  private constructor(path: string) {
    this.#path = path;
  }

  static acquire(dataDir: string): DataDirLock {
    mkdirSync(dataDir, { recursive: true });
    const path = join(dataDir, 'weir.lock');
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(path, String(process.pid), { flag: 'wx' });
        return new DataDirLock(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = lockHolder(dataDir);
        if (holder !== undefined) throw new DataDirBusyError(dataDir, holder);
        rmSync(path, { force: true });
      }
    }
    throw new DataDirBusyError(dataDir, undefined);
  }

  release(): void {
    rmSync(this.#path, { force: true });
  }
}

/** The pid of a live process holding the directory, or undefined. */
export function lockHolder(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'weir.lock'), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

export class DataDirBusyError extends Error {
  override name = 'DataDirBusyError';
  constructor(dataDir: string, pid: number | undefined) {
    super(
      `the data directory ${dataDir} is held by a running Weir${pid === undefined ? '' : ` (pid ${pid})`}; ` +
        'stop it first, or use its HTTP API',
    );
  }
}
