/** Builders of the dialect nodes the resolver's passes write into the tree ClickHouse runs. */
import type { Expr } from '../dialect/mod.ts';

export const ZERO: Expr = { kind: 'number', text: '0' };
export const ONE: Expr = { kind: 'number', text: '1' };

export function str(value: string): Expr {
  return { kind: 'string', value };
}

export function call(name: string, args: Expr[]): Expr {
  return { kind: 'call', name, params: null, args, distinct: false, over: null };
}
