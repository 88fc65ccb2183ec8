/**
 * HogQL lets a column alias and a table alias share a name (`SELECT ee AS e, e.timestamp FROM events e`): a
 * name followed by a dot is the table, a name alone the column. ClickHouse refuses the pair ("Duplicate
 * aliases"), so the table is printed under another alias, and every column read through it with it.
 */
import type { SelectQuery } from '../dialect/mod.ts';
import type { Scope } from './scope.ts';

const NESTED_QUERIES = new Set(['subquery', 'withQuery', 'select', 'unionAll']);

/** The SELECT with each table whose alias is also a column alias or WITH value of it renamed. */
export function distinctTableAliases(select: SelectQuery, scope: Scope): SelectQuery {
  let renamed = select;
  for (const source of scope.sources) {
    const name = source.name;
    if (
      name === null ||
      !(scope.aliases.has(name) || select.with.some((w) => w.kind === 'withExpr' && w.name === name))
    )
      continue;
    let fresh = `${name}__table`;
    for (let i = 2; scope.isValue(fresh) || scope.source(fresh); i++) fresh = `${name}__table${i}`;
    renamed = renameTable(renamed, name, fresh);
  }
  return renamed;
}

/**
 * A copy of the SELECT with `from` renamed to `to` where it names a table: a FROM item's alias, the first
 * name of a qualified column (`e.timestamp`), a qualified star (`e.*`). Queries nested in its expressions
 * and FROM have tables of their own and are left as they are.
 */
function renameTable(select: SelectQuery, from: string, to: string): SelectQuery {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      let changed = false;
      const items = node.map((item) => {
        const v = visit(item);
        if (v !== item) changed = true;
        return v;
      });
      return changed ? items : node;
    }
    if (node === null || typeof node !== 'object') return node;
    const record = node as Record<string, unknown>;
    const kind = record['kind'];
    if (typeof kind === 'string' && NESTED_QUERIES.has(kind)) return node;
    if (kind === 'field' || kind === 'star') {
      const chain = (kind === 'field' ? record['chain'] : record['table']) as readonly string[] | null;
      const qualified = chain !== null && chain[0] === from && (kind === 'star' || chain.length > 1);
      return qualified
        ? { ...record, [kind === 'field' ? 'chain' : 'table']: [to, ...chain.slice(1)] }
        : node;
    }
    if (kind === 'table' || kind === 'tableFunction' || kind === 'tableSubquery') {
      // The table's own query is another scope; only its alias is this SELECT's.
      const named = record['alias'] === from || (record['alias'] === null && record['name'] === from);
      return named ? { ...record, alias: to } : node;
    }
    let copy: Record<string, unknown> | null = null;
    for (const key in record) {
      if (key === 'pos') continue;
      const v = visit(record[key]);
      if (v !== record[key]) (copy ??= { ...record })[key] = v;
    }
    return copy ?? node;
  };
  const copy: Record<string, unknown> = { ...select };
  for (const key in select) if (key !== 'pos' && key !== 'with') copy[key] = visit(copy[key]);
  return copy as unknown as SelectQuery;
}
