/**
 * The first half of a retention's query: one pass over the events of the target and returning entities,
 * grouped by actor, giving each actor the period indexes (0 = the range's first period) of their cohorts
 * (`starts`) and of the periods they returned in (`returns`). It reads the names `first_period` (the period
 * number of the range's start) and `range_start` that retention-sql.ts defines in the query's WITH.
 */
import type { Expr, Query } from '../dialect/mod.ts';
import type { Breakdown } from './common.ts';
import type { Interval } from './date-range.ts';
import { actor, breakdownValue, eventIs, filtersExpr } from './events.ts';
import type { CompileContext } from './kind.ts';
import type { CheckedRetention, RetentionEntity } from './retention-read.ts';
import { and, num, or, sql, str } from './template.ts';

/** A number for each period, consecutive: the difference of two is how many periods apart they are. */
export function periodNumber(interval: Interval, ts: Expr): Expr {
  switch (interval) {
    case 'hour':
      return sql.expr`toInt64(toRelativeHourNum(${ts}))`;
    case 'day':
      return sql.expr`toInt64(toRelativeDayNum(${ts}))`;
    case 'week':
      // Weeks from Sunday: the day numbers of Sundays are 3 more than a multiple of 7 (1970-01-01 was a
      // Thursday), so they divide by 7 to consecutive numbers.
      return sql.expr`intDiv(toInt64(toRelativeDayNum(toStartOfWeek(${ts}, 0))), 7)`;
    case 'month':
      return sql.expr`toInt64(toRelativeMonthNum(${ts}))`;
  }
}

export interface RetentionParts {
  readonly q: CheckedRetention;
  readonly ctx: CompileContext;
  readonly breakdown: Breakdown | null;
}

/** The index of the period holding `ts`, 0 for the range's first. */
function periodIndex(p: RetentionParts, ts: Expr): Expr {
  return sql.expr`${periodNumber(p.q.interval, ts)} - first_period`;
}

function entityIs(entity: RetentionEntity, now: Date): Expr {
  return and(eventIs(entity.event), filtersExpr(entity.properties, now));
}

/**
 * The events the pass reads: those of either entity that match the query's filters. When an entity is more
 * than its name, the names are also said alone, for the table's sort key to use.
 */
function eventFilter(p: RetentionParts, first: Expr, second: Expr): Expr {
  const { q } = p;
  const same = JSON.stringify(first) === JSON.stringify(second);
  const either = same ? first : sql.expr`(${first}) OR (${second})`;
  const namesOnly =
    q.target.properties.length === 0 &&
    q.returning.properties.length === 0 &&
    q.type === 'retention_recurring';
  const named =
    namesOnly || q.target.event === null || q.returning.event === null
      ? null
      : or(...[...new Set([q.target.event, q.returning.event])].map((e) => sql.expr`e.event = ${str(e)}`));
  return and(named, either, filtersExpr(q.base.properties, p.ctx.now));
}

/** The distinct period indexes of `is_returning` events; with minimumOccurrences, of enough of them. */
function returnsOf(p: RetentionParts): Expr {
  const m = p.q.minimumOccurrences;
  if (m === 1) return sql.expr`groupUniqArrayIf(period_index, is_returning)`;
  const counted = sql.expr`sumMapIf([period_index], [toUInt64(1)], is_returning)`;
  return sql.expr`arrayFilter((x, n) -> n >= ${num(m)}, tupleElement(${counted}, 1), tupleElement(${counted}, 2))`;
}

/** One row per actor: `starts` (cohort indexes; with a breakdown, tuples of index and value), `returns`. */
export function actorsQuery(p: RetentionParts): Query {
  return p.q.type === 'retention_recurring' ? recurringActors(p) : firstTimeActors(p);
}

/** Recurring: a cohort for every period of the range with a target event. */
function recurringActors(p: RetentionParts): Query {
  const { q, ctx } = p;
  const target = entityIs(q.target, ctx.now);
  const returning = entityIs(q.returning, ctx.now);
  const where = and(
    sql.expr`e.timestamp >= ${ctx.dateFrom()} AND e.timestamp <= ${ctx.dateTo()}`,
    eventFilter(p, target, returning),
  );
  const index = periodIndex(p, sql.expr`e.timestamp`);
  if (!p.breakdown) {
    const events = sql.query`SELECT ${actor()} AS actor, ${index} AS period_index, ${target} AS is_target, ${returning} AS is_returning
      FROM events AS e LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id WHERE ${where}`;
    return sql.query`SELECT actor, groupUniqArrayIf(period_index, is_target) AS starts, ${returnsOf(p)} AS returns
      FROM ${events} AS events_in_range GROUP BY actor`;
  }
  // An actor's value in a cohort is the one on their first target event of that period: a group per
  // actor and period picks it, and counts the returning events for minimumOccurrences on the way.
  const perPeriod = sql.query`SELECT ${actor()} AS actor, ${index} AS period_index, countIf(${target}) AS targets,
      countIf(${returning}) AS returning_events,
      tupleElement(argMinIf(tuple(${breakdownValue(p.breakdown)}), e.timestamp, ${target}), 1) AS value
    FROM events AS e LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id
    WHERE ${where} GROUP BY actor, period_index`;
  return sql.query`SELECT actor, groupArrayIf(tuple(period_index, value), targets > 0) AS starts,
      groupArrayIf(period_index, returning_events >= ${num(q.minimumOccurrences)}) AS returns
    FROM ${perPeriod} AS per_period GROUP BY actor`;
}

/**
 * First time: one cohort, the period of the actor's first target event ever (events before the range are
 * read for the target only), if that falls in the range. First ever occurrence: the period of their first
 * event of the target's name, whatever its properties, if that event also matches the target's filters.
 */
function firstTimeActors(p: RetentionParts): Query {
  const { q, ctx } = p;
  const firstEver = q.type === 'retention_first_ever_occurrence';
  const target = entityIs(q.target, ctx.now);
  const first = firstEver ? and(eventIs(q.target.event)) : target;
  const returning = sql.expr`(${entityIs(q.returning, ctx.now)}) AND e.timestamp >= ${ctx.dateFrom()}`;
  const where = and(sql.expr`e.timestamp <= ${ctx.dateTo()}`, eventFilter(p, first, returning));
  // The first event's tuple (does it match the target's filters, its breakdown value) only when needed.
  const needFirstEvent = firstEver || p.breakdown !== null;
  const value = p.breakdown ? breakdownValue(p.breakdown) : sql.expr`NULL`;
  const events = sql.query`SELECT ${actor()} AS actor, e.timestamp AS timestamp, ${periodIndex(p, sql.expr`e.timestamp`)} AS period_index,
      ${first} AS is_first, ${firstEver ? target : sql.expr`true`} AS first_matches, ${returning} AS is_returning,
      ${value} AS value
    FROM events AS e LEFT JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id WHERE ${where}`;
  const perActor = needFirstEvent
    ? sql.query`SELECT actor, minIf(timestamp, is_first) AS first_at,
          argMinIf(tuple(first_matches, value), timestamp, is_first) AS first_event, ${returnsOf(p)} AS returns
        FROM ${events} AS events_to_end GROUP BY actor`
    : sql.query`SELECT actor, minIf(timestamp, is_first) AS first_at, ${returnsOf(p)} AS returns
        FROM ${events} AS events_to_end GROUP BY actor`;
  const index = periodIndex(p, sql.expr`first_at`);
  const cohort = p.breakdown ? sql.expr`tuple(${index}, tupleElement(first_event, 2))` : index;
  // first_at is 1970 for an actor with returning events only: never in the range.
  const qualifies = and(
    sql.expr`first_at >= range_start`,
    needFirstEvent ? sql.expr`tupleElement(first_event, 1)` : null,
  );
  return sql.query`SELECT actor, if(${qualifies}, [${cohort}], []) AS starts, returns
    FROM ${perActor} AS first_events`;
}
