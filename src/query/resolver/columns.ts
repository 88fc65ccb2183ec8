/**
 * The columns of a SELECT: each resolved, and the name and kind of each result column, which the query around
 * a subquery or CTE reads it by.
 */
import { printDialectExpr, type ColumnExpr, type Expr, type Span } from '../dialect/mod.ts';
import type { Context, OutColumn } from './context.ts';
import { QueryResolveError, shown } from './errors.ts';
import { expr } from './expressions.ts';
import { hasOwn, NULLABLE, PLAIN, type ColumnInfo, type Scope, type Source } from './scope.ts';

/** A column of a SELECT, resolved: more than one where a `*` names the columns of a source that repeats one. */
export function column(
  cx: Context,
  c: ColumnExpr,
  scope: Scope,
  out: OutColumn[],
  top: boolean,
): ColumnExpr | ColumnExpr[] {
  if (c.kind === 'alias') {
    const defining = cx.defining;
    cx.defining = c.alias;
    try {
      const resolved = expr(cx, c.expr, scope);
      out.push({ name: c.alias, info: infoOf(cx, resolved) });
      return { ...c, expr: resolved };
    } finally {
      cx.defining = defining;
    }
  }
  if (c.kind === 'star') {
    const sources = c.table === null ? scope.sources : [starSource(c.table, scope, c.pos)];
    if (sources.length === 0) throw new QueryResolveError("'*' needs a FROM clause", c.pos);
    for (const s of sources) for (const [name, info] of s.columns) out.push({ name, info });
    if (!sources.some((s) => s.repeats === true)) return c;
    // ClickHouse's `*` would give a repeated name twice; PostHog's names it once.
    return sources.flatMap((s) =>
      [...s.columns.keys()].map((name) =>
        expr(cx, { kind: 'field', chain: s.name === null ? [name] : [s.name, name], pos: c.pos }, scope),
      ),
    );
  }
  const resolved = expr(cx, c, scope);
  const field = cx.expressionFields.get(resolved);
  if (field !== undefined && !out.some((o) => o.name === field) && !scope.aliases.has(field)) {
    // An expression field is a column of its own name, as in PostHog, and not of the expression's text.
    out.push({ name: field, info: infoOf(cx, resolved) });
    return { kind: 'alias', expr: resolved, alias: field, pos: c.pos };
  }
  const ref = cx.properties.ref(resolved);
  const key = ref?.keys.at(-1);
  if (!top && c.kind === 'field' && key?.kind === 'string' && freeName(key.value, scope, out)) {
    // As HogQL names it: a property read in a subquery or CTE is a column named by its key, so the query
    // around reads `button_text` from `SELECT properties.button_text …`.
    out.push({ name: key.value, info: infoOf(cx, resolved), text: printDialectExpr(c) });
    return { kind: 'alias', expr: resolved, alias: key.value, pos: c.pos };
  }
  if (!top && c.kind === 'field' && key?.kind === 'string') {
    // The same property read again is a column of the same name, as in PostHog: left unaliased, since
    // the query around reads it by the first's alias.
    const text = printDialectExpr(c);
    if (out.some((o) => o.name === key.value && o.text === text)) {
      out.push({ name: key.value, info: infoOf(cx, resolved) });
      return resolved;
    }
  }
  out.push({ name: columnName(c, resolved), info: infoOf(cx, resolved) });
  return resolved;
}

/**
 * Whether a SELECT may call a column by this name without changing what another name of it means:
 * ClickHouse reads an alias before a column, so it must be no column, alias or value seen there.
 */
function freeName(name: string, scope: Scope, out: readonly OutColumn[]): boolean {
  if (out.some((o) => o.name === name) || scope.isValue(name) || scope.cte(name)) return false;
  return !scope.sources.some(
    (s) => s.name === name || s.columns.has(name) || hasOwn(s.virtual, name) || hasOwn(s.joinedColumns, name),
  );
}

function starSource(table: readonly string[], scope: Scope, pos: Span | undefined): Source {
  const source = table.length === 1 ? scope.source(table[0]!) : undefined;
  if (!source) {
    throw new QueryResolveError(`${shown(table.join('.'))}.* names no table of this FROM clause`, pos);
  }
  return source;
}

function infoOf(cx: Context, resolved: Expr): ColumnInfo {
  const ref = cx.properties.ref(resolved);
  if (ref !== undefined && ref.keys.length === 0) return { json: true, properties: ref.owner };
  return cx.nulls.mayBeNull(resolved) ? NULLABLE : PLAIN;
}

/**
 * The name of an unaliased column: a plain column keeps its name (`e.event` is `event`, as ClickHouse names
 * it), anything else is its dialect text (`count()`, `properties.$browser`).
 */
function columnName(original: Expr, rewritten: Expr): string {
  if (original.kind === 'field' && rewritten.kind === 'field') return rewritten.chain.at(-1)!;
  return printDialectExpr(original);
}
