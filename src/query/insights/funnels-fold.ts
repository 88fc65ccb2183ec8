/**
 * One actor's funnel: from their events sorted by time (`evs`, tuples `(t, key, mask, xmask[, value])`: t in
 * microseconds, `mask` bit k-1 set when the event matches step k, `xmask` bit k-1 set when it is an exclusion
 * that spoils an attempt sitting at step k), the timings of their best attempt and whether it was excluded.
 *
 * Ordered and strict funnels follow PostHog's `aggregate_funnel` (reference §2.3) as one `arrayFold`
 * (funnels-ordered.ts).
 *
 * Unordered funnels need no fold: an attempt starts at any step event and completes every step that has an
 * event within the window after it; for each step the time of its next event from each position comes from
 * one `arrayReverseFill`, so each anchor's steps are counted without a nested scan.
 */
import type { Expr } from '../dialect/mod.ts';
import { bool, num, sql } from './template.ts';

export interface FoldParams {
  readonly steps: number;
  /** The window in microseconds. */
  readonly window: number;
  readonly strict: boolean;
  /** Per step (index k-1): whether step k matches every event step k-1 matches (it must then be later). */
  readonly duplicate: readonly boolean[];
  /** Per step (index k-1): whether an exclusion spans step k (can spoil an attempt sitting there). */
  readonly excludable: readonly boolean[];
  /**
   * With `step` attribution, the 0-based step whose event must carry `value` (the event's value is the
   * tuple's 5th item); null otherwise.
   */
  readonly attributionStep: number | null;
  readonly value: Expr | null;
}

/**
 * An unordered funnel, in the ordered fold's shape (`.1` the best timings, `.2` excluded: never). Each event that
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
  return sql.expr`arrayMap(nx -> arrayMap(sc -> (if(arrayMax(sc) > 0, ${bestTimes}, CAST([] AS Array(Int64))),
      toUInt8(0)), [${score}])[1], [${next}])[1]`;
}
