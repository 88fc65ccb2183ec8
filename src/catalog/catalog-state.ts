import type {
  Endpoint,
  EndpointChange,
  EndpointVersion,
  PersonalApiKey,
  Project,
  ProjectPatch,
} from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { hashKeyOfCaller } from './keys.ts';

/** A project as read back: records written before a setting existed get its default. */
export function projectRecord(raw: Project): Project {
  return raw.anonymizeIps === true || raw.anonymizeIps === false ? raw : { ...raw, anonymizeIps: false };
}

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
  /** Every project's endpoints, oldest first (absent in files written before endpoints existed). */
  readonly endpoints: readonly Endpoint[];
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
  /** Endpoints by `projectId/name`, and each project's in order. */
  readonly #endpointByName: ReadonlyMap<string, Endpoint>;
  readonly #endpointsOf: ReadonlyMap<number, readonly Endpoint[]>;

  constructor(readonly snapshot: CatalogSnapshot) {
    this.#byToken = new Map(snapshot.projects.map((p) => [p.apiToken, p]));
    this.#byId = new Map(snapshot.projects.map((p) => [p.id, p]));
    this.#keyByHash = new Map(snapshot.personalApiKeys.map((k) => [k.valueHash, k]));
    this.#keyById = new Map(snapshot.personalApiKeys.map((k) => [k.id, k]));
    this.#endpointByName = new Map(snapshot.endpoints.map((e) => [endpointKey(e.projectId, e.name), e]));
    const of = new Map<number, Endpoint[]>();
    for (const e of snapshot.endpoints) {
      const list = of.get(e.projectId);
      if (list) list.push(e);
      else of.set(e.projectId, [e]);
    }
    this.#endpointsOf = of;
  }

  /**
   * Reads a snapshot written by this or an earlier version (older files lack `createdBy` and `revokedAt` on
   * keys, and `endpoints`).
   */
  static fromJson(text: string): CatalogState {
    const raw = JSON.parse(text) as Partial<CatalogSnapshot> & Pick<CatalogSnapshot, 'nextProjectId'>;
    return new CatalogState({
      version: 1,
      nextProjectId: raw.nextProjectId,
      projects: (raw.projects ?? []).map(projectRecord),
      personalApiKeys: (raw.personalApiKeys ?? []).map((k) => ({
        ...k,
        createdBy: k.createdBy ?? null,
        revokedAt: k.revokedAt ?? null,
      })),
      // Files written before materialization lack the bucket (its default is a day).
      endpoints: (raw.endpoints ?? []).map((e) => ({
        ...e,
        materializationBucket: e.materializationBucket ?? 'day',
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
    return this.#keyByHash.get(hashKeyOfCaller(value));
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

  /** Undefined when there is no such project or the patch changes nothing. */
  withProjectPatch(id: number, patch: ProjectPatch): { state: CatalogState; project: Project } | undefined {
    const existing = this.#byId.get(id);
    if (!existing) return undefined;
    const project: Project = {
      ...existing,
      name: patch.name ?? existing.name,
      anonymizeIps: patch.anonymizeIps ?? existing.anonymizeIps,
    };
    if (project.name === existing.name && project.anonymizeIps === existing.anonymizeIps) return undefined;
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

  endpoint(projectId: number, name: string): Endpoint | undefined {
    return this.#endpointByName.get(endpointKey(projectId, name));
  }

  endpointsOf(projectId: number): readonly Endpoint[] {
    return this.#endpointsOf.get(projectId) ?? [];
  }

  /** Adds an endpoint; AppError `endpoint_exists` when its project already has one of that name. */
  withEndpoint(endpoint: Endpoint): CatalogState {
    if (!this.#byId.has(endpoint.projectId)) throw new Error(`no project ${endpoint.projectId}`);
    if (this.#endpointByName.has(endpointKey(endpoint.projectId, endpoint.name))) {
      throw nameTaken(endpoint.projectId, endpoint.name);
    }
    return new CatalogState({ ...this.snapshot, endpoints: [...this.snapshot.endpoints, endpoint] });
  }

  /**
   * Applies `change` to an endpoint at time `at`; undefined when there is no such endpoint. A version's query
   * and variables are never changed here: a changed query is a new version.
   */
  withEndpointChanged(
    projectId: number,
    name: string,
    change: EndpointChange,
    at: string,
  ): { state: CatalogState; endpoint: Endpoint } | undefined {
    const current = this.endpoint(projectId, name);
    if (!current) return undefined;
    if (change.name !== undefined && change.name !== name && this.endpoint(projectId, change.name)) {
      throw nameTaken(projectId, change.name);
    }
    let versions = current.versions;
    const target = change.version;
    if (target !== undefined) {
      const old = versions[target.version - 1];
      if (!old) throw new Error(`endpoint ${name} has no version ${target.version}`);
      const updated: EndpointVersion = {
        ...old,
        isActive: target.isActive ?? old.isActive,
        isMaterialized: target.isMaterialized ?? old.isMaterialized,
        ...(target.materialization ? { materialization: target.materialization } : {}),
      };
      versions = versions.map((v) => (v === old ? updated : v));
    }
    if (change.newVersion !== undefined) {
      versions = [
        ...versions,
        { ...change.newVersion, version: versions.length + 1, isActive: true, createdAt: at },
      ];
    }
    const endpoint: Endpoint = {
      ...current,
      name: change.name ?? current.name,
      description: change.description ?? current.description,
      cacheAgeSeconds: change.cacheAgeSeconds ?? current.cacheAgeSeconds,
      isActive: change.isActive ?? current.isActive,
      syncFrequency: change.syncFrequency ?? current.syncFrequency,
      materializationBucket: change.materializationBucket ?? current.materializationBucket,
      versions,
      updatedAt: at,
    };
    const endpoints = this.snapshot.endpoints.map((e) => (e === current ? endpoint : e));
    return { state: new CatalogState({ ...this.snapshot, endpoints }), endpoint };
  }

  /** Undefined when there is no such endpoint. */
  withoutEndpoint(projectId: number, name: string): CatalogState | undefined {
    const current = this.endpoint(projectId, name);
    if (!current) return undefined;
    return new CatalogState({
      ...this.snapshot,
      endpoints: this.snapshot.endpoints.filter((e) => e !== current),
    });
  }
}

function endpointKey(projectId: number, name: string): string {
  return `${projectId}/${name}`;
}

function nameTaken(projectId: number, name: string): AppError {
  return new AppError('endpoint_exists', {
    detail: `Project ${projectId} already has an endpoint named '${name}'.`,
    attr: 'name',
  });
}
