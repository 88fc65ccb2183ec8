/**
 * Expressions, one helper per kind of node: names are read by fields.ts, property reads by properties.ts,
 * comparisons made NULL-safe by null-safety.ts, and every function must be on the allow-list (functions.ts);
 * `*` stands only for columns or in `count(*)`. Placeholders stay placeholders: the printer binds them as
 * query parameters.
 */
import type {
  Between,
  Binary,
  Call,
  Case,
  Expr,
  Lambda,
  OrderItem,
  TupleAccess,
  WindowSpec,
} from '../dialect/mod.ts';
import type { Context } from './context.ts';
import { QueryResolveError, shown } from './errors.ts';
import { field } from './fields.ts';
import { baseName, functionKind, REFUSED_HINTS } from './functions.ts';
import { hogqlCall, hogqlOverload } from './hogql-functions.ts';
import { hogqlxTuple } from './hogqlx.ts';
import { call, str } from './nodes.ts';
import { tableSpec } from './schema.ts';
import { Scope } from './scope.ts';

/** Aggregates whose first argument is a time: a DateTime, or an unsigned number of seconds. */
const TIMED_AGGREGATES = new Set([
  'windowfunnel',
  'sequencematch',
  'sequencecount',
  'sequencenextnode',
  'sequencematchevents',
]);
/** Time window functions take a DateTime, not a DateTime64 (HogQL's FIRST_ARG_DATETIME_FUNCTIONS). */
const TIME_WINDOWS = new Set(['tumble', 'tumblestart', 'tumbleend', 'hop', 'hopstart', 'hopend']);

export function expr(cx: Context, e: Expr, scope: Scope): Expr {
  switch (e.kind) {
    case 'number':
    case 'string':
    case 'boolean':
    case 'null':
      return e;
    case 'placeholder':
      cx.variables.add(e.name);
      return e;
    case 'field':
      return field(cx, e, scope);
    case 'star':
      throw new QueryResolveError(
        "'*' stands only for all columns (SELECT *, SELECT t.*) or in count(*)",
        e.pos,
      );
    case 'call':
      return functionCall(cx, e, scope);
    case 'lambda':
      return lambda(cx, e, scope);
    case 'array':
    case 'tuple':
      return { ...e, items: exprs(cx, e.items, scope) };
    case 'index':
      return index(cx, e.object, e.index, e, scope);
    case 'tupleAccess':
      return tupleAccess(cx, e, scope);
    case 'binary':
      return binary(cx, e, scope);
    case 'and':
    case 'or':
      return { ...e, operands: exprs(cx, e.operands, scope) };
    case 'concat':
      return { ...e, operands: exprs(cx, e.operands, scope).map(textOrEmpty) };
    case 'not':
    case 'negate':
    case 'isNull':
      return { ...e, operand: expr(cx, e.operand, scope) };
    case 'between':
      return between(cx, e, scope);
    case 'ternary':
      return {
        ...e,
        condition: expr(cx, e.condition, scope),
        whenTrue: expr(cx, e.whenTrue, scope),
        whenFalse: expr(cx, e.whenFalse, scope),
      };
    case 'case':
      return caseExpr(cx, e, scope);
    case 'interval':
      return { ...e, value: expr(cx, e.value, scope) };
    case 'cast':
      return { ...e, expr: expr(cx, e.expr, scope) };
    case 'subquery':
      return { ...e, query: cx.query(e.query, new Scope(scope)).query };
    case 'alias':
      return { ...e, expr: expr(cx, e.expr, scope) };
    case 'tag':
    case 'dict':
      return expr(cx, hogqlxTuple(e), scope);
  }
}

export function exprs(cx: Context, list: readonly Expr[], scope: Scope): Expr[] {
  return list.map((e) => expr(cx, e, scope));
}

export function orderItems(cx: Context, items: readonly OrderItem[], scope: Scope): OrderItem[] {
  return items.map((o) => ({ ...o, expr: expr(cx, o.expr, scope) }));
}

export function windowSpec(cx: Context, w: WindowSpec, scope: Scope): WindowSpec {
  const inWindow = cx.inWindow;
  cx.inWindow = true;
  try {
    return windowSpecParts(cx, w, scope);
  } finally {
    cx.inWindow = inWindow;
  }
}

function windowSpecParts(cx: Context, w: WindowSpec, scope: Scope): WindowSpec {
  return {
    ...w,
    partitionBy: w.partitionBy && exprs(cx, w.partitionBy, scope),
    orderBy: w.orderBy && orderItems(cx, w.orderBy, scope),
    frame: w.frame && {
      ...w.frame,
      start: { ...w.frame.start, offset: w.frame.start.offset && expr(cx, w.frame.start.offset, scope) },
      end: w.frame.end && {
        ...w.frame.end,
        offset: w.frame.end.offset && expr(cx, w.frame.end.offset, scope),
      },
    },
  };
}

function lambda(cx: Context, e: Lambda, scope: Scope): Expr {
  scope.lambdas.push(new Set(e.params));
  try {
    return { ...e, body: expr(cx, e.body, scope) };
  } finally {
    scope.lambdas.pop();
  }
}

function tupleAccess(cx: Context, e: TupleAccess, scope: Scope): Expr {
  const object = expr(cx, e.object, scope);
  const ref = cx.properties.ref(object);
  if (ref === undefined) return { ...e, object };
  // A position is an element of a JSON array, 1-based as ClickHouse counts: `properties.arr.1` (HogQL's chain).
  const key: Expr =
    typeof e.element === 'number' ? { kind: 'number', text: String(e.element) } : str(e.element);
  return cx.properties.extract({ column: ref.column, keys: [...ref.keys, key] }, e.pos);
}

function index(cx: Context, objectNode: Expr, indexNode: Expr, e: Expr, scope: Scope): Expr {
  const object = expr(cx, objectNode, scope);
  const index = expr(cx, indexNode, scope);
  const ref = cx.properties.ref(object);
  if (ref !== undefined)
    return cx.properties.extract({ column: ref.column, keys: [...ref.keys, index] }, e.pos);
  return { kind: 'index', object, index, pos: e.pos };
}

function binary(cx: Context, e: Binary, scope: Scope): Expr {
  return cx.nulls.nullSafe(
    cx.properties.numberAsText({
      ...e,
      left: expr(cx, e.left, scope),
      right: inRight(cx, e.op, e.right, scope),
    }),
  );
}

/** The right side of IN: a bare name there would be read by ClickHouse as a table, so say what to write. */
function inRight(cx: Context, op: string, right: Expr, scope: Scope): Expr {
  if ((op === 'in' || op === 'notIn') && right.kind === 'field' && right.chain.length === 1) {
    const name = right.chain[0]!;
    if (scope.cte(name) || tableSpec(name)) {
      throw new QueryResolveError(
        `IN takes a list or a subquery: write IN (SELECT … FROM ${name})`,
        right.pos,
      );
    }
  }
  return expr(cx, right, scope);
}

function between(cx: Context, e: Between, scope: Scope): Expr {
  return cx.nulls.between({
    ...e,
    expr: expr(cx, e.expr, scope),
    low: expr(cx, e.low, scope),
    high: expr(cx, e.high, scope),
  });
}

function caseExpr(cx: Context, e: Case, scope: Scope): Expr {
  return {
    ...e,
    subject: e.subject && expr(cx, e.subject, scope),
    branches: e.branches.map((b) => ({
      ...b,
      when: expr(cx, b.when, scope),
      result: expr(cx, b.result, scope),
    })),
    otherwise: e.otherwise && expr(cx, e.otherwise, scope),
  };
}

function functionCall(cx: Context, e: Call, scope: Scope): Expr {
  // HogQL's own names become the calls HogQL means, which are then checked like any call.
  const meant = hogqlCall(e);
  if (meant !== e) return expr(cx, meant, scope);
  checkCall(e, scope);
  const isCountStar =
    e.name.toLowerCase() === 'count' &&
    e.args.length === 1 &&
    e.args[0]!.kind === 'star' &&
    e.args[0].table === null;
  let args = cx.properties.args(e.name, () => (isCountStar ? e.args : exprs(cx, e.args, scope)));
  if (e.name.toLowerCase() === 'concat') args = args.map(textOrEmpty);
  if ((TIMED_AGGREGATES.has(baseName(e.name)) || TIME_WINDOWS.has(e.name.toLowerCase())) && args.length > 0) {
    // These take a DateTime (or an unsigned number of seconds), not the DateTime64 `timestamp` is.
    args = [call('toDateTime', [args[0]!]), ...args.slice(1)];
  }
  return {
    ...e,
    name: hogqlOverload(e.name, args),
    params: e.params && exprs(cx, e.params, scope),
    args,
    over: e.over?.kind === 'windowSpec' ? windowSpec(cx, e.over, scope) : e.over,
  };
}

/** Refuses a function off the allow-list, an OVER on a scalar, and an OVER naming no window of the query. */
function checkCall(e: Call, scope: Scope): void {
  const kind = functionKind(e.name);
  if (kind === undefined) {
    const hint = REFUSED_HINTS[e.name.toLowerCase()];
    throw new QueryResolveError(
      hint
        ? `function ${shown(e.name)} is not allowed: ${hint}`
        : `unknown function ${shown(e.name)} (or one a query may not call)`,
      e.pos,
    );
  }
  if (e.over !== null && kind === 'scalar') {
    throw new QueryResolveError(
      `${shown(e.name)} is not an aggregate or window function: it takes no OVER`,
      e.pos,
    );
  }
  if (e.over?.kind === 'windowRef' && !scope.windows.has(e.over.name)) {
    throw new QueryResolveError(
      `no window ${shown(e.over.name)} is defined in this query's WINDOW clause`,
      e.over.pos,
    );
  }
}

/**
 * A part of a concatenation as HogQL's printer makes it: as text, and a missing value as '' (`concat('v',
 * properties.$os_version)` is 'v' for an event without it, not NULL).
 */
function textOrEmpty(e: Expr): Expr {
  if (e.kind === 'string' || e.kind === 'number') return e;
  return call('ifNull', [call('toString', [e]), str('')]);
}
