import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  Catalog,
  Deletion,
  DeletionChange,
  Endpoint,
  EndpointChange,
  NewDeletion,
  NewEndpoint,
  NewPersonalApiKey,
  PersonalApiKey,
  Project,
  ProjectPatch,
} from '../core/ports.ts';
import { CatalogState, type CatalogSnapshot } from './catalog-state.ts';
import {
  bootstrapRecords,
  bootstrapReport,
  newDeletion,
  newEndpoint,
  newPersonalKey,
  newProjectFields,
  type Bootstrap,
} from './records.ts';

export type { Bootstrap } from './records.ts';

export interface FileCatalogOptions {
  readonly dataDir: string;
  readonly bootstrapProjectApiKey: string | undefined;
  readonly bootstrapPersonalApiKey: string | undefined;
}

/**
 * The Catalog in a JSON file in the data directory (embedded deployment). Reads are served from memory.
 * Changes run one at a time (a promise chain), so concurrent requests never lose one another's change;
 * each writes the whole file atomically (temporary file, fsync, rename) and only then becomes visible.
 * One process owns the data directory (its lock), so the file has one writer.
 */
export class FileCatalog implements Catalog {
  readonly #path: string;
  #state: CatalogState;
  #revision = 0;
  #tail: Promise<unknown> = Promise.resolve();
  readonly #listeners: ((projects: readonly Project[]) => void)[] = [];
  /** Set on the start that created the catalog. */
  readonly bootstrap: Bootstrap | undefined;

  private constructor(path: string, state: CatalogState, bootstrap: Bootstrap | undefined) {
    this.#path = path;
    this.#state = state;
    this.bootstrap = bootstrap;
  }

  get revision(): number {
    return this.#revision;
  }

  static async open(options: FileCatalogOptions): Promise<FileCatalog> {
    await mkdir(options.dataDir, { recursive: true });
    const path = join(options.dataDir, 'catalog.json');
    if (existsSync(path)) {
      return new FileCatalog(path, CatalogState.fromJson(await readFile(path, 'utf8')), undefined);
    }
    const { project, key, personal } = bootstrapRecords(options);
    const state = new CatalogState({
      version: 1,
      nextProjectId: 2,
      projects: [project],
      personalApiKeys: [key],
      endpoints: [],
      deletions: [],
    });
    await writeAtomically(path, state.snapshot);
    return new FileCatalog(path, state, bootstrapReport(options, project, personal));
  }

  /** The catalog as it is now: what the file holds (a change is seen only once written). */
  snapshot(): CatalogSnapshot {
    return this.#state.snapshot;
  }

  projectByApiToken(token: string): Project | undefined {
    return this.#state.projectByApiToken(token);
  }

  project(id: number): Project | undefined {
    return this.#state.project(id);
  }

  listProjects(): readonly Project[] {
    return this.#state.snapshot.projects;
  }

  personalKeyByValue(value: string): PersonalApiKey | undefined {
    return this.#state.personalKeyByValue(value);
  }

  personalKey(id: string): PersonalApiKey | undefined {
    return this.#state.personalKey(id);
  }

  listPersonalKeys(): readonly PersonalApiKey[] {
    return this.#state.snapshot.personalApiKeys;
  }

  createProject(input: {
    readonly name: string;
    readonly grantTo?: string;
    readonly eventRetentionDays?: number | null;
  }): Promise<Project> {
    const fields = newProjectFields(input.name, input.eventRetentionDays);
    return this.#change((state) => {
      const made = state.withProject(fields, input.grantTo);
      return { next: made.state, result: made.project };
    });
  }

  updateProject(id: number, patch: ProjectPatch): Promise<Project | undefined> {
    return this.#change((state) => {
      const changed = state.withProjectPatch(id, patch);
      return changed
        ? { next: changed.state, result: changed.project }
        : { next: undefined, result: state.project(id) };
    });
  }

  async createPersonalKey(input: NewPersonalApiKey): Promise<{ key: PersonalApiKey; value: string }> {
    const { key, value } = newPersonalKey(input);
    await this.#change((state) => ({ next: state.withKey(key), result: undefined }));
    return { key, value };
  }

  revokePersonalKey(id: string): Promise<boolean> {
    return this.#change((state) => {
      const next = state.withKeyRevoked(id, new Date().toISOString());
      return { next, result: next !== undefined };
    });
  }

  endpoint(projectId: number, name: string): Endpoint | undefined {
    return this.#state.endpoint(projectId, name);
  }

  listEndpoints(projectId: number): readonly Endpoint[] {
    return this.#state.endpointsOf(projectId);
  }

  createEndpoint(projectId: number, input: NewEndpoint): Promise<Endpoint> {
    const endpoint = newEndpoint(projectId, input);
    return this.#change((state) => ({ next: state.withEndpoint(endpoint), result: endpoint }));
  }

  updateEndpoint(
    projectId: number,
    name: string,
    decide: (current: Endpoint) => EndpointChange,
  ): Promise<Endpoint | undefined> {
    return this.#change((state) => {
      const current = state.endpoint(projectId, name);
      if (!current) return { next: undefined, result: undefined };
      const change = decide(current);
      if (Object.values(change).every((v) => v === undefined)) return { next: undefined, result: current };
      const changed = state.withEndpointChanged(projectId, name, change, new Date().toISOString());
      return { next: changed?.state, result: changed?.endpoint };
    });
  }

  deleteEndpoint(projectId: number, name: string, check?: (current: Endpoint) => void): Promise<boolean> {
    return this.#change((state) => {
      const current = state.endpoint(projectId, name);
      if (current && check) check(current);
      const next = state.withoutEndpoint(projectId, name);
      return { next, result: next !== undefined };
    });
  }

  deletion(id: string): Deletion | undefined {
    return this.#state.deletion(id);
  }

  listDeletions(): readonly Deletion[] {
    return this.#state.snapshot.deletions;
  }

  /** One change: the suppressions and the deletion are saved together or not at all. */
  createDeletion(input: NewDeletion & { readonly suppressionHashes?: readonly string[] }): Promise<Deletion> {
    const deletion = newDeletion(input);
    return this.#change((state) => {
      let next = state;
      if (input.suppressionHashes && input.suppressionHashes.length > 0) {
        next = state.withProjectPatch(input.projectId, { suppress: input.suppressionHashes })?.state ?? state;
      }
      return { next: next.withDeletion(deletion), result: deletion };
    });
  }

  updateDeletion(
    id: string,
    decide: (current: Deletion) => DeletionChange | undefined,
  ): Promise<Deletion | undefined> {
    return this.#change((state) => {
      const current = state.deletion(id);
      if (!current) return { next: undefined, result: undefined };
      const change = decide(current);
      if (!change) return { next: undefined, result: current };
      const changed = state.withDeletionChanged(id, change);
      return { next: changed?.state, result: changed?.deletion };
    });
  }

  /** One change: the project and its endpoints go, and the deletion of its data is recorded. */
  deleteProject(id: number, createdBy: string | null): Promise<Deletion | undefined> {
    const deletion = newDeletion({ kind: 'project', projectId: id, createdBy });
    return this.#change((state) => {
      const without = state.project(id) ? state.withoutProject(id) : undefined;
      if (!without) return { next: undefined, result: undefined };
      return { next: without.withDeletion(deletion), result: deletion };
    });
  }

  removeProjectRecords(id: number): Promise<void> {
    return this.#change((state) => ({ next: state.withoutProject(id), result: undefined }));
  }

  /**
   * Calls `listener` with every project after each change of the catalog is saved, before the change's
   * caller hears of it (capture threads keep their own copy of the project keys this way).
   */
  onChange(listener: (projects: readonly Project[]) => void): void {
    this.#listeners.push(listener);
  }

  /** Waits for changes in progress; every change is saved when it is made, nothing is buffered. */
  async close(): Promise<void> {
    await this.#tail;
  }

  /**
   * Runs `apply` on the newest state once every earlier change is done, writes the state it returns
   * (undefined: nothing to change), and only then makes it the state reads see.
   */
  #change<T>(apply: (state: CatalogState) => { next: CatalogState | undefined; result: T }): Promise<T> {
    const run = this.#tail.then(async () => {
      const { next, result } = apply(this.#state);
      if (next) {
        await writeAtomically(this.#path, next.snapshot);
        this.#state = next;
        this.#revision++;
        for (const listener of this.#listeners) listener(this.listProjects());
      }
      return result;
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }
}

/** Replaces the file so that a crash at any point leaves either the old content or the new, whole. */
export async function writeAtomically(path: string, snapshot: CatalogSnapshot): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const file = await open(tmp, 'w', 0o600);
  try {
    await file.writeFile(JSON.stringify(snapshot, null, 2));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
}
