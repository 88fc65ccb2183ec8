/**
 * Reading PostHog's virtual fields (`pdi`, `poe`, `person.created_at`, `group_N`, `session`, virtual.ts
 * says what each is): columns renamed, expressions over the table's own columns, and the tables other fields
 * read through a join added to the SELECT when first used.
 */
import { printDialectExpr, type Expr, type Field } from '../dialect/mod.ts';
import type { Context } from './context.ts';
import { QueryResolveError, listed, shown } from './errors.ts';
import { hasOwn, Scope, type ColumnInfo, type LazyJoin, type Source } from './scope.ts';
import {
  expressionOn,
  parsedOnce,
  type ExpressionField,
  type JoinedColumn,
  type LazyJoinSpec,
  type VirtualField,
} from './virtual.ts';

/** `pdi.person_id`, `person.created_at`, `group_0.properties.name`, `session.$session_duration`, `poe.id`. */
export function virtualRef(
  cx: Context,
  source: Source,
  qualifier: string[],
  name: string,
  virtual: VirtualField,
  rest: string[],
  node: Field,
  scope: Scope,
): Expr {
  if (virtual.kind === 'expression') return expressionRef(cx, source, name, virtual, rest, node);
  const [part, ...more] = rest;
  if (virtual.kind === 'columns') {
    if (part !== undefined && hasOwn(virtual.columns, part)) {
      return cx.columnRef(source, qualifier, virtual.columns[part]!, more, node, scope);
    }
    if (part !== undefined && hasOwn(virtual.expressions, part)) {
      return expressionRef(cx, source, part, virtual.expressions![part]!, more, node);
    }
    if (part !== undefined && virtual.otherwise !== undefined) {
      const via = lazyJoin(cx, source, virtual.otherwise.field, scope, node);
      const target = lazyJoin(cx, via, name, scope, node, virtual.otherwise.join);
      return cx.columnRef(target, [target.name!], part, more, node, scope);
    }
    throw new QueryResolveError(
      part === undefined
        ? `${shown(name)} is not a column: ${virtual.hint}`
        : `there is no ${name}.${part}: ${virtual.hint}`,
      node.pos,
    );
  }
  if (part === undefined) {
    const columns = listed(joinedColumnNames(virtual.join));
    throw new QueryResolveError(
      `${shown(name)} is not a column: read one of its fields (${name}.<field>: ${columns})`,
      node.pos,
    );
  }
  const target = lazyJoin(cx, source, name, scope, node, virtual.join);
  return cx.columnRef(target, [target.name!], part, more, node, scope);
}

/** `team_id`, `$virt_initial_channel_type`: an expression over the table's own columns (virtual.ts). */
function expressionRef(
  cx: Context,
  source: Source,
  name: string,
  virtual: ExpressionField,
  rest: string[],
  node: Field,
): Expr {
  if (rest.length > 0) {
    throw new QueryResolveError(`${shown(name)} is a value: it has no field ${shown(rest[0]!)}`, node.pos);
  }
  if (source.name === null) {
    throw new QueryResolveError(`${shown(name)} needs its table to have a name: give it an alias`, node.pos);
  }
  // Read in a scope of its table alone, as PostHog isolates an expression field's scope: its names are the
  // table's, whatever the query around has, and a joined table (`pdi.person`) is found by its alias too.
  const isolated = new Scope(null);
  isolated.sources.push(source);
  const expr = cx.expr(expressionOn(virtual, source.name), isolated);
  if (isolated.lazyJoins.size > 0) throw new Error(`the expression field ${name} reads through a join`);
  cx.expressionFields.set(expr, name);
  return expr;
}

/** `last_seen_at` on persons: a column of a join, named as the table's own. */
export function joinedColumnRef(
  cx: Context,
  source: Source,
  name: string,
  joined: JoinedColumn,
  rest: string[],
  node: Field,
  scope: Scope,
): Expr {
  const target = lazyJoin(cx, source, name, scope, node, joined.join);
  return cx.columnRef(target, [target.name!], joined.column, rest, node, scope);
}

/**
 * The table a lazy join makes visible, joining it to the SELECT the first time (once per owner and field):
 * `LEFT JOIN (<its query, resolved>) AS <owner>__<field> ON …`. Without `spec`, the join must exist already.
 */
function lazyJoin(
  cx: Context,
  source: Source,
  field: string,
  scope: Scope,
  node: Field,
  spec?: LazyJoinSpec,
): Source {
  if (source.name === null) {
    throw new QueryResolveError(`${shown(field)} needs its table to have a name: give it an alias`, node.pos);
  }
  const alias = `${source.name}__${field}`;
  const made = scope.lazyJoins.get(alias);
  if (made !== undefined) return made.source;
  const join = spec ?? (source.virtual?.[field]?.kind === 'join' ? source.virtual[field].join : undefined);
  if (join === undefined) throw new Error(`no lazy join ${field} on ${source.description}`);
  const out = cx.query(parsedOnce(join.text), new Scope(null));
  const columns = new Map<string, ColumnInfo>();
  for (const c of out.columns) {
    if (!columns.has(c.name)) {
      columns.set(
        c.name,
        c.info.json ? { json: true, properties: join.properties ?? c.info.properties } : c.info,
      );
    }
  }
  const lazy: LazyJoin = {
    join: {
      kind: 'join',
      type: 'left',
      strictness: null,
      table: { kind: 'tableSubquery', query: out.query, alias },
      on: join.on(source.name, alias),
      using: null,
    },
    source: {
      name: alias,
      description: join.description,
      columns,
      types: new Map(),
      virtual: join.virtual,
      joinedColumns: join.joinedColumns,
    },
  };
  scope.lazyJoins.set(alias, lazy);
  return lazy.source;
}

/** The fields a lazy join offers, for messages: the columns its query names. */
function joinedColumnNames(spec: LazyJoinSpec): string[] {
  const q = parsedOnce(spec.text);
  const first = q.kind === 'select' ? q : null;
  if (first === null || first.columns.some((c) => c.kind === 'star')) return ['its columns'];
  return first.columns.map((c) => (c.kind === 'alias' ? c.alias : printDialectExpr(c)));
}
