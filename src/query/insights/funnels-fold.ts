/**
 * One actor's funnel: from their events sorted by time (`evs`, tuples `(t, key, mask, xmask[, value])`: t in
 * microseconds, `mask` bit k-1 set when the event matches step k, `xmask` bit k-1 set when it is an exclusion
 * that spoils an attempt sitting at step k), the timings of their best attempt and whether it was excluded.
 *
 * Ordered and strict funnels follow PostHog's `aggregate_funnel` (reference §2.3) as one `arrayFold`: for each
 * step k the state keeps the timings of the latest-started attempt that reached it, so each event updates
 * every step from the state before it (steps are taken in descending order there: an event fills one step
 * of an attempt, never two). The best attempt is the first to reach the furthest step.
 *
 * Unordered funnels need no fold: an attempt starts at any step event and completes every step that has an
 * event within the window after it; for each step the time of its next event from each position comes from
 * one `arrayReverseFill`, so each anchor's steps are counted without a nested scan.
 */
import type { Expr } from '../dialect/mod.ts';
import { array, bool, num, sql } from './template.ts';

export interface FoldParams {
  readonly steps: number;
  /** The window in microseconds. */
  readonly window: number;
  readonly strict: boolean;
  /** Per step (index k-1): whether step k matches every event step k-1 matches (it must then be later). */
  readonly duplicate: readonly boolean[];
  /**
   * With `step` attribution, the 0-based step whose event must carry `value` (the event's value is the
   * tuple's 5th item); null otherwise.
   */
  readonly attributionStep: number | null;
  readonly value: Expr | null;
}

/** `tuple(best timings Array(Int64), excluded UInt8)` of an ordered or strict funnel. */
export function orderedFunnel(evs: Expr, p: FoldParams): Expr {
  const N = num(p.steps);
  const W = num(p.window);
  const dup = array(p.duplicate.map((d) => num(d ? 1 : 0)));
  const attributed =
    p.attributionStep === null || p.value === null
      ? bool(true)
      : sql.expr`(k != ${num(p.attributionStep + 1)} OR ifNull(x.5 = ${p.value}, x.5 IS NULL AND ${p.value} IS NULL))`;
  // Step k can take this event for the attempt at step k-1 (before the exclusion check).
  const base = sql.expr`bitTest(x.3, k - 1) AND ${attributed} AND if(k = 1,
      NOT (notEmpty(acc.1[1]) AND acc.1[1][1] = x.1),
      notEmpty(acc.1[k - 1]) AND x.1 - acc.1[k - 1][1] <= ${W}
        AND NOT (notEmpty(acc.1[k]) AND acc.1[k][1] = acc.1[k - 1][1])
        AND (${dup}[k] = 0 OR x.1 > acc.1[k - 1][-1]))`;
  const advances = sql.expr`(${base} AND acc.2[k - 1] = 0)`;
  // Strict: an event that is not step k ends every attempt waiting at step k.
  const cleared = p.strict ? sql.expr`NOT bitTest(x.3, k - 1)` : bool(false);
  // The attempt at step k meets an exclusion within its window before it reached step k + 1.
  const spoiled = (k: Expr): Expr =>
    sql.expr`(bitTest(x.4, greatest(${k}, 1) - 1) AND notEmpty(acc.1[${k}]) AND x.1 - acc.1[${k}][1] <= ${W}
      AND NOT (notEmpty(acc.1[${k}+1]) AND acc.1[${k}+1][1] = acc.1[${k}][1]) AND acc.2[${k}] = 0)`;
  const k = sql.expr`k`;
  const entered = sql.expr`arrayMap(k -> if(${advances}, arrayPushBack(acc.1[k - 1], x.1), if(${cleared}, CAST([] AS Array(Int64)), acc.1[k])), range(1, ${N} + 1))`;
  const excluded = sql.expr`arrayMap(k -> toUInt8(if(${advances} OR ${cleared}, 0, ${spoiled(k)} OR acc.2[k] = 1)), range(1, ${N} + 1))`;
  const top = sql.expr`arrayMax(arrayMap(k -> if(${base}, k, 0), range(1, ${N} + 1)))`;
  const reached = sql.expr`length(acc.3)`;
  const bestSpoiled = sql.expr`(acc.4 = 1 OR (${reached} > 0 AND ${spoiled(reached)} AND x.1 - acc.3[1] <= ${W}))`;
  const better = sql.expr`(${top} > 0 AND (${top} > ${reached} OR (${top} = ${reached} AND ${bestSpoiled})))`;
  const best = sql.expr`if(${better}, arrayPushBack(acc.1[${top} - 1], x.1), acc.3)`;
  const bestExcluded = sql.expr`toUInt8(if(${better}, acc.2[${top} - 1], ${bestSpoiled}))`;
  return sql.expr`arrayFold((acc, x) -> (${entered}, ${excluded}, ${best}, ${bestExcluded}), ${evs},
    (arrayWithConstant(${N}, CAST([] AS Array(Int64))), arrayWithConstant(${N}, toUInt8(0)), CAST([] AS Array(Int64)), toUInt8(0)))`;
}

/**
 * An unordered funnel, in the ordered fold's shape (`.3` the best timings, `.4` excluded). Each event that
 * matches a step anchors an attempt: its steps are those with an event in [anchor, anchor + window], their
 * times sorted. An exclusion event after the anchor and before the attempt completes (or its window ends)
 * spoils that attempt; the best is the first anchor with the most steps among the unspoiled ones.
 */
export function unorderedFunnel(evs: Expr, p: FoldParams): Expr {
  const N = num(p.steps);
  const W = num(p.window);
  // Far past any timestamp: "no such event after this one".
  const never = sql.expr`toInt64(9000000000000000000)`;
  // Per step, the time of its next event at or after each position; and of the next exclusion after it.
  const next = sql.expr`(arrayMap(j -> arrayReverseFill(y -> y != ${never}, arrayMap(e -> if(bitTest(e.3, j - 1), e.1, ${never}), ${evs})), range(1, ${N} + 1)),
      arrayPushBack(arrayPopFront(arrayReverseFill(y -> y != ${never}, arrayMap(e -> if(e.4 != 0, e.1, ${never}), ${evs}))), ${never}))`;
  const anchored =
    p.attributionStep === null || p.value === null
      ? bool(true)
      : sql.expr`ifNull(${evs}[i].5 = ${p.value}, ${evs}[i].5 IS NULL AND ${p.value} IS NULL)`;
  const times = sql.expr`arraySort(arrayFilter(y -> y - ${evs}[i].1 <= ${W}, arrayMap(j -> nx.1[j][i], range(1, ${N} + 1))))`;
  const score = sql.expr`arrayMap(i -> arrayMap(ts -> if(${evs}[i].3 != 0 AND ${anchored}
      AND nx.2[i] >= if(length(ts) = ${N}, ts[-1], ${evs}[i].1 + ${W}), length(ts), 0), [${times}])[1], arrayEnumerate(${evs}))`;
  const bestAt = sql.expr`arrayFirstIndex(s -> s = arrayMax(sc), sc)`;
  const bestTimes = sql.expr`arrayMap(i -> ${times}, [${bestAt}])[1]`;
  return sql.expr`arrayMap(nx -> arrayMap(sc -> (CAST([] AS Array(Array(Int64))), CAST([] AS Array(UInt8)),
      if(arrayMax(sc) > 0, ${bestTimes}, CAST([] AS Array(Int64))), toUInt8(0)), [${score}])[1], [${next}])[1]`;
}
