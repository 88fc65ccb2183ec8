import type { QueryOptions, Row } from '../../core/ports.ts';
import type { BatchWriter } from '../batch-writer.ts';

/**
 * The options of ingest's state lookups (persons, groups, group types): what this process wrote stays pinned
 * in memory until it is visible (see `writeState`), so a lookup never needs rows the store has not shown yet,
 * and need not make the store show them first.
 */
export const STATE_READ: QueryOptions = { fresh: false };

/** Rows for one table. */
export interface TableRows {
  readonly table: string;
  readonly rows: readonly Row[];
}

/**
 * Writes state rows (persons, groups) through the same group-commit writer as the events, so they land in
 * the same inserts and a batch is answered only once they are committed. `settled` runs when the write has
 * failed (`failed`: drop what was kept in memory) or once it is committed and visible to the store's state
 * lookups (unpin: from then on a reload from the store brings it back). The returned promise is the commit.
 * Returns undefined when there is nothing to write.
 */
export function writeState(
  writer: BatchWriter,
  tables: readonly TableRows[],
  settled: (failed: boolean) => void,
): Promise<void> | undefined {
  const commits = tables.filter((t) => t.rows.length > 0).map((t) => writer.write(t.table, t.rows));
  const all = allCommitted(commits);
  if (!all) {
    settled(false);
    return undefined;
  }
  all.then(
    () => writer.visible().then(() => settled(false)),
    () => settled(true),
  );
  return all;
}

/**
 * One promise for several commits, or undefined for none. It is marked handled here because a batch whose
 * later event fails never collects it; whoever does collect it still sees the rejection.
 */
export function allCommitted(commits: readonly (Promise<void> | undefined)[]): Promise<void> | undefined {
  const present = commits.filter((c): c is Promise<void> => c !== undefined);
  if (present.length === 0) return undefined;
  const all = present.length === 1 ? present[0]! : Promise.all(present).then(() => undefined);
  all.catch(() => undefined);
  return all;
}
