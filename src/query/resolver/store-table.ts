import { selectQuery, type Alias, type Expr, type Field, type SelectQuery } from '../dialect/mod.ts';
import type { TableSpec } from './schema.ts';

/** The placeholder the printer binds to the caller's project id (`{weir_project:UInt64}`). */
export const PROJECT_PLACEHOLDER = '#project';

const field = (name: string): Field => ({ kind: 'field', chain: [name] });

/**
 * What a table reference reads instead of the store table: the caller's project only (PREWHERE on the
 * first column of the sorting key, so the primary index does the work and no row of another project ever
 * reaches an expression of the query), the newest version of each row (FINAL), minus deleted rows, and
 * exactly the columns of the spec. The store table is named with its database, so no CTE of the query
 * (`WITH events AS (…)`) can stand in for it.
 */
export function storeTableQuery(spec: TableSpec, database: string): SelectQuery {
  // The same tree for every reference: nothing changes a resolved tree after it is made.
  const key = `${database}.${spec.name}`;
  let query = made.get(key);
  if (query === undefined) {
    query = buildStoreTableQuery(spec, database);
    made.set(key, query);
  }
  return query;
}

const made = new Map<string, SelectQuery>();

function buildStoreTableQuery(spec: TableSpec, database: string): SelectQuery {
  const columns: (Field | Alias)[] = spec.columns.map((c) =>
    c.source === undefined ? field(c.name) : { kind: 'alias', expr: field(c.source), alias: c.name },
  );
  const where: Expr | null = spec.filter === undefined ? null : filterExpr(spec.filter);
  return selectQuery({
    columns,
    from: {
      kind: 'from',
      table: { kind: 'table', database, name: spec.storeTable, alias: null, final: spec.final, sample: null },
      joins: [],
    },
    prewhere: {
      kind: 'binary',
      op: '=',
      left: field('project_id'),
      right: { kind: 'placeholder', name: PROJECT_PLACEHOLDER },
    },
    where,
  });
}

/** `column = number`, the only shape of filter a spec has. */
function filterExpr(filter: string): Expr {
  const m = /^(\w+) = (\d+)$/.exec(filter);
  if (!m) throw new Error(`unsupported table filter: ${filter}`);
  return { kind: 'binary', op: '=', left: field(m[1]!), right: { kind: 'number', text: m[2]! } };
}
