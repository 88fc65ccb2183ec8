/** Helpers for dialect tests: trees without positions, a compact S-expression view, what a text is refused with. */
import type { Expr, Query, TypeArg } from '../../src/query/dialect/ast.ts';
import { DialectSyntaxError } from '../../src/query/dialect/errors.ts';
import { parseDialect } from '../../src/query/dialect/parser.ts';
import { QueryResolveError } from '../../src/query/resolver/errors.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';

/** A deep copy without `pos`, so that trees from different texts compare by shape alone. */
export function stripPositions<T>(value: T): T {
  if (Array.isArray(value)) return value.map(stripPositions) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (k !== 'pos') out[k] = stripPositions(v);
    return out as T;
  }
  return value;
}

function typeText(t: TypeArg): string {
  switch (t.kind) {
    case 'type':
      return t.args.length === 0 ? t.name : `${t.name}(${t.args.map(typeText).join(', ')})`;
    case 'namedType':
      return `${t.name} ${typeText(t.type)}`;
    case 'number':
      return t.text;
    case 'string':
      return `'${t.value}'`;
  }
}

/** `(or a (and b c))`: how an expression was grouped, at a glance. */
export function sexpr(e: Expr): string {
  const s = (...parts: (string | Expr)[]): string =>
    `(${parts.map((p) => (typeof p === 'string' ? p : sexpr(p))).join(' ')})`;
  switch (e.kind) {
    case 'number':
      return e.text;
    case 'string':
      return `'${e.value}'`;
    case 'boolean':
      return String(e.value);
    case 'null':
      return 'NULL';
    case 'placeholder':
      return `{${e.name}}`;
    case 'field':
      return e.chain.join('.');
    case 'star':
      return e.table ? `${e.table.join('.')}.*` : '*';
    case 'call':
      return s(
        'call',
        e.name + (e.distinct ? ' DISTINCT' : ''),
        ...(e.params ? [s('params', ...e.params)] : []),
        ...e.args,
        ...(e.over ? ['over'] : []),
      );
    case 'lambda':
      return s('lambda', `(${e.params.join(' ')})`, e.body);
    case 'array':
      return s('array', ...e.items);
    case 'tuple':
      return s('tuple', ...e.items);
    case 'index':
      return s('[]', e.object, e.index);
    case 'tupleAccess':
      return s('.', e.object, String(e.element));
    case 'binary':
      return s(e.op, e.left, e.right);
    case 'and':
    case 'or':
      return s(e.kind, ...e.operands);
    case 'concat':
      return s('||', ...e.operands);
    case 'not':
      return s('not', e.operand);
    case 'negate':
      return s('neg', e.operand);
    case 'between':
      return s(e.not ? 'notBetween' : 'between', e.expr, e.low, e.high);
    case 'isNull':
      return s(e.not ? 'isNotNull' : 'isNull', e.operand);
    case 'ternary':
      return s('?', e.condition, e.whenTrue, e.whenFalse);
    case 'case':
      return s(
        'case',
        ...(e.subject ? [e.subject] : []),
        ...e.branches.map((b) => s('when', b.when, b.result)),
        ...(e.otherwise ? [s('else', e.otherwise)] : []),
      );
    case 'interval':
      return s('interval', e.value, e.unit);
    case 'cast':
      return s('cast', e.expr, typeText(e.type));
    case 'subquery':
      return '(subquery)';
    case 'alias':
      return s('as', e.expr, e.alias);
    case 'tag':
      return s(
        `<${e.name}>`,
        ...e.attributes.flatMap((a) => [a.name, ...(Array.isArray(a.value) ? a.value : [a.value])]),
      );
    case 'dict':
      return s('dict', ...e.entries.flatMap((x) => [x.key, x.value]));
  }
}

/** The only column of a one-column SELECT. */
export function onlyColumn(q: Query): Expr {
  if (q.kind !== 'select' || q.columns.length !== 1) throw new Error('expected a one-column SELECT');
  const c = q.columns[0]!;
  return c.kind === 'alias' ? c.expr : c;
}

/** `reason @line:column` of the parser's refusal, or 'accepted'. */
export function syntaxError(text: string): string {
  try {
    parseDialect(text);
  } catch (err) {
    if (err instanceof DialectSyntaxError) return `${err.reason} @${err.line}:${err.column}`;
    throw err;
  }
  return 'accepted';
}

/** The resolver's reason for refusing a query that parses, or `accepted`. */
export function refusal(text: string): string {
  try {
    resolveQuery(parseDialect(text));
  } catch (err) {
    if (err instanceof QueryResolveError) return err.reason;
    throw err;
  }
  return 'accepted';
}
