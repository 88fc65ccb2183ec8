import type { Metrics } from '../../core/metrics.ts';
import { KvConflict } from '../../kv/cas-bucket.ts';
import { chTime } from '../../store/ch-time.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { mergeOneLevel } from '../persons/group-state.ts';
import { TypeRefusals, type GroupTypeIndexes } from '../persons/group-types.ts';
import { PinnedLru } from '../persons/pinned-lru.ts';
import type { Groups, IdentifyOutcome } from '../persons/persons.ts';
import { allCommitted, writeState } from '../persons/state-writes.ts';
import type { KvBucket } from './kv-bucket.ts';
import { SharedGroupTypes } from './shared-group-types.ts';
import { groupKey, projectOfKey } from './state-keys.ts';

export interface SharedGroupsConfig {
  /** Groups kept in memory. */
  readonly cacheSize: number;
}

export interface SharedGroupsDeps {
  readonly bucket: KvBucket;
  readonly writer: BatchWriter;
  readonly metrics?: Metrics;
}

/** `g.<project>.<type index>.<group key>` */
interface GroupRecord {
  readonly properties: Record<string, unknown>;
  readonly createdAt: number;
}

interface SeenGroup {
  readonly record: GroupRecord;
  readonly revision: number;
}

/** Rounds of read-then-write of one `$groupidentify` before it fails (its batch is then retried). */
const MAX_ATTEMPTS = 64;

/**
 * Groups (SPEC §2, GroupState's rules) when several ingest processes share them: each group is a record in
 * the shared bucket changed by compare-and-set, so two processes updating one group at once both get their
 * `$group_set` in. The store's `groups` rows are the projection, versioned by the record's revision. A row is
 * written whenever a `$groupidentify` changes the group, and when it read the group from the bucket rather
 * than the cache, so a row lost with a process that died is written again by the next identify.
 */
export class SharedGroups implements Groups {
  readonly #types: SharedGroupTypes;
  readonly #bucket: KvBucket;
  readonly #writer: BatchWriter;
  readonly #metrics: Metrics | undefined;
  readonly #cacheSize: number;
  #cache: PinnedLru<SeenGroup>;
  readonly #refusals = new TypeRefusals();

  constructor(config: SharedGroupsConfig, deps: SharedGroupsDeps) {
    this.#types = new SharedGroupTypes(deps);
    this.#bucket = deps.bucket;
    this.#writer = deps.writer;
    this.#metrics = deps.metrics;
    this.#cacheSize = config.cacheSize;
    this.#cache = new PinnedLru<SeenGroup>({ max: config.cacheSize, isPinned: () => false });
  }

  /** A watched change of a `g.` record (any process's). */
  applyGroup(key: string, value: unknown, revision: number): void {
    const had = this.#cache.peek(key);
    if (!had || had.revision >= revision) return;
    if (value === undefined) this.#cache.delete(key);
    else this.#cache.set(key, { record: value as GroupRecord, revision });
  }

  /** A watched change of a `t.` record. */
  applyTypes(key: string, value: unknown, revision: number): void {
    this.#types.apply(projectOfKey(key), value, revision);
  }

  reset(): void {
    this.#cache = new PinnedLru<SeenGroup>({ max: this.#cacheSize, isPinned: () => false });
    this.#types.reset();
  }

  /** Nothing to preload: a project's types are read on its first use, and kept current by the watch. */
  preloadTypes(): Promise<void> {
    return Promise.resolve();
  }

  typeIndexes(projectId: number, types: readonly string[]): Promise<GroupTypeIndexes> {
    return this.#types.indexes(projectId, types);
  }

  firstRefusal(projectId: number, type: string): boolean {
    return this.#refusals.first(projectId, type);
  }

  async identify(
    projectId: number,
    groupType: string,
    key: string,
    set: Record<string, unknown>,
    timestamp: number,
  ): Promise<IdentifyOutcome> {
    const types = await this.#types.indexes(projectId, [groupType]);
    const index = types.indexes.get(groupType);
    if (index === undefined) return { kind: 'type_limit' };
    const k = groupKey(projectId, index, key);
    for (let attempt = 1; ; attempt++) {
      let seen = this.#cache.get(k);
      const read = seen === undefined;
      if (read) {
        const e = await this.#bucket.get<GroupRecord>(k);
        seen = e && { record: e.value, revision: e.revision };
      }
      let record: GroupRecord;
      let revision: number;
      try {
        if (!seen) {
          // A new group is written even when `$group_set` is empty.
          record = { properties: mergeOneLevel({}, set), createdAt: timestamp };
          revision = await this.#bucket.create(k, record);
        } else {
          const properties = mergeOneLevel(seen.record.properties, set);
          if (properties === seen.record.properties && !read) return { kind: 'ok', written: types.written };
          record = properties === seen.record.properties ? seen.record : { ...seen.record, properties };
          revision =
            record === seen.record ? seen.revision : await this.#bucket.update(k, record, seen.revision);
        }
      } catch (err) {
        if (!(err instanceof KvConflict) || attempt >= MAX_ATTEMPTS) throw err;
        this.#cache.delete(k);
        this.#metrics?.ingestSharedConflicts.inc({ record: 'group' });
        continue;
      }
      this.#cache.set(k, { record, revision });
      this.#cache.trim();
      const row = {
        project_id: projectId,
        group_type_index: index,
        group_type: groupType,
        group_key: key,
        properties: JSON.stringify(record.properties),
        created_at: chTime(record.createdAt),
        version: revision,
      };
      const written = writeState(this.#writer, [{ table: 'groups', rows: [row] }], () => undefined);
      return { kind: 'ok', written: allCommitted([types.written, written]) };
    }
  }
}
