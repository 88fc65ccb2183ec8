import { readFile } from 'node:fs/promises';
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../core/logger.ts';
import type { Project, ProjectKeys } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { projectRecord } from './catalog-state.ts';

export interface ReadOnlyFileCatalogOptions {
  /** The data directory of the process that owns the catalog (`weir ingest` or `weir start`). */
  readonly dataDir: string;
  /** How often the file is checked for changes. @default 1000 */
  readonly pollMs?: number;
}

/**
 * The catalog as a `weir capture` process sees it on a single machine: the owner's `catalog.json`, read,
 * never written, and read again whenever the file changes, so a project made later can capture within a
 * second. Until the file exists (the owner has not made it yet) capture answers 503 and is not ready.
 *
 * Polling the file's status rather than `fs.watch`: the owner replaces the file by rename, which an inode
 * watch loses, and a one-second stat costs nothing. Across machines this becomes the NATS KV catalog
 * (DESIGN.md), not built yet.
 */
export class ReadOnlyFileCatalog implements ProjectKeys {
  readonly #path: string;
  readonly #logger: Logger;
  #byToken: Map<string, Project> | undefined;
  #projects: readonly Project[] = [];
  #reading: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(path: string, logger: Logger) {
    this.#path = path;
    this.#logger = logger;
  }

  static async open(options: ReadOnlyFileCatalogOptions, logger: Logger): Promise<ReadOnlyFileCatalog> {
    const catalog = new ReadOnlyFileCatalog(join(options.dataDir, 'catalog.json'), logger);
    await catalog.#load();
    if (!catalog.loaded)
      logger.warn({ path: catalog.#path }, 'no catalog yet; capture answers 503 until its owner makes it');
    watchFile(catalog.#path, { interval: options.pollMs ?? 1000, persistent: false }, catalog.#onChange);
    return catalog;
  }

  /** Whether the catalog has been read (capture is ready only then). */
  get loaded(): boolean {
    return this.#byToken !== undefined;
  }

  projectByApiToken(token: string): Project | undefined {
    if (!this.#byToken)
      throw new AppError('unavailable', {
        detail: 'The project catalog is not available yet; retry after the time in Retry-After.',
        retryAfterSeconds: 1,
        retriable: true,
      });
    return this.#byToken.get(token);
  }

  listProjects(): readonly Project[] {
    return this.#projects;
  }

  /** Resolves after any read in progress, so a test can wait for a change to be taken in. */
  async settled(): Promise<void> {
    await this.#reading;
  }

  async close(): Promise<void> {
    this.#closed = true;
    unwatchFile(this.#path, this.#onChange);
    await this.#reading;
  }

  readonly #onChange = (curr: Stats, prev: Stats): void => {
    if (this.#closed || (curr.mtimeMs === prev.mtimeMs && curr.ino === prev.ino)) return;
    this.#reading = this.#reading.then(() => this.#load());
  };

  async #load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#logger.warn({ err, path: this.#path }, 'catalog not readable; keeping the last one read');
      return;
    }
    try {
      const data = JSON.parse(text) as { projects?: unknown };
      if (!Array.isArray(data.projects)) throw new Error('no projects array');
      const projects = (data.projects as Project[]).map(projectRecord);
      const first = this.#byToken === undefined;
      this.#projects = projects;
      this.#byToken = new Map(projects.map((p) => [p.apiToken, p]));
      this.#logger.info({ projects: projects.length }, first ? 'catalog loaded' : 'catalog reloaded');
    } catch (err) {
      // The owner writes by rename, so a torn read should not happen; keep what works if it does.
      this.#logger.warn({ err, path: this.#path }, 'catalog not parsable; keeping the last one read');
    }
  }
}
