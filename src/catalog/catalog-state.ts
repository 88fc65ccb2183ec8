import {
  MAX_SUPPRESSED_PER_PROJECT,
  type Deletion,
  type DeletionChange,
  type Endpoint,
  type EndpointChange,
  type EndpointVersion,
  type PersonalApiKey,
  type Project,
  type ProjectPatch,
} from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { hashKeyOfCaller } from './keys.ts';

/** A project's settings before anyone changes them (and those of records written before a setting existed). */
export const PROJECT_DEFAULTS = {
  anonymizeIps: false,
  eventRetentionDays: null,
  suppressedDistinctIds: [],
  dataDeletedAt: null,
} as const satisfies Partial<Project>;

/** A project as read back: records written before a setting existed get its default. */
export function projectRecord(raw: Project): Project {
  const complete =
    typeof raw.anonymizeIps === 'boolean' &&
    raw.eventRetentionDays !== undefined &&
    Array.isArray(raw.suppressedDistinctIds) &&
    raw.dataDeletedAt !== undefined;
  return complete ? raw : { ...PROJECT_DEFAULTS, ...raw, anonymizeIps: raw.anonymizeIps === true };
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
  /** Deletions, oldest first (absent in files written before erasure existed). */
  readonly deletions: readonly Deletion[];
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
  readonly #deletionById: ReadonlyMap<string, Deletion>;

  constructor(readonly snapshot: CatalogSnapshot) {
    this.#deletionById = new Map(snapshot.deletions.map((d) => [d.id, d]));
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
      deletions: raw.deletions ?? [],
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

  /**
   * Undefined when there is no such project or the patch changes nothing. Suppressing past
   * MAX_SUPPRESSED_PER_PROJECT rejects with AppError `too_many_suppressed`.
   */
  withProjectPatch(id: number, patch: ProjectPatch): { state: CatalogState; project: Project } | undefined {
    const existing = this.#byId.get(id);
    if (!existing) return undefined;
    const project: Project = {
      ...existing,
      name: patch.name ?? existing.name,
      anonymizeIps: patch.anonymizeIps ?? existing.anonymizeIps,
      eventRetentionDays:
        patch.eventRetentionDays === undefined ? existing.eventRetentionDays : patch.eventRetentionDays,
      dataDeletedAt: patch.dataDeletedAt ?? existing.dataDeletedAt,
      suppressedDistinctIds: suppressions(existing, patch),
    };
    if (
      project.name === existing.name &&
      project.anonymizeIps === existing.anonymizeIps &&
      project.eventRetentionDays === existing.eventRetentionDays &&
      project.dataDeletedAt === existing.dataDeletedAt &&
      project.suppressedDistinctIds === existing.suppressedDistinctIds
    )
      return undefined;
    const projects = this.snapshot.projects.map((p) => (p.id === id ? project : p));
    return { state: new CatalogState({ ...this.snapshot, projects }), project };
  }

  /** Removes a project and its endpoints; undefined when neither is there. */
  withoutProject(id: number): CatalogState | undefined {
    if (!this.#byId.has(id) && !this.#endpointsOf.has(id)) return undefined;
    return new CatalogState({
      ...this.snapshot,
      projects: this.snapshot.projects.filter((p) => p.id !== id),
      endpoints: this.snapshot.endpoints.filter((e) => e.projectId !== id),
    });
  }

  deletion(id: string): Deletion | undefined {
    return this.#deletionById.get(id);
  }

  withDeletion(deletion: Deletion): CatalogState {
    if (this.#deletionById.has(deletion.id)) throw new Error(`a deletion ${deletion.id} already exists`);
    return new CatalogState({ ...this.snapshot, deletions: [...this.snapshot.deletions, deletion] });
  }

  /** Undefined when there is no such deletion. */
  withDeletionChanged(
    id: string,
    change: DeletionChange,
  ): { state: CatalogState; deletion: Deletion } | undefined {
    const current = this.#deletionById.get(id);
    if (!current) return undefined;
    const deletion = changedDeletion(current, change);
    const deletions = this.snapshot.deletions.map((d) => (d === current ? deletion : d));
    return { state: new CatalogState({ ...this.snapshot, deletions }), deletion };
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

/** A deletion with a change applied: the fields it sets, the others as they were. */
export function changedDeletion(current: Deletion, change: DeletionChange): Deletion {
  const set = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
  return { ...current, ...set };
}

/** A project's suppressions after a patch: the same array when it changes nothing (so it compares equal). */
function suppressions(existing: Project, patch: ProjectPatch): readonly string[] {
  const had = new Set(existing.suppressedDistinctIds);
  const add = (patch.suppress ?? []).filter((h) => !had.has(h));
  const remove = new Set((patch.unsuppress ?? []).filter((h) => had.has(h)));
  if (add.length === 0 && remove.size === 0) return existing.suppressedDistinctIds;
  const next = [...existing.suppressedDistinctIds.filter((h) => !remove.has(h)), ...new Set(add)];
  if (next.length > MAX_SUPPRESSED_PER_PROJECT) {
    throw new AppError('too_many_suppressed', {
      detail: `Project ${existing.id} would suppress ${next.length} distinct ids; the most is ${MAX_SUPPRESSED_PER_PROJECT}. Remove suppressions no longer needed (DELETE …/suppressions/).`,
      attr: 'suppress',
    });
  }
  return next;
}
