/**
 * The pieces of a SQL query the rewrite (rewrite-sql.ts) takes apart: the variables' predicates and the
 * columns they compare, which expressions hold aggregates, and which aggregates a run can merge again
 * from per-bucket partials.
 */
import type { VariableType } from '../../core/ports.ts';
import { printDialectExpr, type Call, type Expr } from '../dialect/mod.ts';
import { functionKind } from '../resolver/functions.ts';
import type { FilterOp } from './serving.ts';

/** A variable's predicate, its column on the left: `expr op {variables.name}`. */
export interface Lifted {
  readonly expr: Expr;
  readonly variable: string;
  readonly op: FilterOp;
}

const FLIPPED: Readonly<Record<FilterOp, FilterOp>> = {
  '=': '=',
  '>=': '<=',
  '>': '<',
  '<': '>',
  '<=': '>=',
};

/** The operands of the top-level AND chain. */
export function conjuncts(e: Expr): Expr[] {
  return e.kind === 'and' ? e.operands.flatMap(conjuncts) : [e];
}

/** The conjunct as a lifted predicate, when it is one (analysis.ts has checked every conjunct with a variable). */
export function lifted(e: Expr): Lifted | undefined {
  if (e.kind !== 'binary' || !(e.op in FLIPPED)) return undefined;
  const op = e.op as FilterOp;
  if (e.right.kind === 'placeholder') return { expr: e.left, variable: e.right.name, op };
  if (e.left.kind === 'placeholder') return { expr: e.right, variable: e.left.name, op: FLIPPED[op] };
  return undefined;
}

/** Whether a node holds a placeholder anywhere (the AST is plain data). */
export function hasPlaceholder(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (Array.isArray(node)) return node.some(hasPlaceholder);
  const record = node as Record<string, unknown>;
  if (record['kind'] === 'placeholder') return true;
  for (const key in record) if (key !== 'pos' && hasPlaceholder(record[key])) return true;
  return false;
}

/** Whether an expression calls an aggregate of its own query (not one inside a subquery, not a window). */
export function hasAggregate(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (Array.isArray(node)) return node.some(hasAggregate);
  const record = node as Record<string, unknown>;
  if (record['kind'] === 'subquery' || record['kind'] === 'lambda') return false;
  if (record['kind'] === 'call') {
    const call = record as unknown as Call;
    if (call.over === null && functionKind(call.name) === 'aggregate') return true;
  }
  for (const key in record) if (key !== 'pos' && hasAggregate(record[key])) return true;
  return false;
}

/** Whether an expression has a window function (OVER): it reads rows a variable would filter out. */
export function hasWindow(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (Array.isArray(node)) return node.some(hasWindow);
  const record = node as Record<string, unknown>;
  if (record['kind'] === 'subquery') return false;
  if (record['kind'] === 'call' && (record as unknown as Call).over !== null) return true;
  for (const key in record) if (key !== 'pos' && hasWindow(record[key])) return true;
  return false;
}

/** How an aggregate is kept per group and bucket, and merged again at a run. */
export type Partial =
  | { readonly merge: 'sum' | 'min' | 'max'; readonly partial: Expr }
  | { readonly merge: 'avg'; readonly sum: Expr; readonly count: Expr };

const MERGEABLE = 'count, countIf, sum, sumIf, min, max and avg';

/** The partial form of an aggregate call, or why it has none. */
export function partialOf(e: Expr): Partial | { readonly cannot: string } {
  if (e.kind !== 'call' || e.over !== null || functionKind(e.name) !== 'aggregate') {
    return {
      cannot: `the column ${shownExpr(e)} combines aggregates with other operations; with a range variable each aggregate is merged across buckets on its own, so select each aggregate as a column of its own`,
    };
  }
  const name = e.name.toLowerCase();
  const cannot = {
    cannot: `${shownExpr(e)} cannot be merged across the buckets of a range variable (only ${MERGEABLE} can)`,
  };
  if (e.params !== null || e.distinct) return cannot;
  switch (name) {
    case 'count':
    case 'countif':
    case 'sum':
    case 'sumif':
      return { merge: 'sum', partial: e };
    case 'min':
    case 'max':
      return e.args.length === 1 ? { merge: name, partial: e } : cannot;
    case 'avg':
      if (e.args.length !== 1) return cannot;
      return { merge: 'avg', sum: call('sum', e.args), count: call('count', e.args) };
    default:
      return cannot;
  }
}

export function call(name: string, args: Expr[]): Call {
  return { kind: 'call', name, params: null, args, distinct: false, over: null };
}

/** An expression as a person reads it in a reason, shortened. */
export function shownExpr(e: Expr): string {
  const text = printDialectExpr(e);
  return `'${text.length > 80 ? `${text.slice(0, 77)}...` : text}'`;
}

const TEMPORAL_FIELDS = new Set(['timestamp', 'created_at', '_timestamp', 'inserted_at']);
const TEMPORAL_CALL =
  /^(todate|todate32|todatetime|todatetime64|tostartof.*|date_trunc|datetrunc|now|now64|today)$/i;

/**
 * Whether a range variable's column holds times, so that it is kept at the bucket: when a variable on it is
 * declared `date` or `datetime`, or (undeclared) the column is a time by its name or function. Any other
 * range column is kept at its exact values (merged again all the same).
 */
export function isTemporal(
  expr: Expr,
  variables: readonly string[],
  declared: Readonly<Record<string, VariableType>>,
): boolean {
  const types = variables.map((v) => declared[v]).filter((t) => t !== undefined);
  if (types.some((t) => t === 'date' || t === 'datetime')) return true;
  if (types.length > 0) return false;
  if (expr.kind === 'field') return TEMPORAL_FIELDS.has(expr.chain[expr.chain.length - 1]!.toLowerCase());
  if (expr.kind === 'call') return TEMPORAL_CALL.test(expr.name);
  return expr.kind === 'cast' && /^date/i.test(expr.type.name);
}
