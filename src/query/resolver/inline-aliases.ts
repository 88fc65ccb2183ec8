/**
 * The names a SELECT gives inside its expressions: `(a + 1 AS b) * 2`, `(sumMap(k, v) AS m).1`. ClickHouse lets
 * such a name be used anywhere in the same SELECT (before or after it), but not in a query nested inside, so
 * subqueries are not looked into.
 */
import type { SelectQuery } from '../dialect/mod.ts';

const NESTED_QUERIES = new Set(['subquery', 'tableSubquery', 'withQuery', 'select', 'unionAll']);

export function inlineAliases(select: SelectQuery): ReadonlySet<string> {
  const names = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    const kind = record['kind'];
    if (typeof kind === 'string' && NESTED_QUERIES.has(kind)) return;
    if (kind === 'alias' && typeof record['alias'] === 'string') names.add(record['alias']);
    for (const key in record) if (key !== 'pos') visit(record[key]);
  };
  for (const key in select) if (key !== 'pos' && key !== 'with') visit(select[key as keyof SelectQuery]);
  return names;
}
