import type { PersonalApiKey, Project } from '../core/ports.ts';
import { hashKey } from './keys.ts';

/** A personal API key as stored: the record plus the SHA-256 of its value (never the value). */
export interface StoredPersonalApiKey extends PersonalApiKey {
  readonly valueHash: string;
}

/** The catalog's whole content, as the file adapter writes it (and a KV adapter would rebuild it). */
export interface CatalogSnapshot {
  readonly version: 1;
  readonly nextProjectId: number;
  readonly projects: readonly Project[];
  readonly personalApiKeys: readonly StoredPersonalApiKey[];
}

/**
 * An immutable catalog snapshot with the indexes its reads need. A change makes a new state (the functions
 * below), which an adapter swaps in only once the change is durable: a reader sees either the old state or
 * the new one, never half of a change, and never a change that could still be lost.
 */
export class CatalogState {
  readonly #byToken: ReadonlyMap<string, Project>;
  readonly #byId: ReadonlyMap<number, Project>;
  readonly #keyByHash: ReadonlyMap<string, StoredPersonalApiKey>;
  readonly #keyById: ReadonlyMap<string, StoredPersonalApiKey>;

  constructor(readonly snapshot: CatalogSnapshot) {
    this.#byToken = new Map(snapshot.projects.map((p) => [p.apiToken, p]));
    this.#byId = new Map(snapshot.projects.map((p) => [p.id, p]));
    this.#keyByHash = new Map(snapshot.personalApiKeys.map((k) => [k.valueHash, k]));
    this.#keyById = new Map(snapshot.personalApiKeys.map((k) => [k.id, k]));
  }

  /** Reads a snapshot written by this or an earlier version (older files lack `createdBy` and `revokedAt`). */
  static fromJson(text: string): CatalogState {
    const raw = JSON.parse(text) as CatalogSnapshot;
    return new CatalogState({
      version: 1,
      nextProjectId: raw.nextProjectId,
      projects: raw.projects,
      personalApiKeys: raw.personalApiKeys.map((k) => ({
        ...k,
        createdBy: k.createdBy ?? null,
        revokedAt: k.revokedAt ?? null,
      })),
    });
  }

  projectByApiToken(token: string): Project | undefined {
    return this.#byToken.get(token);
  }

  project(id: number): Project | undefined {
    return this.#byId.get(id);
  }

  personalKeyByValue(value: string): StoredPersonalApiKey | undefined {
    return this.#keyByHash.get(hashKey(value));
  }

  personalKey(id: string): StoredPersonalApiKey | undefined {
    return this.#keyById.get(id);
  }

  withProject(
    project: Omit<Project, 'id'>,
    grantTo: string | undefined,
  ): { state: CatalogState; project: Project } {
    const s = this.snapshot;
    if (grantTo !== undefined && !this.#keyById.has(grantTo))
      throw new Error(`no personal API key ${grantTo}`);
    const created: Project = { id: s.nextProjectId, ...project };
    const personalApiKeys = s.personalApiKeys.map((k) =>
      k.id === grantTo && k.projects !== '*' ? { ...k, projects: [...k.projects, created.id] } : k,
    );
    const state = new CatalogState({
      ...s,
      nextProjectId: s.nextProjectId + 1,
      projects: [...s.projects, created],
      personalApiKeys,
    });
    return { state, project: created };
  }

  withProjectName(id: number, name: string): { state: CatalogState; project: Project } | undefined {
    const existing = this.#byId.get(id);
    if (!existing) return undefined;
    const project: Project = { ...existing, name };
    const projects = this.snapshot.projects.map((p) => (p.id === id ? project : p));
    return { state: new CatalogState({ ...this.snapshot, projects }), project };
  }

  withKey(key: StoredPersonalApiKey): CatalogState {
    if (this.#keyById.has(key.id) || this.#keyByHash.has(key.valueHash)) {
      throw new Error('a personal API key with this id or value already exists');
    }
    return new CatalogState({ ...this.snapshot, personalApiKeys: [...this.snapshot.personalApiKeys, key] });
  }

  /** Undefined when there is no such key or it is already revoked. */
  withKeyRevoked(id: string, at: string): CatalogState | undefined {
    const key = this.#keyById.get(id);
    if (!key || key.revokedAt !== null) return undefined;
    const personalApiKeys = this.snapshot.personalApiKeys.map((k) =>
      k.id === id ? { ...k, revokedAt: at } : k,
    );
    return new CatalogState({ ...this.snapshot, personalApiKeys });
  }
}
