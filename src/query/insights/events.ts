/**
 * Expressions over the `events` table that every insight kind uses: property values, property filters,
 * breakdown values, the actor (the person now behind the event's distinct id), and the events subquery they
 * are read from. All are dialect AST; values from the query definition enter as literal nodes.
 */
import type { Expr, SelectQuery } from '../dialect/mod.ts';
import type { Breakdown, FilterValue, PropertyFilter, PropertyType } from './common.ts';
import { parseRelativeOrAbsolute, resolveRange } from './date-range.ts';
import { and, num, or, sql, str } from './template.ts';

/** The alias every insight gives the events table. */
export const E = 'e';

/** A property of the event (`e.properties['key']`) or of its person as the event saw it, as Nullable(String). */
export function propertyValue(key: string, type: PropertyType): Expr {
  const column: Expr = {
    kind: 'field',
    chain: type === 'person' ? [E, 'person', 'properties'] : [E, 'properties'],
  };
  return { kind: 'index', object: column, index: str(key) };
}

/** The AND of filters (null when there are none). `now` resolves relative dates of the date operators. */
export function filtersExpr(filters: readonly PropertyFilter[], now: Date): Expr | null {
  if (filters.length === 0) return null;
  return and(...filters.map((f) => filterExpr(f, now)));
}

function filterExpr(f: PropertyFilter, now: Date): Expr {
  const v = propertyValue(f.key, f.type);
  const values = Array.isArray(f.value)
    ? (f.value as readonly FilterValue[])
    : f.value === null
      ? []
      : [f.value as FilterValue];
  const first = values[0] ?? '';
  switch (f.operator) {
    case 'exact':
      return or(...values.map((value) => equals(v, value)));
    case 'is_not':
      // A missing property is "not" any value (PostHog's rule).
      return sql.expr`ifNull(NOT (${or(...values.map((value) => equals(v, value)))}), true)`;
    case 'icontains':
      return sql.expr`ifNull(positionCaseInsensitiveUTF8(${v}, ${str(String(first))}) > 0, false)`;
    case 'not_icontains':
      return sql.expr`ifNull(positionCaseInsensitiveUTF8(${v}, ${str(String(first))}) = 0, true)`;
    case 'regex':
      return sql.expr`ifNull(match(${v}, ${str(String(first))}), false)`;
    case 'not_regex':
      return sql.expr`ifNull(NOT match(${v}, ${str(String(first))}), true)`;
    case 'gt':
      return sql.expr`ifNull(toFloat64OrNull(${v}) > ${num(Number(first))}, false)`;
    case 'gte':
      return sql.expr`ifNull(toFloat64OrNull(${v}) >= ${num(Number(first))}, false)`;
    case 'lt':
      return sql.expr`ifNull(toFloat64OrNull(${v}) < ${num(Number(first))}, false)`;
    case 'lte':
      return sql.expr`ifNull(toFloat64OrNull(${v}) <= ${num(Number(first))}, false)`;
    case 'is_set':
      return sql.expr`${v} IS NOT NULL`;
    case 'is_not_set':
      return sql.expr`${v} IS NULL`;
    case 'is_date_before':
      return sql.expr`ifNull(parseDateTime64BestEffortOrNull(${v}, 6, 'UTC') < ${dateLiteral(String(first), now)}, false)`;
    case 'is_date_after':
      return sql.expr`ifNull(parseDateTime64BestEffortOrNull(${v}, 6, 'UTC') > ${dateLiteral(String(first), now)}, false)`;
  }
}

/** `exact` of one value: strings as text, numbers as numbers, booleans as JSON writes them. */
function equals(v: Expr, value: FilterValue): Expr {
  if (typeof value === 'number') return sql.expr`ifNull(toFloat64OrNull(${v}) = ${num(value)}, false)`;
  if (typeof value === 'boolean') return sql.expr`ifNull(${v} = ${str(String(value))}, false)`;
  return sql.expr`ifNull(${v} = ${str(value)}, false)`;
}

/** A date operand: absolute as written, relative resolved at `now` (the start of its day). */
function dateLiteral(text: string, now: Date): Expr {
  const parsed = parseRelativeOrAbsolute(text);
  const at =
    parsed?.kind === 'absolute'
      ? parsed.at
      : resolveRange({ dateFrom: text, dateTo: null, explicitDate: false }, { interval: 'day', now }).from;
  const iso = (at === 'all' ? new Date(0) : at).toISOString().replace('T', ' ').replace('Z', '');
  return sql.expr`toDateTime64(${str(iso)}, 6, 'UTC')`;
}

/**
 * A breakdown's value for an event: the property as text, with a missing or empty value as null (PostHog's
 * `nullIf(toString(…), '')`).
 */
export function breakdownValue(b: Breakdown): Expr {
  return sql.expr`nullIf(${propertyValue(b.property, b.type)}, '')`;
}

/**
 * The person now behind the event's distinct id: `person_id` as the event was given it, unless the distinct
 * id has since moved to another person (a merge), when it is that one. Needs `eventsFrom(…, {actors: true})`.
 */
export function actor(): Expr {
  return sql.expr`if(pdi.person_id = toUUIDOrZero(''), e.person_id, pdi.person_id)`;
}

/** `e.timestamp`. */
export function timestamp(): Expr {
  return sql.expr`e.timestamp`;
}

/** An event-name condition: null (every event) for a series with no event. */
export function eventIs(event: string | null): Expr | null {
  return event === null ? null : sql.expr`e.event = ${str(event)}`;
}

/**
 * `SELECT columns FROM events AS e [LEFT JOIN person_distinct_ids AS pdi …] WHERE where`. With `actors`, the
 * join that `actor()` reads: a merged person's events, stored under their old person id, count as theirs.
 */
export function eventsFrom(
  columns: readonly Expr[],
  where: Expr,
  options: { readonly actors: boolean },
): SelectQuery {
  return options.actors
    ? sql.select`SELECT ${columns} FROM events AS e LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id WHERE ${where}`
    : sql.select`SELECT ${columns} FROM events AS e WHERE ${where}`;
}
