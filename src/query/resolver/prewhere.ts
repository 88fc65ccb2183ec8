/**
 * PREWHERE folded into WHERE: each Weir table is read as a subquery over its store table, and a subquery has
 * no PREWHERE of its own to give, so the query's two filters become one, PREWHERE's first.
 */
import type { Expr } from '../dialect/mod.ts';

export function foldPrewhere(prewhere: Expr | null, where: Expr | null): Expr | null {
  return prewhere && where ? { kind: 'and', operands: [prewhere, where] } : (prewhere ?? where);
}
