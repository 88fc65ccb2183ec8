import { randomUUID } from 'node:crypto';
import type {
  Deletion,
  Endpoint,
  NewDeletion,
  NewEndpoint,
  NewPersonalApiKey,
  Project,
} from '../core/ports.ts';
import { PROJECT_DEFAULTS, type StoredPersonalApiKey } from './catalog-state.ts';
import { generateKey, hashKey, maskKey } from './keys.ts';

/**
 * The records a catalog makes, whichever adapter stores them (the file, NATS KV): one definition, so the two
 * can never disagree on what a new key, endpoint or first start holds.
 */

/** What a first start made, so the CLI can tell the person starting Weir (once). */
export interface Bootstrap {
  readonly project: Project;
  /** The personal key's value, or undefined when it came from WEIR_BOOTSTRAP_PERSONAL_API_KEY. */
  readonly personalApiKey: string | undefined;
  readonly projectKeyFromEnv: boolean;
  readonly personalKeyFromEnv: boolean;
}

export interface BootstrapKeys {
  readonly bootstrapProjectApiKey: string | undefined;
  readonly bootstrapPersonalApiKey: string | undefined;
  /** Project 1's event retention in days (WEIR_EVENT_RETENTION_DAYS); 0 or absent: for ever. */
  readonly eventRetentionDays?: number;
}

/** A first start's project 1 and its `*` key (the keys' values from the environment when given). */
export function bootstrapRecords(env: BootstrapKeys): {
  project: Project;
  key: StoredPersonalApiKey;
  /** The personal key's value (shown once, unless it came from the environment). */
  personal: string;
} {
  const now = new Date().toISOString();
  const apiToken = env.bootstrapProjectApiKey ?? generateKey('phc_');
  const personal = env.bootstrapPersonalApiKey ?? generateKey('phx_');
  const key: StoredPersonalApiKey = {
    id: randomUUID(),
    label: 'bootstrap',
    valueHash: hashKey(personal),
    mask: maskKey(personal),
    scopes: ['*'],
    projects: [1],
    createdAt: now,
    createdBy: null,
    revokedAt: null,
  };
  return {
    project: {
      id: 1,
      name: 'Default project',
      apiToken,
      createdAt: now,
      ...PROJECT_DEFAULTS,
      eventRetentionDays: env.eventRetentionDays ? env.eventRetentionDays : null,
    },
    key,
    personal,
  };
}

/** A new project's fields but its id, which the adapter assigns. */
export function newProjectFields(
  name: string,
  eventRetentionDays: number | null = null,
): Omit<Project, 'id'> {
  return {
    name,
    apiToken: generateKey('phc_'),
    createdAt: new Date().toISOString(),
    ...PROJECT_DEFAULTS,
    eventRetentionDays,
  };
}

/** A deletion as recorded when it is accepted: queued, nothing done yet. */
export function newDeletion(input: NewDeletion): Deletion {
  const persons = input.kind === 'persons' ? input : undefined;
  return {
    id: randomUUID(),
    projectId: input.projectId,
    kind: input.kind,
    personIds: persons ? [...persons.personIds] : [],
    distinctIds: persons ? [...persons.distinctIds] : [],
    distinctIdCount: persons ? persons.distinctIds.length : 0,
    deleteEvents: persons ? persons.deleteEvents : true,
    suppress: persons ? persons.suppress : false,
    status: 'queued',
    createdAt: new Date().toISOString(),
    createdBy: input.createdBy,
    startedAt: null,
    finishedAt: null,
    attempts: 0,
    lastError: null,
    counts: null,
    lease: null,
    targets: null,
  };
}

/** What the CLI is told of a bootstrap it made: a key's value only when Weir generated it. */
export function bootstrapReport(env: BootstrapKeys, project: Project, personal: string): Bootstrap {
  return {
    project,
    personalApiKey: env.bootstrapPersonalApiKey === undefined ? personal : undefined,
    projectKeyFromEnv: env.bootstrapProjectApiKey !== undefined,
    personalKeyFromEnv: env.bootstrapPersonalApiKey !== undefined,
  };
}

/** A new personal API key: the record (its value hashed) and the value, shown once. */
export function newPersonalKey(input: NewPersonalApiKey): { key: StoredPersonalApiKey; value: string } {
  const value = generateKey('phx_');
  const key: StoredPersonalApiKey = {
    id: randomUUID(),
    label: input.label,
    valueHash: hashKey(value),
    mask: maskKey(value),
    scopes: [...input.scopes],
    projects: input.projects === '*' ? '*' : [...input.projects],
    createdAt: new Date().toISOString(),
    createdBy: input.createdBy,
    revokedAt: null,
  };
  return { key, value };
}

/** A new endpoint with its version 1. */
export function newEndpoint(projectId: number, input: NewEndpoint): Endpoint {
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    projectId,
    name: input.name,
    description: input.description,
    cacheAgeSeconds: input.cacheAgeSeconds,
    isActive: input.isActive,
    syncFrequency: input.syncFrequency,
    materializationBucket: input.materializationBucket,
    createdAt: now,
    updatedAt: now,
    versions: [
      {
        version: 1,
        query: input.query,
        variables: input.variables,
        isActive: true,
        isMaterialized: input.isMaterialized,
        createdAt: now,
        createdBy: input.createdBy,
      },
    ],
  };
}
