/**
 * Prints a resolved query as the ClickHouse SQL that runs: the rewritten tree in dialect syntax (which
 * ClickHouse reads as the same tree; test/integration/dialect-clickhouse.test.ts), placeholders as typed
 * query parameters, and the run's limits as the query's own SETTINGS clause.
 *
 * Why a SETTINGS clause and not the client's per-query settings: on chDB, `@clickhouse/client`'s
 * `clickhouse_settings` become `SET` statements on the one session every query and insert share, so a
 * `readonly = 1` there would outlive the query and refuse the next insert. A SETTINGS clause binds to its
 * query alone, and reads the same on a ClickHouse server. The dialect refuses SETTINGS in a caller's text,
 * so the only one is Weir's.
 */
import {
  numberValue,
  printDialect,
  selectQuery,
  type Expr,
  type FromClause,
  type Query,
} from '../dialect/mod.ts';
import type { ResolvedQuery } from '../resolver/resolver.ts';
import { PROJECT_PLACEHOLDER } from '../resolver/store-table.ts';
import type { BoundVariable, ParamValue } from './variables.ts';

/** What one run may cost. */
export interface QueryLimits {
  /** @default 60 */
  readonly maxExecutionSeconds: number;
  /** @default 4 GiB */
  readonly maxMemoryBytes: number;
  /** Rows the result may have; more is an error (query_limit_exceeded), never a silent cut. @default 50000 */
  readonly maxResultRows: number;
  /** Bytes the result may have in memory. @default 100 MiB */
  readonly maxResultBytes: number;
}

export const DEFAULT_LIMITS: QueryLimits = Object.freeze({
  maxExecutionSeconds: 60,
  maxMemoryBytes: 4 * 1024 ** 3,
  maxResultRows: 50_000,
  maxResultBytes: 100 * 1024 ** 2,
});

/** ClickHouse's own `max_query_size`, which a query's SETTINGS cannot raise (they are read after parsing). */
export const MAX_PRINTED_LENGTH = 262_144;

export const PROJECT_PARAM = 'weir_project';

export interface PrintedQuery {
  readonly sql: string;
  readonly params: Record<string, ParamValue>;
}

export function printClickHouse(
  resolved: ResolvedQuery,
  bound: ReadonlyMap<string, BoundVariable>,
  projectId: number,
  limits: QueryLimits = DEFAULT_LIMITS,
): PrintedQuery {
  const params: Record<string, ParamValue> = { [PROJECT_PARAM]: projectId };
  for (const b of bound.values()) params[b.param] = b.value;
  const text = printDialect(capRows(resolved.query, limits.maxResultRows + 1), {
    placeholder: (name) => {
      if (name === PROJECT_PLACEHOLDER) return `{${PROJECT_PARAM}:UInt64}`;
      const b = bound.get(name);
      if (b === undefined) throw new Error(`variable ${name} is not bound`);
      return `{${b.param}:${b.type}}`;
    },
  });
  return { sql: `${text} SETTINGS ${settingsClause(limits)}`, params };
}

/**
 * The query with at most `cap` rows: a LIMIT added, or the query's own LIMIT held to `cap`. One row more
 * than a result may have is asked for, so the run can tell a result that is too large from one that fits,
 * and refuse it rather than cut it silently. (`max_result_rows` alone is not enough: rows an ARRAY JOIN makes
 * after reading escape it.) Each member of a UNION ALL is capped: if one has more, so has the whole.
 */
export function capRows(query: Query, cap: number): Query {
  if (query.kind === 'unionAll') return { ...query, queries: query.queries.map((q) => capRows(q, cap)) };
  if (query.kind === 'setOperation') {
    // INTERSECT and EXCEPT read all of each member, so the cap goes on the whole.
    const from: FromClause = {
      kind: 'from',
      table: { kind: 'tableSubquery', query, alias: null },
      joins: [],
    };
    return capRows(selectQuery({ columns: [{ kind: 'star', table: null }], from }), cap);
  }
  const limit = query.limit;
  const capNode: Expr = { kind: 'number', text: String(cap) };
  if (limit === null) return { ...query, limit: capNode };
  if (limit.kind === 'number') {
    const n = numberValue(limit);
    return typeof n === 'number' && n <= cap ? query : { ...query, limit: capNode };
  }
  return {
    ...query,
    limit: { kind: 'call', name: 'least', params: null, args: [limit, capNode], distinct: false, over: null },
  };
}

/**
 * The limits of a run. `readonly` comes last: once set, ClickHouse refuses any later setting of the clause.
 * 64-bit integers are quoted in the JSON output so that none loses precision on the way; the run turns the
 * safe ones back into numbers.
 */
function settingsClause(limits: QueryLimits): string {
  const settings: [string, string | number][] = [
    ['max_execution_time', limits.maxExecutionSeconds],
    ['max_memory_usage', limits.maxMemoryBytes],
    ['max_result_rows', limits.maxResultRows],
    ['max_result_bytes', limits.maxResultBytes],
    ['result_overflow_mode', 'throw'],
    ['output_format_json_quote_64bit_integers', 1],
    ['readonly', 1],
  ];
  return settings.map(([k, v]) => `${k} = ${typeof v === 'number' ? v : `'${v}'`}`).join(', ');
}
