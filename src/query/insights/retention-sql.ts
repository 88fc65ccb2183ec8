/**
 * The dialect query of a RetentionQuery. retention-actors.ts gives each actor their cohorts' period indexes
 * (`starts`) and the periods they returned in (`returns`), in one pass over the events grouped by actor (no
 * self-join of events). Here each cohort of an actor becomes a 0/1 flag per period (period 0 is being in
 * the cohort, period k ≥ 1 is `has(returns, c + k)`), summed per cohort with `sumForEach`; then the answer
 * is laid on the grid of every cohort of the range × every period of it that has begun by the range's end
 * (k < totalIntervals and c + k ≤ the last period's index), zero-filled.
 *
 * With a breakdown, values are ranked by their cohort size over the range (the sum of period 0), then by
 * value (null last), and those past the limit are summed into `Other`.
 */
import type { Expr, SelectQuery } from '../dialect/mod.ts';
import { bucketLabel, bucketStart, intervalOf } from './date-range.ts';
import { type CompileContext, type CompiledInsight, OTHER, selectionCondition } from './kind.ts';
import { type RetentionParts, actorsQuery, periodNumber } from './retention-actors.ts';
import type { CheckedRetention } from './retention-read.ts';
import { and, num, sql, str } from './template.ts';

/**
 * The range's constants, named once in the query's WITH (ClickHouse lets subqueries read them):
 * `range_start` (the first period's start), `first_period` (its period number) and `period_count`.
 */
function constants(p: RetentionParts): SelectQuery {
  const { q, ctx } = p;
  return sql.select`WITH ${bucketStart(q.interval, ctx.dateFrom())} AS range_start,
      ${periodNumber(q.interval, sql.expr`range_start`)} AS first_period,
      ${periodNumber(q.interval, ctx.dateTo())} - first_period + 1 AS periods_to_end,
      if(periods_to_end > 0, periods_to_end, 0) AS period_count
    SELECT 1`;
}

/** An actor's 0/1 per period of cohort `c`: in it (period 0), returned (k ≥ 1); cumulative fills 0…last. */
function flags(p: RetentionParts): Expr {
  if (!p.q.cumulative) return sql.expr`arrayMap(k -> k = 0 OR has(returns, c + k), range(periods))`;
  const last = sql.expr`toInt64(arrayLastIndex(j -> j > 0 AND has(returns, c + j), range(periods))) - 1`;
  return sql.expr`arrayMap(k -> k = 0 OR k <= ${last}, range(periods))`;
}

/** How many periods cohort `c` has: those begun by the range's end, at most totalIntervals. */
function periodsOf(p: RetentionParts): Expr {
  const total = num(p.q.totalIntervals);
  return sql.expr`toUInt64(if(period_count - c < ${total}, period_count - c, ${total}))`;
}

export function compileRetention(q: CheckedRetention, ctx: CompileContext): CompiledInsight {
  const p: RetentionParts = { q, ctx, breakdown: q.base.breakdown?.breakdowns[0] ?? null };
  const answer = p.breakdown ? breakdownAnswer(p) : plainAnswer(p);
  return {
    query: { ...answer.query, with: constants(p).with },
    breakdownColumn: answer.breakdownColumn,
  };
}

function label(p: RetentionParts): Expr {
  return bucketLabel(p.q.interval, sql.expr`range_start + ${intervalOf(p.q.interval, sql.expr`c`)}`);
}

function plainAnswer(p: RetentionParts): { query: SelectQuery; breakdownColumn: null } {
  const cohorts = sql.query`SELECT c, sumForEach(${flags(p)}) AS counts
    FROM (SELECT c, returns, ${periodsOf(p)} AS periods FROM ${actorsQuery(p)} AS actors ARRAY JOIN starts AS c) AS actor_cohorts
    GROUP BY c`;
  const grid = sql.query`SELECT c, arrayElement(counts_list, indexOf(c_list, c)) AS cohort_counts, ${periodsOf(p)} AS periods
    FROM (SELECT groupArray(c) AS c_list, groupArray(counts) AS counts_list FROM ${cohorts} AS cohorts) AS lists
    ARRAY JOIN range(period_count) AS c`;
  return {
    query: sql.select`SELECT ${label(p)} AS cohort_date, cohort_counts[1] AS cohort_size, k AS period, cohort_counts[k + 1] AS count
      FROM ${grid} AS grid ARRAY JOIN range(periods) AS k ORDER BY c, k`,
    breakdownColumn: null,
  };
}

function breakdownAnswer(p: RetentionParts): { query: SelectQuery; breakdownColumn: string } {
  const { q, ctx } = p;
  const selected = selectionCondition(ctx, sql.expr`value`);
  const cohorts = sql.query`SELECT value, c, sumForEach(${flags(p)}) AS counts
    FROM (SELECT tupleElement(s, 1) AS c, tupleElement(s, 2) AS value, returns, ${periodsOf(p)} AS periods
      FROM ${actorsQuery(p)} AS actors ARRAY JOIN starts AS s) AS actor_cohorts
    WHERE ${and(selected)} GROUP BY value, c`;
  const ranked = sql.query`SELECT value, c, counts, dense_rank() OVER (ORDER BY total DESC, value ASC) AS value_rank
    FROM (SELECT value, c, counts, sum(counts[1]) OVER (PARTITION BY value) AS total FROM ${cohorts} AS cohorts) AS totals`;
  const limit = num(q.base.breakdown?.limit ?? 25);
  const merged = sql.query`SELECT if(value_rank <= ${limit}, value, ${str(OTHER)}) AS breakdown_value,
      min(value_rank) AS merged_rank, c, sumForEach(counts) AS counts
    FROM ${ranked} AS ranked GROUP BY breakdown_value, c`;
  const grid = sql.query`SELECT breakdown_value, row_rank, c, arrayElement(counts_list, indexOf(c_list, c)) AS cohort_counts,
      ${periodsOf(p)} AS periods
    FROM (SELECT breakdown_value, min(merged_rank) AS row_rank, groupArray(c) AS c_list, groupArray(counts) AS counts_list
      FROM ${merged} AS merged GROUP BY breakdown_value) AS lists
    ARRAY JOIN range(period_count) AS c`;
  return {
    query: sql.select`SELECT breakdown_value, ${label(p)} AS cohort_date, cohort_counts[1] AS cohort_size, k AS period,
        cohort_counts[k + 1] AS count
      FROM ${grid} AS grid ARRAY JOIN range(periods) AS k ORDER BY row_rank, c, k`,
    breakdownColumn: 'breakdown_value',
  };
}
