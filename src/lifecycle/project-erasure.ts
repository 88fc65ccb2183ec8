import type { ObjectStore } from '../core/object-store.ts';
import type { Catalog, Deletion, DeletionCounts, Store } from '../core/ports.ts';
import { countAndDelete, NO_COUNTS, type PersonForgetter } from './erasure.ts';

/** Every table of Weir's that holds a project's rows, with the count a deletion reports them under. */
const PROJECT_TABLES: readonly { table: string; count: keyof DeletionCounts; counted?: string }[] = [
  { table: 'events', count: 'events' },
  { table: 'quarantine', count: 'quarantined' },
  { table: 'ingestion_warnings', count: 'warnings' },
  { table: 'person_distinct_ids', count: 'distinctIds', counted: 'uniqExact(distinct_id)' },
  { table: 'persons', count: 'persons', counted: 'uniqExact(id)' },
  { table: 'groups', count: 'other' },
  { table: 'group_type_mapping', count: 'other' },
  { table: 'property_definitions', count: 'other' },
];

export interface ProjectErasureDeps {
  readonly catalog: Catalog;
  readonly store: Store;
  readonly ingest?: PersonForgetter;
  readonly objects?: ObjectStore;
  readonly properties?: { forgetProject(projectId: number): void };
  readonly progress: (counts: DeletionCounts) => Promise<void>;
}

/**
 * A deleted project's data, a step at a time, each safe to run again (docs/operations.md, "Deleting a
 * project"): what the catalog still holds of it, this process's property definitions of it, its rows in every
 * table, its materializations in object storage.
 */
export async function eraseProject(deletion: Deletion, deps: ProjectErasureDeps): Promise<DeletionCounts> {
  const project = deletion.projectId;
  await deps.catalog.removeProjectRecords(project);
  deps.properties?.forgetProject(project);
  // Every row written before now is committed, so the deletes meet it; ingest drops the project's events
  // from here on (IngestDeps.projectExists).
  await deps.ingest?.forgetPersons(project, [], []);
  let counts: DeletionCounts = { ...NO_COUNTS, ...deletion.counts };
  for (const { table, count, counted } of PROJECT_TABLES) {
    const where = 'project_id = {project:UInt64}';
    const n = await countAndDelete(deps.store, table, where, { project }, counted);
    if (n === 0) continue;
    counts = { ...counts, [count]: counts[count] + n };
    await deps.progress(counts);
  }
  // As a person erasure does (erasure.ts): by the recorded counts, once every table's rows are hidden.
  for (const { table, count } of PROJECT_TABLES) if (counts[count] > 0) await deps.store.purgeDeleted(table);
  if (deps.objects) {
    let objects = 0;
    for await (const o of deps.objects.list(`materializations/${project}/`)) {
      await deps.objects.delete(o.key);
      objects++;
    }
    if (objects > 0) {
      counts = { ...counts, other: counts.other + objects };
      await deps.progress(counts);
    }
  }
  return counts;
}
