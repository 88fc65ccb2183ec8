import type { Deletion, DeletionCounts, Store } from '../core/ports.ts';

/**
 * What erasing persons does to the store (SPEC §3, docs/operations.md "Erasure"), a step at a time, each
 * step safe to run again: a run after a crash does what is left and redoes the rest harmlessly.
 */

/** What the runner needs of this process's ingest: to stop using persons it erases. */
export interface PersonForgetter {
  forgetPersons(
    projectId: number,
    personIds: readonly string[],
    distinctIds: readonly string[],
  ): Promise<void>;
}

export interface Targets {
  readonly personIds: readonly string[];
  readonly distinctIds: readonly string[];
}

export const NO_COUNTS: DeletionCounts = {
  persons: 0,
  distinctIds: 0,
  events: 0,
  quarantined: 0,
  warnings: 0,
  other: 0,
};

/**
 * Every person and distinct id a deletion reaches: the persons asked for by uuid and those the distinct ids
 * asked for point at, with every distinct id of all of them. Read before anything is deleted (the links
 * that lead from an id to its person go with the person).
 */
export async function findTargets(store: Store, deletion: Deletion): Promise<Targets> {
  const project = deletion.projectId;
  const persons = new Set(deletion.personIds);
  if (deletion.distinctIds.length > 0) {
    const rows = await store.query<{ person: string }>(
      `SELECT DISTINCT toString(person_id) AS person FROM person_distinct_ids FINAL
       WHERE project_id = {project:UInt64} AND distinct_id IN {ids:Array(String)} AND is_deleted = 0`,
      { project, ids: deletion.distinctIds },
    );
    for (const r of rows) persons.add(r.person);
  }
  const distinctIds = new Set(deletion.distinctIds);
  if (persons.size > 0) {
    const rows = await store.query<{ id: string }>(
      `SELECT DISTINCT distinct_id AS id FROM person_distinct_ids FINAL
       WHERE project_id = {project:UInt64} AND person_id IN {persons:Array(UUID)} AND is_deleted = 0`,
      { project, persons: [...persons] },
    );
    for (const r of rows) distinctIds.add(r.id);
  }
  if (distinctIds.size > 0) {
    // Every version of their links, not only the newest: a person merged into this one is a row of its own
    // (deleted, with the properties it had), and an older link names it. Deleting only the newest version of
    // a ReplacingMergeTree key would bring the older one back.
    const rows = await store.query<{ person: string }>(
      `SELECT DISTINCT toString(person_id) AS person FROM person_distinct_ids
       WHERE project_id = {project:UInt64} AND distinct_id IN {ids:Array(String)}`,
      { project, ids: [...distinctIds] },
    );
    for (const r of rows) persons.add(r.person);
  }
  return { personIds: [...persons].sort(), distinctIds: [...distinctIds].sort() };
}

/** One table's rows of the targets: what is counted, then deleted. */
interface Erasable {
  readonly table: string;
  readonly count: keyof DeletionCounts;
  /** What is counted: rows, or the records they are versions of. @default 'count()' */
  readonly counted?: string;
  readonly where: string;
  /** Only when the deletion erases events too. */
  readonly events?: boolean;
}

/** A column of a row set aside in the quarantine: rows are JSON objects, or arrays in the order of `columns`. */
function quarantined(column: string): string {
  return `if(empty(columns), JSONExtractString(base64Decode(row), '${column}'),
     JSONExtractString(base64Decode(row), toInt64(indexOf(columns, '${column}'))))`;
}

const ERASABLE: readonly Erasable[] = [
  {
    table: 'events',
    count: 'events',
    where: 'distinct_id IN {ids:Array(String)} OR person_id IN {persons:Array(UUID)}',
    events: true,
  },
  {
    table: 'quarantine',
    count: 'quarantined',
    where: `${quarantined('distinct_id')} IN {ids:Array(String)}
       OR ${quarantined('person_id')} IN {personTexts:Array(String)}
       OR (target_table = 'persons' AND ${quarantined('id')} IN {personTexts:Array(String)})`,
  },
  {
    table: 'ingestion_warnings',
    count: 'warnings',
    where: `JSONExtractString(details, 'distinctId') IN {ids:Array(String)}
       OR JSONExtractString(details, 'sourcePersonDistinctId') IN {ids:Array(String)}
       OR JSONExtractString(details, 'targetPersonDistinctId') IN {ids:Array(String)}`,
  },
  // The links before the persons: a crash between the two leaves persons no id reaches, never an id that
  // reaches a deleted person's row.
  {
    table: 'person_distinct_ids',
    count: 'distinctIds',
    counted: 'uniqExact(distinct_id)',
    // Every version of the ids' links: one left behind would be the newest, and name a person again.
    where: 'person_id IN {persons:Array(UUID)} OR distinct_id IN {ids:Array(String)}',
  },
  { table: 'persons', count: 'persons', counted: 'uniqExact(id)', where: 'id IN {persons:Array(UUID)}' },
];

/**
 * Deletes the targets' rows from every table that holds them, counting them first; `progress` is told the
 * counts after each table, so a run cut short has recorded what it did. Then the tables deleted from are
 * purged (`Store.purgeDeleted`), so the erased rows leave the disk too.
 */
export async function eraseTargets(
  store: Store,
  deletion: Deletion,
  targets: Targets,
  progress: (counts: DeletionCounts) => Promise<void>,
): Promise<DeletionCounts> {
  let counts = { ...NO_COUNTS, ...deletion.counts };
  if (targets.personIds.length === 0 && targets.distinctIds.length === 0) return counts;
  const params = {
    project: deletion.projectId,
    ids: targets.distinctIds,
    persons: targets.personIds,
    personTexts: targets.personIds,
  };
  for (const e of ERASABLE) {
    if (e.events && !deletion.deleteEvents) continue;
    const where = `project_id = {project:UInt64} AND (${e.where})`;
    const n = await countAndDelete(store, e.table, where, params, e.counted);
    if (n === 0) continue;
    counts = { ...counts, [e.count]: counts[e.count] + n };
    await progress(counts);
  }
  // After every delete, so the rows are hidden everywhere before the slow part. By the recorded counts, not
  // this run's: a run after a crash finds nothing left to delete, but may not have purged yet.
  for (const e of ERASABLE) if (counts[e.count] > 0) await store.purgeDeleted(e.table);
  return counts;
}

/**
 * Counts what `where` selects in `table` (rows, or `counted`: the records they are versions of) and deletes it
 * when there is any: the count. Every erasure, project deletion and retention sweep deletes this way.
 */
export async function countAndDelete(
  store: Store,
  table: string,
  where: string,
  params: Record<string, unknown>,
  counted = 'count()',
): Promise<number> {
  const [found] = await store.query<{ n: string | number }>(
    `SELECT ${counted} AS n FROM ${table} WHERE ${where}`,
    params,
  );
  const n = Number(found?.n ?? 0);
  if (n > 0) await store.deleteRows(table, where, params);
  return n;
}
