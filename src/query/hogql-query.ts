/**
 * One ad-hoc query in the dialect (PostHog's `HogQLQuery`): parse → resolve → bind variables → print
 * ClickHouse SQL → run on the store, confined to one project. What the query API answers.
 */
import type { ReadKind, ResultTable, TableReader } from '../core/ports.ts';
import type { PropertyDefinitions, PropertyTypes } from '../core/property-types.ts';
import { AppError } from '../errors/app-error.ts';
import { queryFailure } from './clickhouse/errors.ts';
import {
  DEFAULT_LIMITS,
  MAX_PRINTED_LENGTH,
  printClickHouse,
  type QueryLimits,
} from './clickhouse/printer.ts';
import {
  bindVariables,
  inlineValues,
  type BoundVariable,
  type VariableType,
} from './clickhouse/variables.ts';
import { DialectSyntaxError, parseDialect, printDialect, type Query } from './dialect/mod.ts';
import { QueryResolveError } from './resolver/errors.ts';
import { resolveQuery, type ResolvedQuery } from './resolver/resolver.ts';

export interface HogQLQueryInput {
  /** The SQL text, in the dialect. */
  readonly query: string;
  /** Values by variable name. */
  readonly variables: Readonly<Record<string, unknown>>;
  /** Declared variable types (an endpoint's); values of undeclared variables are typed by their JSON value. */
  readonly types?: Readonly<Record<string, VariableType>>;
}

/** PostHog's `timings` entries: a step and its seconds. */
export interface Timing {
  readonly k: string;
  readonly t: number;
}

export interface HogQLQueryResult {
  readonly results: unknown[][];
  readonly columns: string[];
  readonly types: string[];
  /** The query as Weir read it, canonical, values inlined (for a person, never run). */
  readonly hogql: string;
  /** The ClickHouse SQL that ran, parameters as `{name:Type}`. */
  readonly clickhouse: string;
  readonly timings: Timing[];
}

export interface HogQLQueryDeps {
  readonly store: TableReader;
  /** @default DEFAULT_LIMITS */
  readonly limits?: QueryLimits;
  /** The database of the store tables. @default 'default' */
  readonly database?: string;
  /** The projects' property types; without them every property reads as text. */
  readonly properties?: PropertyDefinitions;
  /** What the run is for, as the store shares itself out. @default 'adhoc' in runHogQLQuery, else 'endpoint' */
  readonly kind?: ReadKind;
}

/**
 * Parses and resolves a query: what an endpoint checks at create time. Throws AppError `invalid_query`.
 * `properties` types the project's properties (`sum(properties.price)`); without them they read as text.
 */
export function compileQuery(
  text: string,
  database?: string,
  properties?: PropertyTypes,
): { ast: Query; resolved: ResolvedQuery } {
  let ast: Query;
  try {
    ast = parseDialect(text);
  } catch (err) {
    if (err instanceof DialectSyntaxError) throw invalidQuery(`Syntax error: ${err.message}`, err);
    throw err;
  }
  try {
    return { ast, resolved: resolveQuery(ast, { database, properties }) };
  } catch (err) {
    if (err instanceof QueryResolveError) throw invalidQuery(capitalise(err.message), err);
    throw err;
  }
}

export async function runHogQLQuery(
  input: HogQLQueryInput,
  projectId: number,
  deps: HogQLQueryDeps,
): Promise<HogQLQueryResult> {
  const clock = new Timings();
  const compiled = compileQuery(input.query, deps.database, deps.properties?.forProject(projectId));
  clock.lap('./compile');
  const bound = bindVariables(compiled.resolved.variables, input.variables, input.types);
  return runCompiledQuery(compiled, bound, projectId, { ...deps, kind: deps.kind ?? 'adhoc' }, clock);
}

/** A parsed query and its resolution, as `compileQuery` makes them (or a rewrite of both, kept in step). */
export interface CompiledQuery {
  readonly ast: Query;
  readonly resolved: ResolvedQuery;
}

/**
 * Runs a compiled query with its variables bound: prints the ClickHouse SQL (the run's limits in its
 * SETTINGS clause), runs it on the store and answers the result with `hogql` (the tree as text, values
 * inlined), `clickhouse` and `timings`. 400 `query_limit_exceeded`, 504 `timeout` or `invalid_query` when the
 * store refuses or stops it; 429 `throttled` when the project has its limit of ad-hoc queries under way.
 */
export async function runCompiledQuery(
  compiled: CompiledQuery,
  bound: ReadonlyMap<string, BoundVariable>,
  projectId: number,
  deps: HogQLQueryDeps,
  clock: Timings = new Timings(),
): Promise<HogQLQueryResult> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const { ast, resolved } = compiled;
  const printed = printClickHouse(resolved, bound, projectId, limits);
  if (printed.sql.length > MAX_PRINTED_LENGTH) {
    throw new AppError('query_limit_exceeded', {
      detail: `Translated for ClickHouse the query is ${printed.sql.length} characters long; the limit is ${MAX_PRINTED_LENGTH}. Make it smaller (a long IN list can be a list variable).`,
      attr: 'query',
    });
  }
  const hogql = printDialect(ast, { inline: inlineValues(bound) });
  clock.lap('./print');

  let table: ResultTable;
  try {
    // Waiting for the engine (busy with other queries) counts against the run's limit as running does.
    table = await deps.store.queryTable(printed.sql, printed.params, {
      maxWaitMs: limits.maxExecutionSeconds * 1000,
      project: projectId,
      kind: deps.kind ?? 'endpoint',
    });
  } catch (err) {
    throw queryFailure(err, limits);
  }
  clock.lap('./clickhouse');
  if (table.rows.length > limits.maxResultRows) {
    throw new AppError('query_limit_exceeded', {
      detail: `The result has more than ${limits.maxResultRows} rows: add a LIMIT, or aggregate further.`,
      attr: 'query',
    });
  }
  const results = numbersFor64BitIntegers(table);
  return {
    results,
    // Weir's names when it could tell every column (a `*` over a USING join can make ClickHouse's count differ).
    columns: resolved.columns.length === table.columns.length ? [...resolved.columns] : [...table.columns],
    types: [...table.types],
    hogql,
    clickhouse: printed.sql,
    timings: clock.done(),
  };
}

/** PostHog's `timings`: each step's seconds since the one before, then the whole (`.`). */
export class Timings {
  readonly #entries: Timing[] = [];
  readonly #started = performance.now();
  #mark = this.#started;

  lap(k: string): void {
    const now = performance.now();
    this.#entries.push({ k, t: round((now - this.#mark) / 1000) });
    this.#mark = now;
  }

  done(): Timing[] {
    return [...this.#entries, { k: '.', t: round((performance.now() - this.#started) / 1000) }];
  }
}

const WIDE_INTEGER = /^(?:Nullable\()?(?:LowCardinality\()?U?Int(?:64|128|256)\)*$/;

/**
 * 64-bit and wider integers arrive quoted (so none loses precision in JSON). Those a JavaScript number
 * holds exactly become numbers again; larger ones stay strings. Integers nested in arrays or tuples stay
 * strings.
 */
function numbersFor64BitIntegers(table: ResultTable): unknown[][] {
  const wide = table.types.map((t) => WIDE_INTEGER.test(t));
  if (!wide.includes(true)) return table.rows as unknown[][];
  return table.rows.map((row) =>
    row.map((v, i) => {
      if (!wide[i] || typeof v !== 'string') return v;
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    }),
  );
}

function invalidQuery(detail: string, cause: unknown): AppError {
  return new AppError('invalid_query', { detail, attr: 'query', cause });
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function round(seconds: number): number {
  return Math.round(seconds * 1e6) / 1e6;
}
