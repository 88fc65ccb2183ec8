import type { Logger } from '../core/logger.ts';
import type { Store } from '../core/ports.ts';
import { MIGRATIONS, type Migration } from './migrations.ts';

/** What migrations need of a store: statements, one read, one insert. */
export type SchemaTarget = Pick<Store, 'command' | 'query' | 'insert'>;

/**
 * The statements a migration's statement becomes on the target: itself, except on a ClickHouse cluster
 * (server/cluster-schema.ts), where a table becomes replicated local tables with a Distributed one over them.
 */
export type StatementRender = (statement: string) => readonly string[];

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS weir_migrations (version UInt32, name String, applied_at DateTime DEFAULT now())
     ENGINE = ReplacingMergeTree ORDER BY version`;

/**
 * Applies the migrations not yet recorded, in order. Safe to run at every start, and by several processes
 * starting at once (several `weir ingest` on one ClickHouse server): every statement of every migration is
 * idempotent (`IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`, `MODIFY SETTING`), so a migration two processes
 * both find missing is applied twice to the same effect, and both record it: the versions are read as a set,
 * so a version recorded twice counts once (and the table, in a database made since, is a ReplacingMergeTree:
 * `FINAL` shows one row a version).
 */
export async function migrate(
  store: SchemaTarget,
  logger: Logger,
  options: { readonly migrations?: readonly Migration[]; readonly render?: StatementRender } = {},
): Promise<void> {
  const render = options.render ?? ((statement: string) => [statement]);
  for (const statement of render(MIGRATIONS_TABLE)) await store.command(statement);
  const applied = new Set(
    (await store.query<{ version: number }>('SELECT DISTINCT version FROM weir_migrations')).map((r) =>
      Number(r.version),
    ),
  );
  for (const m of [...(options.migrations ?? MIGRATIONS)].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    for (const statement of m.statements) for (const s of render(statement)) await store.command(s);
    await store.insert('weir_migrations', [{ version: m.version, name: m.name }]);
    logger.info({ version: m.version, name: m.name }, 'applied schema migration');
  }
}
