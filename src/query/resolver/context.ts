/**
 * What the resolver's passes share while one query is resolved: its state, and the passes that call back
 * into one another (a virtual field reads columns and runs queries), so that no module imports another in
 * a cycle.
 */
import type { Expr, Field, Query, SelectQuery } from '../dialect/mod.ts';
import type { NullSafety } from './null-safety.ts';
import type { Properties } from './properties.ts';
import type { ColumnInfo, Scope, Source } from './scope.ts';

export interface OutColumn {
  readonly name: string;
  readonly info: ColumnInfo;
  /** The dialect text of a property column named by its key, to tell the same read again. */
  readonly text?: string;
}

export interface Resolved {
  readonly query: Query;
  readonly columns: readonly OutColumn[];
}

export interface Context {
  /** The database of the store tables. */
  readonly database: string;
  /** The variables the query uses, in order of first use. */
  readonly variables: Set<string>;
  readonly properties: Properties;
  readonly nulls: NullSafety;
  /** The SELECT of each scope, and the names it gives inside expressions (`(a + 1 AS b) * 2`), found when asked. */
  readonly selects: WeakMap<Scope, SelectQuery>;
  readonly inlineAliases: WeakMap<Scope, ReadonlySet<string>>;
  /** Rewritten nodes that are an expression field (`team_id`, `$virt_…`), with the field's name. */
  readonly expressionFields: WeakMap<Expr, string>;
  /** Set while resolving a window's PARTITION BY, ORDER BY and frame. */
  inWindow: boolean;
  /** The column alias whose expression is being resolved, in which its own name is the table's column. */
  defining: string | null;
  /** resolver.ts's query(): `top` for the query whose result a caller reads (and its UNION ALL members). */
  query(q: Query, parent: Scope, top?: boolean): Resolved;
  /** expressions.ts's expr(). */
  expr(e: Expr, scope: Scope): Expr;
  /** fields.ts's columnRef(). */
  columnRef(
    source: Source,
    qualifier: string[],
    name: string,
    rest: string[],
    node: Field,
    scope: Scope,
  ): Expr;
}
