/**
 * What a table holds on disk, as the lifecycle benchmarks report it: its active parts (what reads use), the
 * parts replaced and not yet removed (a merge's or a mutation's sources, removed by the engine's cleanup some
 * seconds later), `du` of its directory (hard links counted once: a mutation that relinks a column costs
 * nothing), and its rows both as reads see them and as the parts still hold them (lightweight-deleted rows
 * are masked, not gone, until their part is rewritten).
 */
import { execFileSync } from 'node:child_process';
import type { Store } from '../../src/core/ports.ts';

export interface TableDisk {
  readonly activeParts: number;
  readonly activeBytes: number;
  readonly outdatedParts: number;
  readonly outdatedBytes: number;
  /** `du -sb` of the table's directory. */
  readonly duBytes: number;
  /** Rows a read sees. */
  readonly rows: number;
  /** Rows the active parts hold, masked ones included. */
  readonly storedRows: number;
}

export async function tableDisk(store: Store, table: string): Promise<TableDisk> {
  const parts = await store.query<{ active: number; parts: string; bytes: string }>(
    `SELECT active, count() AS parts, sum(bytes_on_disk) AS bytes FROM system.parts
     WHERE database = currentDatabase() AND table = {table:String} GROUP BY active`,
    { table },
  );
  const of = (active: number): { parts: number; bytes: number } => {
    const r = parts.find((p) => Number(p.active) === active);
    return { parts: Number(r?.parts ?? 0), bytes: Number(r?.bytes ?? 0) };
  };
  const [counts] = await store.query<{ rows: string }>(`SELECT count() AS rows FROM ${table}`);
  const [stored] = await store.query<{ rows: string }>(
    `SELECT count() AS rows FROM ${table} SETTINGS apply_deleted_mask = 0`,
  );
  return {
    activeParts: of(1).parts,
    activeBytes: of(1).bytes,
    outdatedParts: of(0).parts,
    outdatedBytes: of(0).bytes,
    duBytes: await duBytes(store, table),
    rows: Number(counts?.rows ?? 0),
    storedRows: Number(stored?.rows ?? 0),
  };
}

async function duBytes(store: Store, table: string): Promise<number> {
  const [t] = await store.query<{ path: string }>(
    `SELECT data_paths[1] AS path FROM system.tables WHERE database = currentDatabase() AND name = {table:String}`,
    { table },
  );
  if (!t?.path) return 0;
  return Number(execFileSync('du', ['-sb', t.path], { encoding: 'utf8' }).split('\t')[0]);
}

/**
 * Polls until the engine has removed the table's replaced parts from disk, or `deadlineMs` passes: the
 * milliseconds it took, or undefined at the deadline.
 */
export async function outdatedRemoved(
  store: Store,
  table: string,
  deadlineMs: number,
): Promise<number | undefined> {
  const started = performance.now();
  for (;;) {
    const [left] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND table = {table:String} AND NOT active`,
      { table },
    );
    if (Number(left?.n ?? 0) === 0) return performance.now() - started;
    if (performance.now() - started > deadlineMs) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);
