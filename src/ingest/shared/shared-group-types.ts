import type { Metrics } from '../../core/metrics.ts';
import type { Row } from '../../core/ports.ts';
import { KvConflict } from '../../kv/cas-bucket.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { MAX_GROUP_TYPES, type GroupTypeIndexes } from '../persons/group-types.ts';
import { writeState } from '../persons/state-writes.ts';
import type { KvBucket } from './kv-bucket.ts';
import { typesKey } from './state-keys.ts';

/** `t.<project>`: the project's group types, each at its column index. */
interface TypesRecord {
  readonly types: readonly string[];
}

/** A project's types as last read; revision 0: the project has none in the bucket. */
interface SeenTypes {
  readonly types: readonly string[];
  readonly revision: number;
}

/** Rounds of read-then-append before giving up; each lost round means another process added a type. */
const MAX_ATTEMPTS = 16;

/**
 * The group types of each project (`group_type_mapping`) shared by every ingest process: one record per
 * project in the bucket, the types in index order. A new type is appended by compare-and-set, so two
 * processes can never give one index to two types; a lost append reads the record again (another process
 * may have added this very type). A type's index never changes once given, so a cached list is always right
 * as far as it goes: a type missing from it is looked up again before it is added.
 *
 * The store's `group_type_mapping` rows are the projection: written when a type is added, and once for every
 * type of a project the first time this process uses it (a process that added a type and died before its
 * row was committed leaves it to the next one).
 */
export class SharedGroupTypes {
  readonly #bucket: KvBucket;
  readonly #writer: BatchWriter;
  readonly #metrics: Metrics | undefined;
  readonly #cache = new Map<number, SeenTypes>();
  /** Projects whose every type this process has written a row for. */
  readonly #projected = new Set<number>();

  constructor(deps: { bucket: KvBucket; writer: BatchWriter; metrics?: Metrics }) {
    this.#bucket = deps.bucket;
    this.#writer = deps.writer;
    this.#metrics = deps.metrics;
  }

  /** A watched change of a `t.` record. */
  apply(projectId: number, value: unknown, revision: number): void {
    const had = this.#cache.get(projectId);
    if (had && had.revision >= revision) return;
    if (value === undefined) this.#cache.delete(projectId);
    else this.#cache.set(projectId, { types: (value as TypesRecord).types, revision });
  }

  reset(): void {
    this.#cache.clear();
  }

  async indexes(projectId: number, types: readonly string[]): Promise<GroupTypeIndexes> {
    const cached = this.#cache.get(projectId);
    let seen = cached ?? (await this.#read(projectId));
    let fresh = cached === undefined;
    const added: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const missing = [...new Set(types)].filter((t) => !seen.types.includes(t));
      if (missing.length === 0) break;
      // The cache may be behind: another process may have added these since.
      if (!fresh) {
        seen = await this.#read(projectId);
        fresh = true;
        continue;
      }
      const room = MAX_GROUP_TYPES - seen.types.length;
      if (room <= 0) break;
      const next = [...seen.types, ...missing.slice(0, room)];
      try {
        const value: TypesRecord = { types: next };
        const revision =
          seen.revision === 0
            ? await this.#bucket.create(typesKey(projectId), value)
            : await this.#bucket.update(typesKey(projectId), value, seen.revision);
        added.push(...missing.slice(0, room));
        seen = { types: next, revision };
        this.#remember(projectId, seen);
        break;
      } catch (err) {
        if (!(err instanceof KvConflict) || attempt >= MAX_ATTEMPTS) throw err;
        this.#metrics?.ingestSharedConflicts.inc({ record: 'types' });
        seen = await this.#read(projectId);
      }
    }
    const indexes = new Map<string, number>();
    const refused: string[] = [];
    for (const type of types) {
      const index = seen.types.indexOf(type);
      if (index >= 0) indexes.set(type, index);
      else refused.push(type);
    }
    const project = !this.#projected.has(projectId);
    const rows: Row[] = (project ? seen.types : added).map((type) => ({
      project_id: projectId,
      group_type: type,
      group_type_index: seen.types.indexOf(type),
    }));
    if (project) this.#projected.add(projectId);
    const written = writeState(this.#writer, [{ table: 'group_type_mapping', rows }], (failed) => {
      // Written again, every type of the project, on its next use.
      if (failed) this.#projected.delete(projectId);
    });
    return { indexes, refused, written };
  }

  async #read(projectId: number): Promise<SeenTypes> {
    const e = await this.#bucket.get<TypesRecord>(typesKey(projectId));
    const seen = e ? { types: e.value.types, revision: e.revision } : { types: [], revision: 0 };
    this.#remember(projectId, seen);
    return this.#cache.get(projectId)!;
  }

  #remember(projectId: number, seen: SeenTypes): void {
    const had = this.#cache.get(projectId);
    if (!had || had.revision <= seen.revision) this.#cache.set(projectId, seen);
  }
}
