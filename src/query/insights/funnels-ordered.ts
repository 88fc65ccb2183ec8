/**
 * An ordered or strict funnel's fold over one actor's events, as PostHog's `aggregate_funnel` (reference
 * §2.3): for each step k the state keeps the latest-started attempt that reached it, and each event updates
 * every step from the state before it (an event fills one step of an attempt, never two). The best attempt
 * is the first to reach the furthest step.
 *
 * The state is a tuple of tuples of scalars, written out for the funnel's number of steps: arrays of arrays
 * rebuilt on every event, with the step conditions under `arrayMap(k -> …, range(N))`, made the query
 * several times as slow as the hand-written one. ClickHouse does not share a repeated subexpression inside a
 * lambda, it computes every copy, so the common case (no exclusions, `firstAttempts`) writes each step's
 * condition once; with exclusions (`excludingFunnel`) a few conditions are written more than once.
 */
import type { BinaryOp, Expr } from '../dialect/mod.ts';
import type { FoldParams } from './funnels-fold.ts';
import { and, call, num, or, sql, tuple } from './template.ts';

const acc: Expr = { kind: 'field', chain: ['acc'] };
const x: Expr = { kind: 'field', chain: ['x'] };

function at(object: Expr, element: number): Expr {
  return { kind: 'tupleAccess', object, element };
}

function op(o: BinaryOp, left: Expr, right: Expr): Expr {
  return { kind: 'binary', op: o, left, right };
}

function not(operand: Expr): Expr {
  return { kind: 'not', operand };
}

function isNull(operand: Expr): Expr {
  return { kind: 'isNull', not: false, operand };
}

/** `if(c, a, b)`, or `b` when there is no condition (null: never). */
function iff(c: Expr | null, a: Expr, b: Expr): Expr {
  return c === null ? b : call('if', c, a, b);
}

const zero8 = call('toUInt8', num(0));
const zero64 = call('toInt64', num(0));

/** `(best timings Array(Int64), excluded UInt8)` of an ordered or strict funnel. */
export function orderedFunnel(evs: Expr, p: FoldParams): Expr {
  return p.excludable.some((e) => e) ? excludingFunnel(evs, p) : firstAttempts(evs, p);
}

/**
 * "No attempt at this step": an event's time minus NONE stays within Int64 (DateTime64 ends in 2299) and is
 * past any window (at most 100,000 months), so "within the window of the attempt" is false for none.
 */
const NONE = call('toInt64', { kind: 'negate', operand: num(9e18) });

/**
 * Without exclusions the best attempt is the first to reach the furthest step, so the state keeps, for each
 * step k, the latest-started attempt at k (`.1`) and the first attempt that reached k (`.2`), both `(t1 …
 * tk)` with t1 = NONE for none; the answer is the furthest step's first attempt. Each step's condition is
 * written once: ClickHouse does not share repeated subexpressions inside a lambda, it computes each.
 */
function firstAttempts(evs: Expr, p: FoldParams): Expr {
  const N = p.steps;
  const steps = Array.from({ length: N }, (_, i) => i + 1);
  const t = at(x, 1);
  const mask = at(x, 3);
  const latest = (k: number, j: number): Expr => at(at(at(acc, k), 1), j);
  const bit = (k: number): Expr => call('bitTest', mask, num(k - 1));
  // Step k takes this event for the attempt at step k-1: within its window (NONE never is), and not when
  // the attempt at step k is that one already (it keeps its first step-k event).
  const takes = (k: number): Expr =>
    k === 1
      ? and(bit(1), attributedAt(p, 1), op('!=', latest(1, 1), t))
      : and(
          bit(k),
          attributedAt(p, k),
          op('<=', op('-', t, latest(k - 1, 1)), num(p.window)),
          op('!=', latest(k, 1), latest(k - 1, 1)),
          p.duplicate[k - 1] ? op('>', t, latest(k - 1, k - 1)) : null,
        );
  const none = (k: number): Expr => tuple(Array.from({ length: k }, () => NONE));
  const next = (k: number): Expr => {
    const taken = tuple([...Array.from({ length: k - 1 }, (_, j) => latest(k - 1, j + 1)), t]);
    const first = at(at(acc, k), 2);
    const firstNext = call('if', op('=', at(first, 1), NONE), taken, first);
    // Strict: an event that is not step k ends the attempt waiting at step k.
    const kept = p.strict ? tuple([call('if', bit(k), at(at(acc, k), 1), none(k)), first]) : at(acc, k);
    return call('if', takes(k), tuple([taken, firstNext]), kept);
  };
  const initial = tuple(steps.map((k) => tuple([none(k), none(k)])));
  const fold = call(
    'arrayFold',
    { kind: 'lambda', params: ['acc', 'x'], body: tuple(steps.map(next)) },
    evs,
    initial,
  );
  const s: Expr = { kind: 'field', chain: ['s'] };
  const furthest = call(
    'multiIf',
    ...[...steps].reverse().flatMap((k) => {
      const first = at(at(s, k), 2);
      const times = Array.from({ length: k }, (_, j) => at(first, j + 1));
      return [op('!=', at(first, 1), NONE), { kind: 'array', items: times } satisfies Expr];
    }),
    sql.expr`CAST([] AS Array(Int64))`,
  );
  return withValue('s', fold, tuple([furthest, zero8]));
}

/**
 * With exclusions: attempts carry whether they were spoiled, and a spoiled best gives way to another. Step
 * k's attempt is `(present, excluded, t1 … tk)`, the best `(reached, excluded, t1 … tN)`.
 */
function excludingFunnel(evs: Expr, p: FoldParams): Expr {
  const N = p.steps;
  const steps = Array.from({ length: N }, (_, i) => i + 1);
  const t = at(x, 1);
  const mask = at(x, 3);
  const xmask = at(x, 4);
  const W = num(p.window);
  const attempt = (k: number): Expr => at(acc, k);
  const present = (k: number): Expr => op('=', at(attempt(k), 1), num(1));
  const excluded = (k: number): Expr => at(attempt(k), 2);
  /** Step j's time in the attempt at step k (j ≤ k). */
  const time = (k: number, j: number): Expr => at(attempt(k), j + 2);
  const times = (k: number): Expr[] => Array.from({ length: k }, (_, j) => time(k, j + 1));
  const best = at(acc, N + 1);
  const reached = at(best, 1);
  const bestTimes = Array.from({ length: N }, (_, j) => at(best, j + 3));
  const bit = (m: Expr, k: number): Expr => call('bitTest', m, num(k - 1));
  const within = (from: Expr): Expr => op('<=', op('-', t, from), W);
  /** The attempt at step k started when the one at step l did. */
  const sameStart = (k: number, l: number): Expr => and(present(k), op('=', time(k, 1), time(l, 1)));
  const attributed = (k: number): Expr | null => attributedAt(p, k);

  // Step k can take this event for the attempt at step k-1 (before the exclusion check).
  const base = (k: number): Expr =>
    k === 1
      ? and(bit(mask, 1), attributed(1), not(and(present(1), op('=', time(1, 1), t))))
      : and(
          bit(mask, k),
          attributed(k),
          present(k - 1),
          within(time(k - 1, 1)),
          not(sameStart(k, k - 1)),
          p.duplicate[k - 1] ? op('>', t, time(k - 1, k - 1)) : null,
        );
  const advances = (k: number): Expr => (k === 1 ? base(1) : and(base(k), op('=', excluded(k - 1), num(0))));
  // Strict: an event that is not step k ends every attempt waiting at step k.
  const cleared = (k: number): Expr | null => (p.strict ? not(bit(mask, k)) : null);
  // The attempt at step k meets an exclusion within its window before it reached step k + 1 (null: it
  // cannot, no exclusion spans step k).
  const spoiled = (k: number): Expr | null =>
    p.excludable[k - 1]
      ? and(
          bit(xmask, k),
          present(k),
          within(time(k, 1)),
          k < N ? not(sameStart(k + 1, k)) : null,
          op('=', excluded(k), num(0)),
        )
      : null;

  const nextAttempt = (k: number): Expr => {
    const taken = tuple([num(1), num(0), ...(k === 1 ? [] : times(k - 1)), t]);
    const c = cleared(k);
    const s = spoiled(k);
    if (c === null && s === null) return iff(advances(k), taken, attempt(k));
    const stillExcluded = s === null ? excluded(k) : call('toUInt8', or(s, op('=', excluded(k), num(1))));
    const kept = tuple([iff(c, num(0), at(attempt(k), 1)), iff(c, num(0), stillExcluded), ...times(k)]);
    return iff(advances(k), taken, kept);
  };

  // The best attempt is spoiled when the attempt at its step meets an exclusion in the best's window.
  const spoiledAtReached = steps.flatMap((k) => {
    const s = spoiled(k);
    return s === null ? [] : [and(op('=', reached, num(k)), s)];
  });
  const bestSpoiled = or(
    op('=', at(best, 2), num(1)),
    ...(spoiledAtReached.length === 0 ? [] : [and(or(...spoiledAtReached), within(bestTimes[0]!))]),
  );
  const top = call('multiIf', ...[...steps].reverse().flatMap((k) => [base(k), num(k)]), num(0));
  const better = and(
    op('>', top, num(0)),
    or(op('>', top, reached), and(op('=', top, reached), bestSpoiled)),
  );
  // The attempt at step top - 1 with this event: taken when it is better than the best.
  const candidate = (k: number): Expr =>
    tuple([
      num(k),
      k === 1 ? num(0) : excluded(k - 1),
      ...(k === 1 ? [] : times(k - 1)),
      t,
      ...bestTimes.slice(k),
    ]);
  let candidates = candidate(1);
  for (const k of steps.slice(1)) candidates = iff(base(k), candidate(k), candidates);
  const kept = tuple([reached, call('toUInt8', bestSpoiled), ...bestTimes]);
  const nextBest = iff(better, candidates, kept);

  const body = tuple([...steps.map(nextAttempt), nextBest]);
  const initial = tuple([
    ...steps.map((k) => tuple([zero8, zero8, ...Array.from({ length: k }, () => zero64)])),
    tuple([zero8, zero8, ...bestTimes.map(() => zero64)]),
  ]);
  const fold = call('arrayFold', { kind: 'lambda', params: ['acc', 'x'], body }, evs, initial);
  // The best's timings as far as it reached.
  const s: Expr = { kind: 'field', chain: ['s'] };
  const timings = call(
    'arraySlice',
    { kind: 'array', items: bestTimes.map((_, j) => at(s, j + 3)) },
    num(1),
    at(s, 1),
  );
  return withValue('s', at(fold, N + 1), tuple([timings, at(s, 2)]));
}

/** `body` with `name` bound to `value` (computed once): `arrayMap(name -> body, [value])[1]`. */
function withValue(name: string, value: Expr, body: Expr): Expr {
  const mapped = call(
    'arrayMap',
    { kind: 'lambda', params: [name], body },
    { kind: 'array', items: [value] },
  );
  return { kind: 'index', object: mapped, index: num(1) };
}

/** With `step` attribution, step k's event must carry the value (the event's 5th item); null otherwise. */
function attributedAt(p: FoldParams, k: number): Expr | null {
  const value = p.value;
  return value === null || p.attributionStep !== k - 1
    ? null
    : call('ifNull', op('=', at(x, 5), value), and(isNull(at(x, 5)), isNull(value)));
}
