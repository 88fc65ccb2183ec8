import { createHash } from 'node:crypto';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { QuarantineFilter, QuarantinedRow, QuarantineReplay, QuarantineStore } from '../core/ports.ts';
import { cut, wellFormed, wellFormedJson } from '../core/well-formed.ts';
import { chTime } from './ch-time.ts';
import { valuesAsRow } from './json-rows.ts';
import type { InsertTarget, RawInsert, RefusedRow } from './refused-rows.ts';
import { engineCode, engineErrorName, isRowError } from './store-errors.ts';

export interface QuarantineDeps {
  /** Inserts one block straight into a table (not through the checks of refused-rows.ts). */
  readonly insert: RawInsert;
  /** Runs a query over what is stored. */
  readonly query: <T>(sql: string, params: Record<string, unknown>) => Promise<T[]>;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** A row of the `quarantine` table as it is read back (`#read`). */
interface StoredEntry {
  readonly id: string;
  readonly project: string;
  readonly target_table: string;
  readonly columns: readonly string[];
  readonly row: string;
  readonly event_uuid: string;
  readonly error_code: number;
  readonly error_name: string;
  readonly error: string;
  readonly status: 'held' | 'replayed';
  readonly attempts: number;
  readonly at: string;
  readonly ver: string;
}

/** A row of the `quarantine` table as it is written. */
type EntryRow = Omit<StoredEntry, 'project' | 'at' | 'ver'> & {
  project_id: number;
  quarantined_at: string;
  version: number;
};

/** An engine's message is cut to this, made well formed: it is stored and shown, never the row's own bytes. */
const MAX_ERROR_CHARS = 1000;
const MAX_LIST = 1000;

/**
 * Rows the engine refused, set aside in the store's own `quarantine` table (migration 8) so that they never
 * stop the rows behind them (refused-rows.ts finds them). The same table on both adapters, so a ClickHouse
 * cluster's ingest processes share one quarantine that any node lists and replays.
 *
 * A row is kept exactly as refused (its JSON bytes as base64: a lone surrogate's escape, refused by the
 * engine's JSON reader, is any string to base64), with the engine's error, its project and, for an event, its
 * uuid. Its id is made from the block's deduplication token and the row's place in it, and both inserts here
 * go under tokens made from the block's, so a block set aside again after a crash is set aside once. Each row
 * set aside also writes an ingestion warning (`row_quarantined`) the project can query.
 *
 * Replaying takes the rows still held, makes their strings well formed (what capture's edge does now, the
 * fault that set most aside), and inserts each alone; a row refused again stays held with the new error. The
 * table is a ReplacingMergeTree on `version`: a row's state is its latest version.
 */
export class Quarantine implements QuarantineStore {
  readonly #deps: QuarantineDeps;

  constructor(deps: QuarantineDeps) {
    this.#deps = deps;
  }

  /** Sets aside the rows of one block that the engine refused (`token` is the block's). */
  async setAside(target: InsertTarget, rows: readonly RefusedRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const now = Date.now();
    const entries = rows.map((r) => entryOf(target, r, token, now));
    for (const e of entries) {
      this.#deps.metrics.rowsQuarantined.inc({ table: target.table, reason: e.error_name });
      // Never the row itself: logs carry no event bodies.
      this.#deps.logger.error(
        { table: target.table, project: e.project_id, id: e.id, code: e.error_code, error: e.error },
        'the store refused a row; it is set aside in the quarantine, and the rest of its block is stored',
      );
    }
    await this.#deps.insert('quarantine', [json(entries)], `${token}:quarantine`, undefined);
    const warnings = entries.map((e) => ({
      project_id: e.project_id,
      type: 'row_quarantined',
      source: 'store',
      details: JSON.stringify({
        table: e.target_table,
        id: e.id,
        uuid: e.event_uuid || undefined,
        code: e.error_code,
        reason: e.error_name,
        error: e.error,
      }),
      timestamp: e.quarantined_at,
    }));
    await this.#deps.insert(
      'ingestion_warnings',
      [json(warnings)],
      `${token}:quarantine-warnings`,
      undefined,
    );
  }

  async listQuarantined(filter: QuarantineFilter): Promise<QuarantinedRow[]> {
    const entries = await this.#read(filter);
    return entries.map(publicRow);
  }

  /**
   * Replays every held row of `filter`, a page at a time: a page's stored rows leave `held`, and its refused
   * ones stay, so the next page starts past those (or `filter.limit` rows at most, when it gives one).
   */
  async replayQuarantined(filter: QuarantineFilter): Promise<QuarantineReplay[]> {
    const out: QuarantineReplay[] = [];
    let refused = 0;
    for (;;) {
      const page = await this.#read({ ...filter, status: 'held', offset: (filter.offset ?? 0) + refused });
      for (const e of page) {
        const r = await this.#replay(e);
        out.push(r);
        if (r.result === 'refused') refused++;
      }
      if (page.length === 0 || filter.limit !== undefined || page.length < MAX_LIST) return out;
    }
  }

  /** Inserts one held row again, alone, made well formed; records what became of it. */
  async #replay(e: StoredEntry): Promise<QuarantineReplay> {
    const text = wellFormedJson(Buffer.from(e.row, 'base64').toString('utf8'));
    const columns = e.columns.length > 0 ? e.columns : undefined;
    let refused: unknown;
    try {
      await this.#deps.insert(
        e.target_table,
        [Buffer.from(text)],
        `quarantine-replay:${e.id}:${e.attempts}`,
        columns,
      );
    } catch (err) {
      // Alone in its insert, a row the engine still refuses for anything but the store failing is refused.
      if (!isRowError(err)) throw err;
      refused = err;
    }
    const version = Math.max(Number(e.ver) + 1, Date.now() * 1000);
    const { project, at, ver: _, ...kept } = e;
    const next: EntryRow = {
      ...kept,
      ...(refused === undefined ? { status: 'replayed' as const } : errorFields(refused)),
      project_id: Number(project),
      quarantined_at: at,
      attempts: e.attempts + 1,
      version,
    };
    await this.#deps.insert('quarantine', [json([next])], `quarantine-state:${e.id}:${version}`, undefined);
    if (refused !== undefined)
      return { id: e.id, table: e.target_table, result: 'refused', error: next.error };
    this.#deps.metrics.rowsReplayed.inc({ table: e.target_table });
    return { id: e.id, table: e.target_table, result: 'stored' };
  }

  async #read(filter: QuarantineFilter): Promise<StoredEntry[]> {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    if (filter.projectId !== undefined) {
      where.push('project_id = {project:UInt64}');
      params['project'] = filter.projectId;
    }
    if (filter.status !== undefined) {
      where.push('status = {status:String}');
      params['status'] = filter.status;
    }
    if (filter.ids !== undefined) {
      where.push('id IN {ids:Array(String)}');
      params['ids'] = filter.ids;
    }
    params['limit'] = Math.min(filter.limit ?? MAX_LIST, MAX_LIST);
    params['offset'] = filter.offset ?? 0;
    return this.#deps.query<StoredEntry>(
      // The 64-bit numbers as text, as both clients read them; aliases apart from the columns they read.
      `SELECT id, toString(project_id) AS project, target_table, columns, row, event_uuid, error_code,
              error_name, error, status, attempts, toString(quarantined_at) AS at, toString(version) AS ver
       FROM quarantine FINAL
       ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY quarantined_at, id
       LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
      params,
    );
  }
}

function entryOf(target: InsertTarget, refused: RefusedRow, token: string, now: number): EntryRow {
  const text = refused.line.toString('utf8');
  let parsed: unknown;
  try {
    parsed = target.columns ? valuesAsRow(target.columns, refused.line) : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const fields = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  const project = Number(fields['project_id']);
  const uuid = fields['uuid'];
  return {
    id: createHash('sha256').update(`${token}#${refused.index}`).digest('hex').slice(0, 32),
    project_id: Number.isSafeInteger(project) && project >= 0 ? project : 0,
    target_table: target.table,
    columns: target.columns ?? [],
    row: refused.line.toString('base64'),
    event_uuid: target.table === 'events' && typeof uuid === 'string' ? wellFormed(cut(uuid, 64)) : '',
    ...errorFields(refused.err),
    status: 'held',
    attempts: 0,
    quarantined_at: chTime(now),
    version: now * 1000,
  };
}

function errorFields(err: unknown): Pick<StoredEntry, 'error_code' | 'error_name' | 'error'> {
  const message = err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err);
  return {
    error_code: engineCode(err) ?? 0,
    error_name: engineErrorName(err),
    error: wellFormed(cut(message, MAX_ERROR_CHARS)),
  };
}

function publicRow(e: StoredEntry): QuarantinedRow {
  const text = Buffer.from(e.row, 'base64').toString('utf8');
  let row: unknown;
  try {
    row = e.columns.length > 0 ? valuesAsRow(e.columns, Buffer.from(text)) : (JSON.parse(text) as unknown);
  } catch {
    row = text;
  }
  return {
    id: e.id,
    projectId: Number(e.project),
    table: e.target_table,
    eventUuid: e.event_uuid === '' ? null : e.event_uuid,
    code: e.error_code,
    reason: e.error_name,
    error: e.error,
    status: e.status,
    attempts: e.attempts,
    quarantinedAt: e.at,
    row,
  };
}

/** Rows as one JSON array, the form inserts take (the strings here are all well formed). */
function json(rows: readonly object[]): Buffer {
  return Buffer.from(JSON.stringify(rows));
}
