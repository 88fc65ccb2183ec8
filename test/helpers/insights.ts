/**
 * Insight tests on the real engine: a chDB store of their own, events written as ingest writes them, and a
 * run of an insight query object exactly as an endpoint run makes it (read → prepare → resolve → print →
 * run), plus hand-written SQL on the store tables to check the answers against.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Row, Store, TableReader } from '../../src/core/ports.ts';
import { createLogger } from '../../src/core/logger.ts';
import { runCompiledQuery } from '../../src/query/hogql-query.ts';
import { finishInsightRows, prepareInsightRun, readInsight } from '../../src/query/insights/insight.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A migrated chDB store in a temporary directory, closed and removed when `t` ends. */
export async function insightStore(t: Teardown): Promise<ChdbClient> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-insights-'));
  const store = ChdbClient.open(join(dir, 'chdb'));
  await migrate(store, createLogger('silent'));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

export interface TestEvent {
  readonly event: string;
  readonly distinctId: string;
  /** ISO, UTC: `2020-01-09T12:00:00Z`. */
  readonly timestamp: string;
  readonly properties?: Record<string, unknown>;
  readonly personProperties?: Record<string, unknown>;
  /** The person the event was stored under. @default personOf(distinctId) */
  readonly personId?: string;
  /** `$group_0` … `$group_4`. */
  readonly groups?: readonly string[];
}

let seq = 0;

/** A stable person id for a name. */
export function personOf(name: string): string {
  let h = 0;
  for (const c of name) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return `00000000-0000-4000-9000-${h.toString(16).padStart(12, '0')}`;
}

function chTime(iso: string): string {
  return new Date(iso).toISOString().replace('T', ' ').replace('Z', '');
}

/** Writes events of `project` (default 1), and a person_distinct_ids row for each distinct id seen. */
export async function insertEvents(
  store: Pick<Store, 'insert'>,
  events: readonly TestEvent[],
  project = 1,
): Promise<void> {
  const rows: Row[] = events.map((e) => {
    seq += 1;
    const g = e.groups ?? [];
    return {
      project_id: project,
      uuid: `00000000-0000-4000-8000-${seq.toString(16).padStart(12, '0')}`,
      event: e.event,
      distinct_id: e.distinctId,
      person_id: e.personId ?? personOf(e.distinctId),
      timestamp: chTime(e.timestamp),
      properties: JSON.stringify(e.properties ?? {}),
      person_properties: JSON.stringify(e.personProperties ?? {}),
      person_mode: 'full',
      $group_0: g[0] ?? '',
      $group_1: g[1] ?? '',
      $group_2: g[2] ?? '',
      $group_3: g[3] ?? '',
      $group_4: g[4] ?? '',
      created_at: chTime(e.timestamp),
    };
  });
  await store.insert('events', rows);
  const ids = new Map<string, string>();
  for (const e of events)
    if (!ids.has(e.distinctId)) ids.set(e.distinctId, e.personId ?? personOf(e.distinctId));
  await pointDistinctIds(
    store,
    [...ids].map(([distinctId, personId]) => ({ distinctId, personId })),
    project,
  );
}

/** Points distinct ids at persons (as a merge does: a newer version of the row). */
export async function pointDistinctIds(
  store: Pick<Store, 'insert'>,
  ids: readonly { distinctId: string; personId: string }[],
  project = 1,
  version = 1,
): Promise<void> {
  await store.insert(
    'person_distinct_ids',
    ids.map((i) => ({
      project_id: project,
      distinct_id: i.distinctId,
      person_id: i.personId,
      version,
      is_deleted: 0,
    })),
  );
}

export interface InsightAnswer {
  readonly columns: string[];
  readonly types: string[];
  readonly rows: unknown[][];
  readonly hasMore: boolean;
  readonly hogql: string;
  readonly clickhouse: string;
}

export interface RunOptions {
  readonly variables?: Record<string, unknown>;
  /** @default now */
  readonly now?: Date;
  /** @default 1 */
  readonly project?: number;
  readonly materialized?: boolean;
}

/** Runs an insight query object (what an endpoint's `query` holds) as an endpoint run does. */
export async function runInsight(
  store: TableReader,
  query: unknown,
  options: RunOptions = {},
): Promise<InsightAnswer> {
  const insight = readInsight(query);
  const prepared = prepareInsightRun(insight, options.variables ?? {}, {
    now: options.now ?? new Date(),
    materialized: options.materialized ?? false,
  });
  const result = await runCompiledQuery(prepared.compiled, prepared.bound, options.project ?? 1, { store });
  const { rows, hasMore } = finishInsightRows(prepared, result.columns, result.results);
  return {
    columns: result.columns,
    types: result.types,
    rows,
    hasMore,
    hogql: result.hogql,
    clickhouse: result.clickhouse,
  };
}

/**
 * Hand-written ClickHouse SQL on the store tables, to check an answer against: `{project:UInt64}` is the
 * project. Read with FINAL as Weir reads them.
 */
export async function handSql(store: TableReader, sql: string, project = 1): Promise<unknown[][]> {
  const table = await store.queryTable(sql, { project });
  return table.rows as unknown[][];
}
