import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Catalog, Project } from '../core/ports.ts';
import { generateKey, hashKey, maskKey } from './keys.ts';

export type Scope = 'query:read' | 'endpoint:read' | 'endpoint:write' | 'project:write' | '*';

export interface PersonalApiKeyRecord {
  readonly id: string;
  readonly label: string;
  readonly valueHash: string;
  readonly mask: string;
  readonly scopes: readonly Scope[];
  readonly projects: readonly number[];
  readonly createdAt: string;
}

interface CatalogFile {
  version: 1;
  nextProjectId: number;
  projects: Project[];
  personalApiKeys: PersonalApiKeyRecord[];
}

/** What a first start made, so the CLI can tell the person starting Weir (once). */
export interface Bootstrap {
  readonly project: Project;
  /** The personal key's value, or undefined when it came from WEIR_BOOTSTRAP_PERSONAL_API_KEY. */
  readonly personalApiKey: string | undefined;
  readonly projectKeyFromEnv: boolean;
  readonly personalKeyFromEnv: boolean;
}

export interface FileCatalogOptions {
  readonly dataDir: string;
  readonly bootstrapProjectApiKey: string | undefined;
  readonly bootstrapPersonalApiKey: string | undefined;
}

/**
 * The Catalog in a JSON file in the data directory (embedded deployment). Reads are served from memory;
 * each change rewrites the file atomically (write a temporary file, then rename).
 */
export class FileCatalog implements Catalog {
  readonly #path: string;
  #data: CatalogFile;
  #byToken = new Map<string, Project>();
  /** Set on the start that created the catalog. */
  readonly bootstrap: Bootstrap | undefined;

  private constructor(path: string, data: CatalogFile, bootstrap: Bootstrap | undefined) {
    this.#path = path;
    this.#data = data;
    this.bootstrap = bootstrap;
    this.#index();
  }

  static async open(options: FileCatalogOptions): Promise<FileCatalog> {
    await mkdir(options.dataDir, { recursive: true });
    const path = join(options.dataDir, 'catalog.json');
    if (existsSync(path)) {
      const data = JSON.parse(await readFile(path, 'utf8')) as CatalogFile;
      return new FileCatalog(path, data, undefined);
    }
    const now = new Date().toISOString();
    const apiToken = options.bootstrapProjectApiKey ?? generateKey('phc_');
    const personal = options.bootstrapPersonalApiKey ?? generateKey('phx_');
    const project: Project = { id: 1, name: 'Default project', apiToken, createdAt: now };
    const data: CatalogFile = {
      version: 1,
      nextProjectId: 2,
      projects: [project],
      personalApiKeys: [
        {
          id: '1',
          label: 'bootstrap',
          valueHash: hashKey(personal),
          mask: maskKey(personal),
          scopes: ['*'],
          projects: [1],
          createdAt: now,
        },
      ],
    };
    const catalog = new FileCatalog(path, data, {
      project,
      personalApiKey: options.bootstrapPersonalApiKey === undefined ? personal : undefined,
      projectKeyFromEnv: options.bootstrapProjectApiKey !== undefined,
      personalKeyFromEnv: options.bootstrapPersonalApiKey !== undefined,
    });
    await catalog.#save();
    return catalog;
  }

  projectByApiToken(token: string): Project | undefined {
    return this.#byToken.get(token);
  }

  listProjects(): readonly Project[] {
    return this.#data.projects;
  }

  personalKeyByValue(value: string): PersonalApiKeyRecord | undefined {
    const hash = hashKey(value);
    return this.#data.personalApiKeys.find((k) => k.valueHash === hash);
  }

  async close(): Promise<void> {
    // Every change is saved when it is made; nothing is buffered.
  }

  #index(): void {
    this.#byToken = new Map(this.#data.projects.map((p) => [p.apiToken, p]));
  }

  async #save(): Promise<void> {
    const tmp = `${this.#path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(this.#data, null, 2), { mode: 0o600 });
    await rename(tmp, this.#path);
  }
}
