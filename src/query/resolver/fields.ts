/**
 * Names in expressions: a lambda parameter, a column of a table of the FROM (`event`, `e.event`), a field of
 * a JSON column (`properties.$browser`, properties.ts), a virtual field or joined column (virtual-fields.ts),
 * a column alias, or a WITH value. Anything else is an unknown column.
 */
import type { Expr, Field } from '../dialect/mod.ts';
import type { Context } from './context.ts';
import { QueryResolveError, listed, shown } from './errors.ts';
import { inlineAliases } from './inline-aliases.ts';
import { str } from './nodes.ts';
import type { JsonRef } from './properties.ts';
import { hasOwn, type Scope, type Source } from './scope.ts';
import { joinedColumnRef, virtualRef } from './virtual-fields.ts';

export function field(cx: Context, node: Field, scope: Scope): Expr {
  const [head, ...rest] = node.chain as [string, ...string[]];
  if (scope.isLambdaParam(head)) return node;
  if (rest.length > 0) {
    const source = scope.source(head);
    if (source) return columnRef(cx, source, [head], rest[0]!, rest.slice(1), node, scope);
  }
  const owner = scope.sources.find(
    (s) => s.columns.has(head) || hasOwn(s.virtual, head) || hasOwn(s.joinedColumns, head),
  );
  if (owner) {
    const ref = columnRef(cx, owner, [], head, rest, node, scope);
    // A column alias of this SELECT is meant where its name stands alone (outside its own definition), as
    // in HogQL and ClickHouse: it must not become a column of the table once joins qualify names.
    const alias = rest.length === 0 && scope.aliases.has(head) && cx.defining !== head;
    if (alias && cx.inWindow && owner.name !== null) {
      // A window orders and partitions by columns, as in HogQL; ClickHouse would read the alias there
      // (min(timestamp) OVER (ORDER BY timestamp) AS timestamp), so the column is named with its table.
      qualify(ref, owner.name);
      return ref;
    }
    if (owner.name !== null && !alias) scope.unqualified.push({ source: owner.name, ref });
    return ref;
  }
  if (scope.isValue(head) || isInlineAlias(cx, head, scope)) return node;
  throw unknownColumn(node, scope);
}

export function columnRef(
  cx: Context,
  source: Source,
  qualifier: string[],
  name: string,
  rest: string[],
  node: Field,
  scope: Scope,
): Expr {
  const info = source.columns.get(name);
  if (info === undefined) {
    const virtual = hasOwn(source.virtual, name) ? source.virtual![name]! : undefined;
    if (virtual !== undefined) return virtualRef(cx, source, qualifier, name, virtual, rest, node, scope);
    const joined = hasOwn(source.joinedColumns, name) ? source.joinedColumns![name]! : undefined;
    if (joined !== undefined) return joinedColumnRef(cx, source, name, joined, rest, node, scope);
    const at = node.chain.lastIndexOf(name);
    const property = source.columns.get('properties')?.json
      ? `; a property is read as ${[...node.chain.slice(0, at), 'properties', ...node.chain.slice(at)].join('.')}`
      : '';
    throw new QueryResolveError(
      `${source.description} has no column ${shown(name)}; its columns are ${listed([...source.columns.keys()])}${property}`,
      node.pos,
    );
  }
  const field: Field = { kind: 'field', chain: [...qualifier, name], pos: node.pos };
  if (info.nullable && rest.length === 0) cx.nulls.nullable(field);
  if (info.json) {
    const ref: JsonRef = { column: field, keys: rest.map(str), owner: info.properties };
    if (rest.length > 0) return cx.properties.extract(ref, node.pos);
    cx.properties.column(field, ref);
    return field;
  }
  if (rest.length === 0) return field;
  const type = source.types.get(name);
  if (type !== undefined) {
    throw new QueryResolveError(
      `${shown(name)} is a ${type}, not JSON: it has no field ${shown(rest[0]!)}`,
      node.pos,
    );
  }
  // An element of a tuple column of a subquery or CTE.
  return { kind: 'field', chain: [...qualifier, name, ...rest], pos: node.pos };
}

/**
 * Whether `name` is named inside an expression of this scope's SELECT. Looked for only when a name is
 * otherwise unknown, so a query without such names pays nothing for them.
 */
function isInlineAlias(cx: Context, name: string, scope: Scope): boolean {
  let names = cx.inlineAliases.get(scope);
  if (names === undefined) {
    const select = cx.selects.get(scope);
    names = select === undefined ? new Set() : inlineAliases(select);
    cx.inlineAliases.set(scope, names);
  }
  return names.has(name);
}

/**
 * Puts a table's name before the column a resolved reference reads, in place: the nodes are the resolver's
 * own, made for this query (a column, or a JSON read or typed read of one).
 */
export function qualify(ref: Expr, table: string): void {
  if (ref.kind === 'field') {
    if (ref.chain.length === 1) (ref as { chain: string[] }).chain = [table, ref.chain[0]!];
    return;
  }
  if (ref.kind === 'call' && ref.args.length > 0) qualify(ref.args[0]!, table);
}

function unknownColumn(node: Field, scope: Scope): QueryResolveError {
  const name = node.chain[0]!;
  const known = new Set<string>();
  for (const s of scope.sources) for (const c of s.columns.keys()) known.add(c);
  for (const a of scope.aliases) known.add(a);
  const near = [...known].find((k) => k.toLowerCase() === name.toLowerCase());
  let reason = `unknown column ${shown(name)}`;
  if (near) reason += `; did you mean ${shown(near)}?`;
  else if (scope.outerHas(name))
    reason +=
      ': a subquery cannot use the columns of the query around it (correlated subqueries are not supported)';
  else if (scope.sources.length === 0) reason += ' (this SELECT has no FROM clause)';
  else reason += `; the columns here are ${listed([...known])}`;
  return new QueryResolveError(reason, node.pos);
}
