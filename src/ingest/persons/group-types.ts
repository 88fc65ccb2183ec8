import type { Store } from '../../core/ports.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { writeState, STATE_READ } from './state-writes.ts';

/** Group types a project may have: they map to the event columns `$group_0` … `$group_4`. */
export const MAX_GROUP_TYPES = 5;

export interface GroupTypeIndexes {
  /** Index of each type that has one (known before, or mapped now). */
  readonly indexes: ReadonlyMap<string, number>;
  /** Types refused because the project's five indexes are taken. */
  readonly refused: readonly string[];
  /** Commit of the mapping rows written for new types. */
  readonly written?: Promise<void>;
}

export interface GroupTypesDeps {
  readonly store: Store;
  readonly writer: BatchWriter;
}

/**
 * The per-project mapping of group type names to column indexes (`group_type_mapping`). A project's
 * mapping is loaded once and then kept whole in memory — it holds five names at most — and a new type
 * takes the lowest free index in the same synchronous stretch that checks it, so two actors can never
 * give one index to two types.
 */
export class GroupTypes {
  readonly #deps: GroupTypesDeps;
  readonly #projects = new Map<number, Promise<Map<string, number>>>();
  /** `project:type` whose mapping row failed to commit: written again on next use. */
  readonly #unsaved = new Set<string>();
  /** Every project's mapping as `preload` read it: a project not in it has none. */
  #preloaded: ReadonlyMap<number, Map<string, number>> | undefined;

  constructor(deps: GroupTypesDeps) {
    this.#deps = deps;
  }

  async indexes(projectId: number, types: readonly string[]): Promise<GroupTypeIndexes> {
    const mapping = await this.#mappingOf(projectId);
    // Synchronous from here: the check and the assignment of a new index cannot interleave.
    const indexes = new Map<string, number>();
    const refused: string[] = [];
    const fresh: string[] = [];
    for (const type of types) {
      let index = mapping.get(type);
      if (index === undefined) {
        index = freeIndex(mapping);
        if (index === undefined) {
          refused.push(type);
          continue;
        }
        mapping.set(type, index);
        fresh.push(type);
      } else if (this.#unsaved.delete(`${projectId}:${type}`)) {
        fresh.push(type);
      }
      indexes.set(type, index);
    }
    const rows = fresh.map((type) => ({
      project_id: projectId,
      group_type: type,
      group_type_index: mapping.get(type)!,
    }));
    const written = writeState(this.#deps.writer, [{ table: 'group_type_mapping', rows }], (failed) => {
      // The index stays taken in memory (events may already carry it); only the row is written again.
      if (failed) for (const type of fresh) this.#unsaved.add(`${projectId}:${type}`);
    });
    return { indexes, refused, written };
  }

  /**
   * Reads every project's mapping in one statement, so that no event waits for its project's (on the
   * embedded store, a read waits for whatever query is running). Only for the store's sole writer: a
   * project absent from what was read then has no mapping, and is given an empty one without a read.
   */
  async preload(): Promise<void> {
    const rows = await this.#deps.store.query<{
      project_id: string;
      group_type: string;
      group_type_index: number;
    }>('SELECT project_id, group_type, group_type_index FROM group_type_mapping FINAL', {}, STATE_READ);
    const read = new Map<number, Map<string, number>>();
    for (const r of rows) {
      const projectId = Number(r.project_id);
      let mapping = read.get(projectId);
      if (!mapping) read.set(projectId, (mapping = new Map<string, number>()));
      mapping.set(r.group_type, Number(r.group_type_index));
    }
    // Taken up on a project's first use: a project loaded before keeps what it has (types mapped since).
    this.#preloaded = read;
  }

  #mappingOf(projectId: number): Promise<Map<string, number>> {
    let mapping = this.#projects.get(projectId);
    if (!mapping && this.#preloaded) {
      mapping = Promise.resolve(this.#preloaded.get(projectId) ?? new Map<string, number>());
      this.#projects.set(projectId, mapping);
    } else if (!mapping) {
      mapping = this.#load(projectId);
      this.#projects.set(projectId, mapping);
      // A failed load is forgotten so the next event tries again.
      mapping.catch(() => this.#projects.delete(projectId));
    }
    return mapping;
  }

  async #load(projectId: number): Promise<Map<string, number>> {
    const rows = await this.#deps.store.query<{ group_type: string; group_type_index: number }>(
      `SELECT group_type, group_type_index FROM group_type_mapping FINAL WHERE project_id = {project:UInt64}`,
      { project: projectId },
      STATE_READ,
    );
    return new Map(rows.map((r) => [r.group_type, Number(r.group_type_index)]));
  }
}

function freeIndex(mapping: ReadonlyMap<string, number>): number | undefined {
  const taken = new Set(mapping.values());
  for (let i = 0; i < MAX_GROUP_TYPES; i++) if (!taken.has(i)) return i;
  return undefined;
}

/** Distinct refused group types remembered for "warn once"; past it the memory starts over. */
const MAX_REMEMBERED_REFUSALS = 10_000;

/**
 * The group types of each project this process has refused (past `MAX_GROUP_TYPES`), so an ordinary event
 * naming one warns once, not per event. Only a memory for warnings: forgetting it costs a repeated warning.
 */
export class TypeRefusals {
  readonly #seen = new Set<string>();

  /** True the first time this process refuses `type` of the project. */
  first(projectId: number, type: string): boolean {
    const key = `${projectId}:${type}`;
    if (this.#seen.has(key)) return false;
    if (this.#seen.size >= MAX_REMEMBERED_REFUSALS) this.#seen.clear();
    this.#seen.add(key);
    return true;
  }
}
