/**
 * FunnelsQuery (SPEC §4 "Funnels"): how many actors reached each step within the conversion window from their
 * step-1 event, and how long each step took. The query runs in four layers:
 * 1. the events in the range that match a step or an exclusion (every event, for strict funnels), each with a
 *    bit mask of the steps it matches, grouped by actor into one time-sorted array;
 * 2. per actor (and per breakdown value, for `all_events` / `step` attribution), the best attempt's step
 *    timings (funnels-ordered.ts, funnels-fold.ts); excluded actors are left out;
 * 3. per breakdown value, the count of actors at each step and their conversion times; values past the limit
 *    merged into `Other`;
 * 4. one row per breakdown value and step.
 */
import type { Expr, Query } from '../dialect/mod.ts';
import type { EventsNode } from './common.ts';
import { resolveRange } from './date-range.ts';
import { actor, breakdownValue, eventIs, eventsFrom, filtersExpr } from './events.ts';
import { unorderedFunnel } from './funnels-fold.ts';
import { orderedFunnel } from './funnels-ordered.ts';
import { matchesAllOf, readFunnels, type CheckedFunnels } from './funnels-read.ts';
import { OTHER, selectionCondition, type CompileContext, type InsightKindSpec } from './kind.ts';
import { and, array, num, or, sql, str } from './template.ts';

export type { CheckedFunnels } from './funnels-read.ts';

export const funnels: InsightKindSpec<CheckedFunnels> = {
  kind: 'FunnelsQuery',
  read: readFunnels,
  range(q, overrides, now) {
    const range = q.base.dateRange;
    return resolveRange(
      {
        dateFrom: overrides.dateFrom ?? range.dateFrom,
        dateTo: overrides.dateTo ?? range.dateTo,
        explicitDate: range.explicitDate,
      },
      { interval: 'day', now },
    );
  },
  compile(q, ctx) {
    const perActor = actorFunnels(q, ctx);
    const breakdown = q.base.breakdown;
    if (!breakdown) return { query: stepRows(q, totals(q, perActor), false), breakdownColumn: null };
    return {
      query: stepRows(q, ranked(q, perActor, breakdown.limit), true),
      breakdownColumn: 'breakdown_value',
    };
  },
};

function stepCondition(node: EventsNode, now: Date): Expr {
  return and(eventIs(node.event), filtersExpr(node.properties, now));
}

/** `a + b + …` of UInt32 bit values: which of `conditions` hold, as a mask. */
function maskOf(conditions: readonly Expr[], bits: readonly number[]): Expr {
  let sum: Expr = num(0);
  conditions.forEach((c, i) => {
    sum = sql.expr`${sum} + if(${c}, ${num(2 ** bits[i]!)}, 0)`;
  });
  return sql.expr`toUInt32(${sum})`;
}

/** Layer 1: `a` the actor, `t` µs, `mask`, `xmask`, `v` the breakdown value (when there is a breakdown). */
function funnelEvents(q: CheckedFunnels, ctx: CompileContext): Query {
  const steps = q.steps.map((s) => stepCondition(s, ctx.now));
  const exclusions = q.exclusions.map((x) => stepCondition(x.node, ctx.now));
  // Exclusion i spoils attempts sitting at steps from+1 … to (1-based): bit k-1 for step k.
  const xConditions: Expr[] = [];
  const xBits: number[] = [];
  for (let k = 1; k <= q.steps.length; k++) {
    const spoilers = q.exclusions.flatMap((x, i) =>
      x.fromStep < k && k <= x.toStep ? [exclusions[i]!] : [],
    );
    if (spoilers.length > 0) {
      xConditions.push(or(...spoilers));
      xBits.push(k - 1);
    }
  }
  const names = [...q.steps, ...q.exclusions.map((x) => x.node)].map((n) => n.event);
  const prefilter =
    q.order === 'strict'
      ? null
      : and(
          names.includes(null)
            ? null
            : sql.expr`e.event IN ${array([...new Set(names)].map((n) => str(n!)))}`,
          or(...steps, ...exclusions),
        );
  const b = q.base.breakdown?.breakdowns[0];
  const columns = [
    sql.expr`${actor()} AS a`,
    sql.expr`toUnixTimestamp64Micro(e.timestamp) AS t`,
    sql.expr`${maskOf(
      steps,
      steps.map((_, i) => i),
    )} AS mask`,
    sql.expr`${xConditions.length === 0 ? sql.expr`toUInt32(0)` : maskOf(xConditions, xBits)} AS xmask`,
    ...(b ? [sql.expr`${breakdownValue(b)} AS v`] : []),
  ];
  const where = and(
    sql.expr`e.timestamp >= ${ctx.dateFrom()}`,
    sql.expr`e.timestamp <= ${ctx.dateTo()}`,
    filtersExpr(q.base.properties, ctx.now),
    prefilter,
  );
  return eventsFrom(columns, where, { actors: true });
}

/**
 * Layer 2: one row per actor (per actor and value with `all_events` / `step`) that entered the funnel and
 * was not excluded: `bv` the breakdown value (with a breakdown), `b` the best attempt's step times (µs).
 */
function actorFunnels(q: CheckedFunnels, ctx: CompileContext): Query {
  const events = funnelEvents(q, ctx);
  const hasBreakdown = q.base.breakdown !== null;
  const perEvent = hasBreakdown && (q.attribution === 'all_events' || q.attribution === 'step');
  // Same-time events: the lower step first, exclusions last (an exclusion at the instant of a step is after it).
  const item = sql.expr`tuple(t, if(mask = 0, toUInt32(4294967295), toUInt32(bitAnd(mask, -mask))), mask, xmask)`;
  const tupled = perEvent
    ? sql.expr`tuple(t, if(mask = 0, toUInt32(4294967295), toUInt32(bitAnd(mask, -mask))), mask, xmask, v)`
    : item;
  const sorted = sql.expr`arraySort(groupArray(${tupled})) AS evs`;
  const fold = (evs: Expr, value: Expr | null): Expr => {
    const params = {
      steps: q.steps.length,
      window: q.windowSeconds * 1_000_000,
      strict: q.order === 'strict',
      duplicate: q.steps.map((s, i) => i > 0 && matchesAllOf(s, q.steps[i - 1]!)),
      excludable: q.steps.map((_, i) => q.exclusions.some((x) => x.fromStep <= i && i < x.toStep)),
      attributionStep: hasBreakdown && q.attribution === 'step' ? q.attributionStep : null,
      value,
    };
    return q.order === 'unordered' ? unorderedFunnel(evs, params) : orderedFunnel(evs, params);
  };

  let folded: Query;
  if (!hasBreakdown) {
    const grouped = sql.query`SELECT ${sorted} FROM ${events} AS fe GROUP BY a`;
    folded = sql.query`SELECT CAST(NULL AS Nullable(String)) AS bv, ${fold(sql.expr`evs`, null)} AS r FROM ${grouped} AS ge`;
  } else if (!perEvent) {
    const touch =
      q.attribution === 'last_touch'
        ? sql.expr`argMaxIf(v, t, v IS NOT NULL) AS bv`
        : sql.expr`argMinIf(v, t, v IS NOT NULL) AS bv`;
    const grouped = sql.query`SELECT ${sorted}, ${touch} FROM ${events} AS fe GROUP BY a`;
    folded = sql.query`SELECT bv, ${fold(sql.expr`evs`, null)} AS r FROM ${grouped} AS ge`;
  } else {
    // Each value the actor's events carry is a funnel of its own (PostHog's prop_vals): for `all_events` over
    // the events of that value only; for `step`, the attributed step's event must carry it.
    const values =
      q.attribution === 'all_events'
        ? sql.expr`groupUniqArray(tuple(v)) AS vals`
        : q.order === 'unordered'
          ? sql.expr`groupUniqArrayIf(tuple(v), mask != 0) AS vals`
          : sql.expr`groupUniqArrayIf(tuple(v), bitTest(mask, ${num(q.attributionStep)})) AS vals`;
    const grouped = sql.query`SELECT ${sorted}, ${values} FROM ${events} AS fe GROUP BY a`;
    const ofValue =
      q.attribution === 'all_events'
        ? sql.expr`arrayFilter(x -> ifNull(x.5 = bv, x.5 IS NULL AND bv IS NULL), evs)`
        : sql.expr`evs`;
    const each = sql.query`SELECT arrayJoin(if(empty(vals), [tuple(CAST(NULL AS Nullable(String)))], vals)).1 AS bv, ${ofValue} AS evs FROM ${grouped} AS ge`;
    folded = sql.query`SELECT bv, ${fold(sql.expr`evs`, sql.expr`bv`)} AS r FROM ${each} AS ve`;
  }
  const where = and(sql.expr`r.2 = 0`, sql.expr`notEmpty(r.1)`, selectionCondition(ctx, sql.expr`bv`));
  return sql.query`SELECT bv, r.1 AS b FROM ${folded} AS fa WHERE ${where}`;
}

/** `counts` per step and `times` per step (seconds from the previous step, over 0; step 1's empty). */
function aggregates(steps: number): Expr[] {
  const counts: Expr[] = [];
  const times: Expr[] = [sql.expr`CAST([] AS Array(Float64))`];
  for (let k = 1; k <= steps; k++) {
    counts.push(sql.expr`countIf(length(b) >= ${num(k)})`);
    if (k > 1) {
      times.push(
        sql.expr`groupArrayIf((b[${num(k)}] - b[${num(k - 1)}]) / 1000000, length(b) >= ${num(k)} AND b[${num(k)}] > b[${num(k - 1)}])`,
      );
    }
  }
  return [sql.expr`${array(counts)} AS counts`, sql.expr`${array(times)} AS times`];
}

/** Layer 3 without a breakdown: one row, even with no actor (every step is shown, at 0). */
function totals(q: CheckedFunnels, perActor: Query): Query {
  return sql.query`SELECT ${aggregates(q.steps.length)} FROM ${perActor} AS pa`;
}

/** Layer 3 with a breakdown: per value, ranked by the last step's count, then the one before…; `Other` last. */
function ranked(q: CheckedFunnels, perActor: Query, limit: number): Query {
  const byValue = sql.query`SELECT bv, ${aggregates(q.steps.length)} FROM ${perActor} AS pa GROUP BY bv`;
  const numbered = sql.query`SELECT bv, counts, times, row_number() OVER (ORDER BY arrayReverse(counts) DESC, bv ASC) AS rn FROM ${byValue} AS bt`;
  const merged: Expr[] = [];
  for (let k = 1; k <= q.steps.length; k++) merged.push(sql.expr`groupArrayArray(times[${num(k)}])`);
  const L = num(limit);
  return sql.query`SELECT if(rn <= ${L}, bv, ${str(OTHER)}) AS bv, rn > ${L} AS other, min(rn) AS rank,
      sumForEach(counts) AS counts, ${array(merged)} AS times
    FROM ${numbered} AS nb GROUP BY bv, other`;
}

/** Layer 4: a row per (value and) step; times' average and median (interpolated, as ClickHouse's `median`). */
function stepRows(q: CheckedFunnels, perValue: Query, breakdown: boolean): Query {
  const names = q.steps.map((s, i) =>
    str(q.order === 'unordered' ? `Completed ${i + 1} step${i === 0 ? '' : 's'}` : (s.event ?? 'All events')),
  );
  const N = num(q.steps.length);
  const kept = breakdown ? [sql.expr`bv`, sql.expr`other`, sql.expr`rank`] : [];
  const each = sql.query`SELECT ${kept}, counts, times, arrayJoin(range(1, ${N} + 1)) AS k FROM ${perValue} AS pv`;
  const expanded = sql.query`SELECT ${kept}, counts, k, arraySort(times[k]) AS ts FROM ${each} AS pk`;
  const columns = [
    sql.expr`k AS step`,
    sql.expr`${array(names)}[k] AS event`,
    sql.expr`counts[k] AS count`,
    sql.expr`if(counts[1] = 0, 0, counts[k] / counts[1]) AS conversion_rate`,
    sql.expr`if(k = 1 OR empty(ts), NULL, arrayAvg(ts)) AS average_conversion_time`,
    sql.expr`if(k = 1 OR empty(ts), NULL, (ts[intDiv(length(ts) - 1, 2) + 1] + ts[intDiv(length(ts), 2) + 1]) / 2) AS median_conversion_time`,
  ];
  return breakdown
    ? sql.query`SELECT bv AS breakdown_value, ${columns} FROM ${expanded} AS sx ORDER BY other, rank, step`
    : sql.query`SELECT ${columns} FROM ${expanded} AS sx ORDER BY step`;
}
