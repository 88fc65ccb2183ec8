/**
 * Dialect queries built from constant text with holes for AST nodes: `sql.query\`SELECT … WHERE ${pred}\``.
 * The text is Weir's own, written in code; what varies between insights (a user's event name, a property
 * key, a filter value) only ever enters as a node (a string literal, a placeholder), never as text. So an
 * insight's query is a dialect tree like any parsed one, and reaches ClickHouse through the same resolver
 * and printer as a SQL endpoint's: tenant confinement and typed parameters hold by construction.
 *
 * A hole is:
 * - an `Expr`, where an expression stands (it is written as a placeholder and replaced after parsing);
 * - a `Query`, where an expression stands (a scalar subquery, or the right side of IN) or as a table
 *   (`FROM ${q} AS x`: the hole is written as a table name and replaced by the subquery);
 * - an array of `Expr`, inside a list (SELECT columns, GROUP BY, ORDER BY, function arguments, tuples):
 *   its items are spliced into the list. An empty array leaves nothing.
 * - a `Raw` name (`sql.name('x')`), where an alias or a column name stands: spliced into the text after a
 *   check that it is a plain identifier, for names Weir makes (never a user's).
 */
import {
  parseDialect,
  type Alias,
  type ColumnExpr,
  type Expr,
  type OrderItem,
  type Query,
  type SelectQuery,
} from '../dialect/mod.ts';

/** A plain name (alias, column) written into the text; only names matching IDENT are taken. */
export interface Raw {
  readonly raw: string;
}

export type Hole = Expr | Query | readonly Expr[] | readonly ColumnExpr[] | readonly OrderItem[] | Raw;

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOLE = '__hole_';

/** Parsed templates by their strings array (one per call site), so each text is parsed once. */
const parsed = new WeakMap<TemplateStringsArray, Query>();

function isRaw(h: Hole): h is Raw {
  return typeof h === 'object' && h !== null && 'raw' in h && !('kind' in h);
}

function isQuery(node: unknown): node is Query {
  const kind = (node as { kind?: unknown }).kind;
  return kind === 'select' || kind === 'unionAll';
}

function parseTemplate(strings: TemplateStringsArray, holes: readonly Hole[], wrap: boolean): Query {
  let cached = parsed.get(strings);
  if (!cached) {
    let text = wrap ? 'SELECT ' : '';
    strings.forEach((s, i) => {
      text += s;
      if (i < holes.length) {
        const h = holes[i]!;
        if (isRaw(h)) text += `${HOLE}raw_${i}`;
        // A hole right after FROM or JOIN is a table; after ARRAY JOIN it is an expression.
        else if (/(?:FROM|(?<!ARRAY\s+)JOIN)\s*$/i.test(s)) text += `${HOLE}${i}`;
        else text += `{variables.${HOLE}${i}}`;
      }
    });
    cached = parseDialect(text);
    parsed.set(strings, cached);
  }
  return cached;
}

/** Deep copy of a parsed template with its holes filled; positions are dropped (they point into code). */
function fill(node: unknown, holes: readonly Hole[]): unknown {
  if (Array.isArray(node)) {
    const out: unknown[] = [];
    for (const item of node) {
      const hole = holeOf(item, holes);
      if (hole !== undefined && Array.isArray(hole)) out.push(...(hole as unknown[]).map(clone));
      else out.push(fill(item, holes));
    }
    return out;
  }
  if (typeof node !== 'object' || node === null) return node;
  const n = node as Record<string, unknown>;
  const hole = holeOf(n, holes);
  if (hole !== undefined) {
    if (Array.isArray(hole)) throw new Error('a list hole stands only inside a list');
    const value = clone(hole);
    return isQuery(value) ? { kind: 'subquery', query: value } : value;
  }
  if (n['kind'] === 'table' && typeof n['name'] === 'string' && n['name'].startsWith(HOLE)) {
    const h = holes[Number(n['name'].slice(HOLE.length))];
    if (!h || !isQuery(h)) throw new Error(`template hole ${n['name']} in FROM must be a query`);
    return { kind: 'tableSubquery', query: clone(h), alias: n['alias'] };
  }
  const out: Record<string, unknown> = {};
  for (const key in n) {
    if (key === 'pos') continue;
    const value = fill(n[key], holes);
    // A clause whose only item was an empty list hole is no clause.
    out[key] =
      (key === 'orderBy' || key === 'groupBy') && Array.isArray(value) && value.length === 0 ? null : value;
  }
  return renameRaw(out, holes);
}

/** Aliases and names that were `sql.name` holes take their names. */
function renameRaw(n: Record<string, unknown>, holes: readonly Hole[]): Record<string, unknown> {
  for (const key of ['alias', 'name'] as const) {
    const v = n[key];
    if (typeof v === 'string' && v.startsWith(`${HOLE}raw_`)) {
      n[key] = (holes[Number(v.slice(HOLE.length + 4))] as Raw).raw;
    }
  }
  if (n['kind'] === 'field' && Array.isArray(n['chain'])) {
    n['chain'] = (n['chain'] as string[]).map((part) =>
      part.startsWith(`${HOLE}raw_`) ? (holes[Number(part.slice(HOLE.length + 4))] as Raw).raw : part,
    );
  }
  return n;
}

function holeOf(node: unknown, holes: readonly Hole[]): Hole | undefined {
  const n = node as { kind?: unknown; name?: unknown; expr?: unknown };
  if (n === null || typeof n !== 'object') return undefined;
  if (n.kind === 'placeholder' && typeof n.name === 'string' && n.name.startsWith(HOLE)) {
    return holes[Number(n.name.slice(HOLE.length))];
  }
  // A list hole in ORDER BY parses as one order item around the placeholder.
  if (n.kind === 'orderItem') {
    const inner = holeOf(n.expr, holes);
    if (inner !== undefined && Array.isArray(inner)) return inner as readonly Expr[];
  }
  return undefined;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function check(holes: readonly Hole[]): void {
  for (const h of holes) {
    if (isRaw(h) && !IDENT.test(h.raw)) throw new Error(`not a plain name: ${JSON.stringify(h.raw)}`);
  }
}

export const sql = {
  /** A whole query. */
  query(strings: TemplateStringsArray, ...holes: Hole[]): Query {
    check(holes);
    return fill(parseTemplate(strings, holes, false), holes) as Query;
  },
  /** A SELECT (not a UNION): what most builders need to add to. */
  select(strings: TemplateStringsArray, ...holes: Hole[]): SelectQuery {
    const q = sql.query(strings, ...holes);
    if (q.kind !== 'select') throw new Error('template is not a single SELECT');
    return q;
  },
  /** One expression. */
  expr(strings: TemplateStringsArray, ...holes: Hole[]): Expr {
    check(holes);
    const q = fill(parseTemplate(strings, holes, true), holes) as SelectQuery;
    return q.columns[0] as Expr;
  },
  /** A plain name for an alias or column, for names Weir makes. */
  name(raw: string): Raw {
    return { raw };
  },
};

// ------------------------------------------------------------------------------------ small builders

export function str(value: string): Expr {
  return { kind: 'string', value };
}

export function num(value: number): Expr {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return value < 0
    ? { kind: 'negate', operand: { kind: 'number', text: String(-value) } }
    : { kind: 'number', text: String(value) };
}

export function bool(value: boolean): Expr {
  return { kind: 'boolean', value };
}

export function placeholder(name: string): Expr {
  return { kind: 'placeholder', name };
}

/** `a AND b AND …` of the operands that are not null; `true` when none is left. */
export function and(...operands: readonly (Expr | null | undefined)[]): Expr {
  const list = operands.filter((e): e is Expr => e != null);
  if (list.length === 0) return bool(true);
  if (list.length === 1) return list[0]!;
  return { kind: 'and', operands: list };
}

export function or(...operands: readonly Expr[]): Expr {
  if (operands.length === 0) return bool(false);
  if (operands.length === 1) return operands[0]!;
  return { kind: 'or', operands: [...operands] };
}

export function not(operand: Expr): Expr {
  return { kind: 'not', operand };
}

export function call(name: string, ...args: Expr[]): Expr {
  return { kind: 'call', name, params: null, args, distinct: false, over: null };
}

export function array(items: readonly Expr[]): Expr {
  return { kind: 'array', items: [...items] };
}

export function tuple(items: readonly Expr[]): Expr {
  return { kind: 'tuple', items: [...items] };
}

/** `expr AS name`, for a list of SELECT columns; `name` is Weir's own. */
export function alias(expr: Expr, name: string): Alias {
  return { kind: 'alias', expr, alias: name };
}
