/**
 * What a name can mean at one point of a query. Each SELECT has a scope: the tables of its FROM (sources),
 * its column aliases, its named windows, and the lambda parameters around the expression being resolved.
 * CTEs (`WITH name AS (…)`) and WITH values (`WITH expr AS name`) are also seen by every query nested inside;
 * sources and aliases are not (a correlated subquery is refused as an unknown column, as ClickHouse would).
 */

import type { Expr, Join } from '../dialect/mod.ts';
import type { PropertyOwner } from './schema.ts';
import type { JoinedColumn, VirtualField } from './virtual.ts';

/** How a column may be read further: JSON columns take keys (`properties.$browser`). */
export interface ColumnInfo {
  readonly json: boolean;
  /** Whose property definitions type its keys. */
  readonly properties?: PropertyOwner;
  /** A column of a subquery or CTE that may be NULL (a NULL, a property): comparisons with it are null-safe. */
  readonly nullable?: boolean;
}

export const PLAIN: ColumnInfo = { json: false };
export const NULLABLE: ColumnInfo = { json: false, nullable: true };

/** A table of a FROM clause as a query sees it. */
export interface Source {
  /** What columns are qualified with: the alias, or a table's own name; null for an unaliased subquery. */
  readonly name: string | null;
  /** What it is, for messages: "table events", "subquery a", "CTE active". */
  readonly description: string;
  readonly columns: ReadonlyMap<string, ColumnInfo>;
  /** Its query yields a name more than once: `*` over it names each once, as PostHog's does (the first's value). */
  readonly repeats?: boolean;
  /** Column types, for messages; empty for derived tables. */
  readonly types: ReadonlyMap<string, string>;
  /** Fields that read another table through a join made when used (`pdi`, `person`, `session` on events). */
  readonly virtual?: Readonly<Record<string, VirtualField>>;
  /** Columns computed by a join when read (`last_seen_at` on persons). */
  readonly joinedColumns?: Readonly<Record<string, JoinedColumn>>;
}

/** A join the resolver added to a SELECT for a virtual field, and the table it makes visible. */
export interface LazyJoin {
  readonly join: Join;
  readonly source: Source;
}

/** A CTE: its name and the columns its query yields. */
export interface Cte {
  readonly name: string;
  readonly columns: ReadonlyMap<string, ColumnInfo>;
  readonly repeats: boolean;
}

export class Scope {
  readonly parent: Scope | null;
  readonly ctes = new Map<string, Cte>();
  /** WITH values (`WITH expr AS name`), usable as values here and in nested queries. */
  readonly values = new Set<string>();
  readonly sources: Source[] = [];
  /** Column aliases of this SELECT and ARRAY JOIN aliases: usable anywhere in this SELECT. */
  readonly aliases = new Set<string>();
  readonly windows = new Set<string>();
  readonly lambdas: ReadonlySet<string>[] = [];
  /** Joins made for virtual fields, by alias, in the order they must be joined. */
  readonly lazyJoins = new Map<string, LazyJoin>();
  /** References this SELECT made to its tables' columns without naming the table, and the table's name. */
  readonly unqualified: { readonly source: string; readonly ref: Expr }[] = [];

  constructor(parent: Scope | null) {
    this.parent = parent;
  }

  cte(name: string): Cte | undefined {
    return this.ctes.get(name) ?? this.parent?.cte(name);
  }

  isValue(name: string): boolean {
    return this.aliases.has(name) || this.isWithValue(name);
  }

  private isWithValue(name: string): boolean {
    return this.values.has(name) || (this.parent?.isWithValue(name) ?? false);
  }

  isLambdaParam(name: string): boolean {
    return this.lambdas.some((params) => params.has(name));
  }

  source(name: string): Source | undefined {
    return this.sources.find((s) => s.name === name);
  }

  /** Whether a name is a table or column of an enclosing query (for "correlated subqueries" messages). */
  outerHas(name: string): boolean {
    const here = (s: Scope): boolean => s.sources.some((src) => src.name === name || src.columns.has(name));
    for (let s = this.parent; s; s = s.parent) if (here(s)) return true;
    return false;
  }
}

/** Whether a record (a source's virtual fields, its joined columns, …) has a key of its own, not one of Object's. */
export function hasOwn(record: Readonly<Record<string, unknown>> | undefined, key: string): boolean {
  return record !== undefined && Object.hasOwn(record, key);
}
