import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { jsonArrayParts, jsonMemberParts, valuesAsRow } from '../json-rows.ts';
import { CheckedInserts, type InsertTarget } from '../refused-rows.ts';
import type { ChdbClient } from './chdb-client.ts';
import type { LogFrame } from './commit-log.ts';

export interface LogApplierConfig {
  /** Directory of the commit log: refused rows go to `rejected.jsonl` there. */
  readonly dir: string;
}

export interface LogApplierDeps {
  readonly engine: Pick<ChdbClient, 'insertRaw'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * Moves a block of the commit log (its oldest frames) into the engine's tables: one insert per table and
 * form (rows as objects, or as values of one column list), each under the block's deduplication token. A row
 * the engine refuses (bad data) is found by bisection (refused-rows.ts), written to `rejected.jsonl` beside
 * the log, counted and logged; the rest of its block is applied.
 */
export class LogApplier {
  readonly #config: LogApplierConfig;
  readonly #deps: LogApplierDeps;
  readonly #inserts: CheckedInserts;

  constructor(config: LogApplierConfig, deps: LogApplierDeps) {
    this.#config = config;
    this.#deps = deps;
    this.#inserts = new CheckedInserts({
      insert: (table, data, token, columns) => deps.engine.insertRaw(table, data, token, columns),
      refuse: (target, line, err) => this.#reject(target, line, err),
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

  async #reject({ table, columns }: InsertTarget, line: Buffer, err: unknown): Promise<void> {
    // A row of values is set aside as an object, named the way an operator reads it.
    const row = columns ? JSON.stringify(valuesAsRow(columns, line)) : line.toString().trimEnd();
    const error = err instanceof Error ? err.message.split('\n')[0] : String(err);
    this.#deps.metrics.storeRowsRejected.inc({ table });
    this.#deps.logger.error(
      { table, error },
      'commit log: the store refused a row; set aside in rejected.jsonl',
    );
    await appendFile(
      join(this.#config.dir, 'rejected.jsonl'),
      `${JSON.stringify({ at: new Date().toISOString(), table, error, row })}\n`,
    );
  }
}
