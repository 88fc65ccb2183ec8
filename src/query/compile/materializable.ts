/**
 * Whether a SQL endpoint version can be materialized (SPEC §4): its results stored with the variables'
 * columns kept, so that a run can apply the variables to the stored rows. That holds only when each
 * variable filters rows in the outer query's WHERE, under AND, compared with `=`, `>=`, `>`, `<` or `<=`
 * to an expression free of variables: such a predicate can be lifted out and applied afterwards. A variable
 * anywhere else (SELECT, HAVING, a subquery, a join, LIMIT, under OR or NOT, in LIKE or IN) changes what the
 * query computes, not only which rows it keeps.
 */
import type { ComparisonOp, Expr, Query } from '../dialect/mod.ts';

export interface MaterializationAnalysis {
  readonly canMaterialize: boolean;
  /** Why it cannot, for a person; null when it can. */
  readonly reason: string | null;
}

const LIFTABLE: ReadonlySet<string> = new Set<ComparisonOp>(['=', '>=', '>', '<', '<=']);

export function analyseMaterialization(query: Query): MaterializationAnalysis {
  const total = countPlaceholders(query);
  if (total === 0) return { canMaterialize: true, reason: null };
  if (query.kind !== 'select') {
    return cannot('a query with variables cannot be materialized when it is a UNION ALL');
  }
  let lifted = 0;
  if (query.where) {
    for (const conjunct of conjuncts(query.where)) {
      const inside = countPlaceholders(conjunct);
      if (inside === 0) continue;
      const problem = liftProblem(conjunct);
      if (problem) return cannot(problem);
      lifted += inside;
    }
  }
  if (lifted < total) {
    return cannot(
      'every variable must be used in the WHERE clause of the outer query (not in SELECT, HAVING, a subquery, a join or LIMIT)',
    );
  }
  return { canMaterialize: true, reason: null };
}

function cannot(reason: string): MaterializationAnalysis {
  return { canMaterialize: false, reason: `${reason.charAt(0).toUpperCase()}${reason.slice(1)}.` };
}

/** The operands of the top-level AND chain. */
function conjuncts(e: Expr): Expr[] {
  return e.kind === 'and' ? e.operands.flatMap(conjuncts) : [e];
}

/** Why a conjunct holding variables cannot be lifted out, or undefined when it can. */
function liftProblem(e: Expr): string | undefined {
  if (e.kind === 'or') return 'a variable is used under OR';
  if (e.kind === 'not') return 'a variable is used under NOT';
  if (e.kind === 'binary') {
    if (e.op === 'like' || e.op === 'notLike' || e.op === 'ilike' || e.op === 'notILike') {
      return 'a variable is used with LIKE';
    }
    if (e.op === 'in' || e.op === 'notIn') return 'a variable is used with IN';
    if (LIFTABLE.has(e.op)) {
      const [variable, other] = e.left.kind === 'placeholder' ? [e.left, e.right] : [e.right, e.left];
      if (variable.kind === 'placeholder' && countPlaceholders(other) === 0) return undefined;
      return `a variable must be compared as a whole to an expression without variables (${e.op})`;
    }
    return `a variable is used with '${e.op}'`;
  }
  return 'a variable in WHERE must be compared with =, >=, >, < or <='; // BETWEEN, a function call, …
}

/** Placeholders anywhere in a tree: the AST is plain data, so every object below is walked. */
function countPlaceholders(node: unknown): number {
  if (typeof node !== 'object' || node === null) return 0;
  if (Array.isArray(node)) return node.reduce((n: number, item) => n + countPlaceholders(item), 0);
  const record = node as Record<string, unknown>;
  if (record['kind'] === 'placeholder') return 1;
  let n = 0;
  for (const key in record) if (key !== 'pos') n += countPlaceholders(record[key]);
  return n;
}
