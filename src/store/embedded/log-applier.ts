import { jsonArrayParts, jsonMemberParts } from '../json-rows.ts';
import { CheckedInserts, type CheckedInsertsDeps } from '../refused-rows.ts';
import type { ChdbClient } from './chdb-client.ts';
import type { LogFrame } from './commit-log.ts';

export interface LogApplierDeps {
  readonly engine: Pick<ChdbClient, 'insertRaw'>;
  /** Sets aside the rows of a block the engine refused (the store's quarantine). */
  readonly setAside: CheckedInsertsDeps['setAside'];
}

/**
 * Moves a block of the commit log (its oldest frames) into the engine's tables: one insert per table and
 * form (rows as objects, or as values of one column list), each under the block's deduplication token. A row
 * the engine refuses is found by bisection (refused-rows.ts) and set aside; the rest of its block is applied.
 */
export class LogApplier {
  readonly #inserts: CheckedInserts;

  constructor(deps: LogApplierDeps) {
    this.#inserts = new CheckedInserts({
      insert: (table, data, token, columns) => deps.engine.insertRaw(table, data, token, columns),
      setAside: deps.setAside,
    });
  }

  /** Inserts the rows of `block` under `token`; resolves with how many rows it held. */
  async apply(block: readonly LogFrame[], token: string): Promise<number> {
    // One insert per table and form: rows as objects, or as values of one column list.
    const inserts = new Map<
      string,
      { table: string; columns: readonly string[] | undefined; parts: Buffer[] }
    >();
    let rows = 0;
    for (const f of block) {
      rows += f.rows;
      const key = f.columns ? `${f.table}(${f.columns.join(',')})` : f.table;
      const insert = inserts.get(key);
      if (insert) insert.parts.push(f.data);
      else inserts.set(key, { table: f.table, columns: f.columns, parts: [f.data] });
    }
    for (const [key, { table, columns, parts }] of inserts) {
      // Rows as objects keep the token suffix of earlier versions, so that a block they began is re-applied
      // under the same tokens.
      await this.#inserts.insert(
        { table, columns },
        columns ? jsonMemberParts(parts) : jsonArrayParts(parts),
        columns ? `${token}:${key}` : `${token}:${table}`,
      );
    }
    return rows;
  }
}
