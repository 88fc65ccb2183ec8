import type { Row, Store } from '../../core/ports.ts';
import { chTime } from '../../store/ch-time.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { BatchedLoader } from './batched-loader.ts';
import { GroupTypes, TypeRefusals, type GroupTypeIndexes } from './group-types.ts';
import type { KnownIds } from './known-ids.ts';
import { PinnedLru } from './pinned-lru.ts';
import { allCommitted, writeState, STATE_READ } from './state-writes.ts';

export interface GroupStateConfig {
  /** Groups kept in memory (more only while their writes are in flight). */
  readonly cacheSize: number;
}

export interface GroupStateDeps {
  readonly store: Store;
  readonly writer: BatchWriter;
  /**
   * Which `project:index:key` groups may be stored, when this process is the store's sole writer: a
   * `$groupidentify` of a group it rules out creates the group without looking it up (see KnownIds).
   */
  readonly knownKeys?: KnownIds;
}

interface Group {
  readonly groupType: string;
  /** Replaced, never mutated (a queued row may still be serialised from it). */
  properties: Record<string, unknown>;
  readonly createdAt: number;
  version: number;
  pending: number;
  stale: boolean;
}

type StoredGroup = Pick<Group, 'properties' | 'createdAt' | 'version'>;

export type IdentifyOutcome =
  { readonly kind: 'ok'; readonly written?: Promise<void> } | { readonly kind: 'type_limit' };

/**
 * Groups (SPEC §2): `$groupidentify` creates or updates group `(type, key)`, its `$group_set` merged one
 * level deep; `$groups` on any event maps its types to column indexes. Groups are cached like persons,
 * and changed in the same two phases: await the load, then read the cache again and apply synchronously.
 */
export class GroupState {
  readonly #types: GroupTypes;
  readonly #cache: PinnedLru<Group>;
  readonly #loader: BatchedLoader<StoredGroup>;
  readonly #writer: BatchWriter;
  readonly #knownKeys: KnownIds | undefined;
  readonly #refusals = new TypeRefusals();

  constructor(config: GroupStateConfig, deps: GroupStateDeps) {
    this.#types = new GroupTypes(deps);
    this.#cache = new PinnedLru<Group>({ max: config.cacheSize, isPinned: (g) => g.pending > 0 });
    this.#loader = new BatchedLoader({ maxKeys: 10_000 }, (keys) => loadGroups(deps.store, keys));
    this.#writer = deps.writer;
    this.#knownKeys = deps.knownKeys;
  }

  /** Reads every project's group types now (only for the store's sole writer; see `GroupTypes.preload`). */
  preloadTypes(): Promise<void> {
    return this.#types.preload();
  }

  /** Column indexes of group types, mapping new types while the project has free indexes. */
  typeIndexes(projectId: number, types: readonly string[]): Promise<GroupTypeIndexes> {
    return this.#types.indexes(projectId, types);
  }

  /** True the first time this process refuses a type of a project: ordinary events warn once, not per event. */
  firstRefusal(projectId: number, type: string): boolean {
    return this.#refusals.first(projectId, type);
  }

  async identify(
    projectId: number,
    groupType: string,
    groupKey: string,
    set: Record<string, unknown>,
    timestamp: number,
  ): Promise<IdentifyOutcome> {
    const types = await this.#types.indexes(projectId, [groupType]);
    const index = types.indexes.get(groupType);
    if (index === undefined) return { kind: 'type_limit' };
    const key = `${projectId}:${index}:${groupKey}`;
    const lookUp = !this.#cached(key) && (this.#knownKeys?.mightHave(key) ?? true);
    const loaded = lookUp ? await this.#loader.load([key]) : undefined;
    // Synchronous from here: a concurrent update of the same group is either wholly before or after.
    let group = this.#cached(key);
    if (!group) {
      const stored = loaded?.get(key);
      // Version -1 marks a group the store does not have: it is written even when `$group_set` is empty.
      group = stored
        ? { ...stored, groupType, pending: 0, stale: false }
        : { groupType, properties: {}, createdAt: timestamp, version: -1, pending: 0, stale: false };
      this.#cache.set(key, group);
      // Stored already, or about to be: a new group is always written.
      this.#knownKeys?.add(key);
    }
    const written = this.#update(group, projectId, index, groupKey, set);
    // Only now, with what was written pinned, may the cache shrink back to its bound.
    this.#cache.trim();
    return { kind: 'ok', written: allCommitted([types.written, written]) };
  }

  #update(
    group: Group,
    projectId: number,
    index: number,
    groupKey: string,
    set: Record<string, unknown>,
  ): Promise<void> | undefined {
    const next = mergeOneLevel(group.properties, set);
    if (next === group.properties && group.version >= 0) return undefined;
    group.properties = next;
    group.version++;
    group.pending++;
    const row = groupRow(projectId, index, groupKey, group);
    return writeState(this.#writer, [{ table: 'groups', rows: [row] }], (failed) => {
      group.pending--;
      if (failed) group.stale = true;
    });
  }

  #cached(key: string): Group | undefined {
    const g = this.#cache.get(key);
    if (g?.stale) {
      this.#cache.delete(key);
      return undefined;
    }
    return g;
  }
}

/**
 * `$group_set` merged one level deep: its keys replace the group's (a nested object is replaced whole),
 * keys it does not name are kept. The same object back when nothing changed, so no row is written.
 */
export function mergeOneLevel(
  current: Record<string, unknown>,
  set: Record<string, unknown>,
): Record<string, unknown> {
  const changed = Object.entries(set).some(
    ([k, v]) => !Object.hasOwn(current, k) || JSON.stringify(current[k]) !== JSON.stringify(v),
  );
  return changed ? { ...current, ...set } : current;
}

function groupRow(projectId: number, index: number, groupKey: string, g: Group): Row {
  return {
    project_id: projectId,
    group_type_index: index,
    group_type: g.groupType,
    group_key: groupKey,
    properties: JSON.stringify(g.properties),
    created_at: chTime(g.createdAt),
    version: g.version,
  };
}

/**
 * Every `project:index:key` of a stored group, a page at a time in primary-key order: for KnownIds. Each
 * page is a short statement, so the store's other work is not held up for long behind them.
 */
export async function* groupKeys(store: Store, pageSize = 20_000): AsyncGenerator<string[]> {
  const types = await store.query<{ project_id: string; group_type_index: number }>(
    'SELECT DISTINCT project_id, group_type_index FROM groups ORDER BY project_id, group_type_index',
    {},
    STATE_READ,
  );
  for (const { project_id: project, group_type_index: index } of types) {
    let after = '';
    for (;;) {
      const rows = await store.query<{ group_key: string }>(
        `SELECT DISTINCT group_key FROM groups
         WHERE project_id = {project:UInt64} AND group_type_index = {index:UInt8} AND group_key > {after:String}
         ORDER BY group_key LIMIT {limit:UInt64}`,
        { project, index, after, limit: pageSize },
        STATE_READ,
      );
      if (rows.length > 0) yield rows.map((r) => `${project}:${index}:${r.group_key}`);
      if (rows.length < pageSize) break;
      after = rows.at(-1)!.group_key;
    }
  }
}

/** Groups by `project:index:key`, in one query for any number of them. */
async function loadGroups(store: Store, keys: readonly string[]): Promise<Map<string, StoredGroup>> {
  const projects = new Set<number>();
  const indexes = new Set<number>();
  const groupKeys = new Set<string>();
  for (const key of keys) {
    const a = key.indexOf(':');
    const b = key.indexOf(':', a + 1);
    projects.add(Number(key.slice(0, a)));
    indexes.add(Number(key.slice(a + 1, b)));
    groupKeys.add(key.slice(b + 1));
  }
  const rows = await store.query<{
    project_id: string;
    group_type_index: number;
    group_key: string;
    properties: string;
    created_at: string;
    version: string;
  }>(
    `SELECT project_id, group_type_index, group_key, properties,
            toUnixTimestamp64Milli(created_at) AS created_at, version
     FROM groups FINAL
     WHERE project_id IN {projects:Array(UInt64)} AND group_type_index IN {indexes:Array(UInt8)}
       AND group_key IN {keys:Array(String)}`,
    { projects: [...projects], indexes: [...indexes], keys: [...groupKeys] },
    STATE_READ,
  );
  const wanted = new Set(keys);
  const found = new Map<string, StoredGroup>();
  for (const r of rows) {
    const key = `${r.project_id}:${r.group_type_index}:${r.group_key}`;
    if (!wanted.has(key)) continue;
    let properties: Record<string, unknown> = {};
    try {
      const v: unknown = JSON.parse(r.properties);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) properties = v as Record<string, unknown>;
    } catch {
      // A row this process did not write cleanly: treat as no properties rather than fail the batch.
    }
    found.set(key, { properties, createdAt: Number(r.created_at), version: Number(r.version) });
  }
  return found;
}
