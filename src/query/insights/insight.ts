/**
 * Insight endpoints (SPEC §4): a TrendsQuery, FunnelsQuery or RetentionQuery is read and checked when the
 * endpoint is made, and at each run becomes a dialect query (for the range resolved at that moment and the
 * run's magic variables) that goes through the same resolver and printer as a SQL endpoint's. The range's
 * ends and a selected breakdown value are bound as typed parameters (`{variables.date_from}`, …), so
 * `hogql` shows them inlined and the cache keys on them.
 */
import { AppError } from '../../errors/app-error.ts';
import type { BoundVariable } from '../clickhouse/variables.ts';
import type { CompiledQuery } from '../hogql-query.ts';
import { QueryResolveError } from '../resolver/errors.ts';
import { resolveQuery } from '../resolver/resolver.ts';
import { dateTimeParam, parseRelativeOrAbsolute, type ResolvedRange } from './date-range.ts';
import { funnels } from './funnels.ts';
import {
  INSIGHT_KINDS,
  type BreakdownSelection,
  type CheckedInsight,
  type CompileContext,
  type InsightKind,
  type InsightKindSpec,
  OTHER,
} from './kind.ts';
import { ObjectReader, invalidInsight } from './reader.ts';
import { retention } from './retention.ts';
import { sql } from './template.ts';
import { trends } from './trends.ts';

const SPECS: Readonly<Record<InsightKind, InsightKindSpec<CheckedInsight>>> = {
  TrendsQuery: trends,
  FunnelsQuery: funnels,
  RetentionQuery: retention,
};

export interface CheckedInsightQuery {
  readonly kind: InsightKind;
  readonly checked: CheckedInsight;
}

export function isInsightKind(kind: unknown): kind is InsightKind {
  return typeof kind === 'string' && (INSIGHT_KINDS as readonly string[]).includes(kind);
}

/** Reads and checks an insight query object (at attr `query`). 400 `invalid_query` naming the field. */
export function readInsight(raw: unknown): CheckedInsightQuery {
  const q = ObjectReader.of(raw, 'query');
  const kind = q.raw('kind');
  if (!isInsightKind(kind)) {
    throw invalidInsight('query.kind', `'query.kind' is one of HogQLQuery, ${INSIGHT_KINDS.join(', ')}.`);
  }
  return { kind, checked: SPECS[kind].read(q) };
}

/** The magic variables a version takes (SPEC §4): its breakdown property (one breakdown only), the dates. */
export interface MagicVariables {
  /** The breakdown property's name, when the insight has exactly one breakdown. */
  readonly breakdown: string | null;
  /** Whether `date_from` / `date_to` are taken (not on a materialized version). */
  readonly dates: boolean;
}

export function magicVariables(insight: CheckedInsightQuery, materialized: boolean): MagicVariables {
  const breakdowns = insight.checked.base.breakdown?.breakdowns ?? [];
  return { breakdown: breakdowns.length === 1 ? breakdowns[0]!.property : null, dates: !materialized };
}

/**
 * A run's values, before its query is compiled: enough to key the cache, so a cached answer costs no
 * compile (a funnel's query takes tens of milliseconds to build and resolve).
 */
export interface InsightRunPlan {
  readonly insight: CheckedInsightQuery;
  /** The values the query's placeholders take: `date_to`, `date_from` (not with `all`), `breakdown_value`. */
  readonly values: ReadonlyMap<string, BoundVariable>;
  readonly selection: BreakdownSelection | null;
  readonly range: ResolvedRange;
  readonly now: Date;
  /** What tells this run's result apart beside `values` (the null breakdown value binds none). */
  readonly key: string;
}

export interface PreparedInsightRun {
  readonly compiled: CompiledQuery;
  /** The values of the placeholders the query uses. */
  readonly bound: Map<string, BoundVariable>;
  /** The `breakdown_value` column's name, when the answer has one. */
  readonly breakdownColumn: string | null;
  /** Whether rows of `Other` are left out of the answer (hasMore still tells of them). */
  readonly hideOther: boolean;
}

export interface InsightRunOptions {
  readonly now: Date;
  readonly materialized: boolean;
  /** The database of the store tables. */
  readonly database?: string;
}

/** Plans and compiles a run at once (create-time checks, tests). */
export function prepareInsightRun(
  insight: CheckedInsightQuery,
  variables: Readonly<Record<string, unknown>>,
  options: InsightRunOptions,
): PreparedInsightRun {
  return compileInsightRun(planInsightRun(insight, variables, options), options.database);
}

/**
 * A run's plan: the variables checked (400 `unknown_variable`, `invalid_variable`,
 * `date_variables_unavailable`) and the range resolved at `now`.
 */
export function planInsightRun(
  insight: CheckedInsightQuery,
  variables: Readonly<Record<string, unknown>>,
  options: InsightRunOptions,
): InsightRunPlan {
  const magic = magicVariables(insight, options.materialized);
  const overrides: { dateFrom?: string; dateTo?: string } = {};
  let selection: BreakdownSelection | null = null;
  let selected: string | null = null;
  for (const [name, value] of Object.entries(variables)) {
    if (name === 'date_from' || name === 'date_to') {
      if (!magic.dates) {
        throw new AppError('date_variables_unavailable', {
          detail: `'${name}' is not taken by a materialized insight endpoint: its result is computed for the insight's own date range. Run it with refresh 'direct' on a version that is not materialized to choose dates.`,
          attr: 'variables',
        });
      }
      if (
        typeof value !== 'string' ||
        !/^\d{4}-\d{2}-\d{2}$/.test(value) ||
        !parseRelativeOrAbsolute(value)
      ) {
        throw new AppError('invalid_variable', {
          detail: `Variable '${name}': must be a date, YYYY-MM-DD.`,
          attr: 'variables',
        });
      }
      overrides[name === 'date_from' ? 'dateFrom' : 'dateTo'] = value;
    } else if (magic.breakdown !== null && name === magic.breakdown) {
      if (value === null || value === '') selection = { kind: 'null' };
      else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
        selection = { kind: 'value' };
        selected = String(value);
      } else {
        throw new AppError('invalid_variable', {
          detail: `Variable '${name}': a breakdown value is a string (or "" / null for the rows without one).`,
          attr: 'variables',
        });
      }
    } else {
      const taken = [magic.breakdown, ...(magic.dates ? ['date_from', 'date_to'] : [])].filter(
        (n) => n !== null,
      );
      throw new AppError('unknown_variable', {
        detail: `Unknown variable(s): ${name.slice(0, 64)}. This insight endpoint takes ${
          taken.length === 0 ? 'no variables' : taken.map((n) => `'${n}'`).join(', ')
        }.`,
        attr: 'variables',
      });
    }
  }
  if (overrides.dateFrom && overrides.dateTo && overrides.dateFrom > overrides.dateTo) {
    throw new AppError('invalid_variable', {
      detail: `Variable 'date_from' (${overrides.dateFrom}) is after 'date_to' (${overrides.dateTo}).`,
      attr: 'variables',
    });
  }

  const range = SPECS[insight.kind].range(insight.checked, overrides, options.now);
  const values = new Map<string, BoundVariable>();
  const bind = (name: string, type: string, value: string): void => {
    values.set(name, { name, param: `var_${name}`, type, value });
  };
  bind('date_to', DATETIME, dateTimeParam(range.to, true));
  if (range.from !== 'all') bind('date_from', DATETIME, dateTimeParam(range.from, false));
  if (selected !== null) bind('breakdown_value', 'String', selected);
  return {
    insight,
    values,
    selection,
    range,
    now: options.now,
    key: selection?.kind === 'null' ? '\0null' : '',
  };
}

const DATETIME = "DateTime64(6, 'UTC')";

/**
 * Compiled queries of an insight by the shape of a run: what the query's text depends on besides the
 * placeholders' values (the breakdown selection, a range from `all`, and the hour, which relative dates in
 * filters are resolved at). A version's runs in one hour share one compile.
 */
const compiledShapes = new WeakMap<CheckedInsightQuery, Map<string, Omit<PreparedInsightRun, 'bound'>>>();
const MAX_SHAPES = 64;

/** The run's query: the kind compiled (once per shape), resolved, and the plan's values bound. */
export function compileInsightRun(plan: InsightRunPlan, database?: string): PreparedInsightRun {
  const { insight, range, selection } = plan;
  const hour = Math.floor(plan.now.getTime() / 3_600_000);
  const shape = `${selection?.kind ?? '-'}\0${range.from === 'all' ? 'all' : ''}\0${hour}\0${database ?? ''}`;
  let shapes = compiledShapes.get(insight);
  if (!shapes) compiledShapes.set(insight, (shapes = new Map<string, Omit<PreparedInsightRun, 'bound'>>()));
  let compiled = shapes.get(shape);
  if (!compiled) {
    compiled = compileShape(insight, plan, database);
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(shape, compiled);
  }
  const bound = new Map<string, BoundVariable>();
  for (const name of compiled.compiled.resolved.variables) {
    const v = plan.values.get(name);
    if (!v) throw new Error(`insight query uses an unknown placeholder: ${name}`);
    bound.set(name, v);
  }
  return { ...compiled, bound };
}

function compileShape(
  insight: CheckedInsightQuery,
  plan: InsightRunPlan,
  database: string | undefined,
): Omit<PreparedInsightRun, 'bound'> {
  const ctx: CompileContext = {
    now: plan.now,
    dateFrom: () =>
      plan.range.from === 'all'
        ? // The project's first event; an empty project's range is its end alone.
          sql.expr`(SELECT if(count() = 0, {variables.date_to}, toStartOfDay(min(timestamp))) FROM events)`
        : sql.expr`{variables.date_from}`,
    dateTo: () => sql.expr`{variables.date_to}`,
    selection: plan.selection,
  };
  const compiled = SPECS[insight.kind].compile(insight.checked, ctx);
  let resolved;
  try {
    resolved = resolveQuery(compiled.query, { database });
  } catch (err) {
    // The query is Weir's own: a resolver refusal is Weir's fault, not the caller's.
    if (err instanceof QueryResolveError)
      throw new Error(`insight query does not resolve: ${err.message}`, { cause: err });
    throw err;
  }
  return {
    compiled: { ast: compiled.query, resolved },
    breakdownColumn: compiled.breakdownColumn,
    hideOther: insight.checked.base.breakdown?.hideOther ?? false,
  };
}

/**
 * The answer's rows and `hasMore`: true when a row is the `Other` of values past the breakdown limit. With
 * `breakdown_hide_other_aggregation` those rows are left out, and hasMore still says they were there.
 */
export function finishInsightRows(
  prepared: PreparedInsightRun,
  columns: readonly string[],
  rows: unknown[][],
): { rows: unknown[][]; hasMore: boolean } {
  if (prepared.breakdownColumn === null) return { rows, hasMore: false };
  const i = columns.indexOf(prepared.breakdownColumn);
  const isOther = (row: unknown[]): boolean =>
    row[i] === OTHER || (Array.isArray(row[i]) && (row[i] as unknown[]).includes(OTHER));
  const hasMore = rows.some(isOther);
  return { rows: prepared.hideOther ? rows.filter((row) => !isOther(row)) : rows, hasMore };
}
