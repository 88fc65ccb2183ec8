/**
 * `limit` / `offset` of an endpoint run (SPEC §4): a page of the query's result, never more than the query's
 * own LIMIT allows. One row more than the page is asked for, so that `hasMore` is known without a count.
 *
 * The page is written into the query itself, so that `hogql` shows what ran: for a SELECT with a literal
 * LIMIT (or none) its LIMIT and OFFSET change — OFFSET O + offset, LIMIT min(limit + 1, L - offset) — and
 * anything else (a UNION ALL, a LIMIT that is an expression) is wrapped as `SELECT * FROM (…) LIMIT … OFFSET …`.
 * The same rewrite applies to the parsed tree (shown) and the resolved one (run), which share their top level.
 */
import { numberValue, selectQuery, type Expr, type Query, type SelectQuery } from '../dialect/mod.ts';
import type { CompiledQuery } from '../hogql-query.ts';

export interface Page {
  /** Rows wanted; undefined: every row (up to the query's LIMIT). */
  readonly limit?: number;
  /** Rows skipped first. @default 0 */
  readonly offset?: number;
}

export function paginate(compiled: CompiledQuery, page: Page): CompiledQuery {
  if (page.limit === undefined && !page.offset) return compiled;
  return {
    ast: pageOf(compiled.ast, page),
    resolved: { ...compiled.resolved, query: pageOf(compiled.resolved.query, page) },
  };
}

/** The page's rows of what ran (which has one row more than the page when there are more). */
export function pageRows<T>(rows: T[], page: Page): { rows: T[]; hasMore: boolean } {
  if (page.limit === undefined || rows.length <= page.limit) return { rows, hasMore: false };
  return { rows: rows.slice(0, page.limit), hasMore: true };
}

function pageOf(query: Query, page: Page): Query {
  const offset = page.offset ?? 0;
  const fetch = page.limit === undefined ? undefined : page.limit + 1;
  if (query.kind === 'select') {
    const own = literal(query.limit);
    const ownOffset = literal(query.offset);
    if (own !== undefined && ownOffset !== undefined) {
      const total = ownOffset ?? 0; // offset the query itself skips
      let limit: number | null = fetch ?? null;
      if (own !== null) limit = Math.min(limit ?? Infinity, Math.max(own - offset, 0));
      return {
        ...query,
        limit: limit === null ? null : number(limit),
        offset: total + offset === 0 ? null : number(total + offset),
      };
    }
  }
  return wrap(query, fetch, offset);
}

/** A non-negative integer literal's value; null for no clause; undefined for anything else. */
function literal(e: Expr | null): number | null | undefined {
  if (e === null) return null;
  if (e.kind !== 'number') return undefined;
  const n = numberValue(e);
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function number(n: number): Expr {
  return { kind: 'number', text: String(n) };
}

function wrap(query: Query, fetch: number | undefined, offset: number): SelectQuery {
  return selectQuery({
    columns: [{ kind: 'star', table: null }],
    from: {
      kind: 'from',
      table: { kind: 'tableSubquery', query, alias: null },
      joins: [],
    },
    limit: fetch === undefined ? null : number(fetch),
    offset: offset === 0 ? null : number(offset),
  });
}
