/**
 * FunnelsQuery: strict, ordered and unordered on one dataset worked by hand, exclusions, the four breakdown
 * attributions, the breakdown limit with `Other` and the null value, property filters, and the breakdown
 * magic variable; counts checked against hand-written SQL (windowFunnel, or a self-join for unordered).
 */
import t from 'tap';
import { avgsOf, countsOf, ev, funnel, handCounts, mediansOf, steps, valuesOf } from '../helpers/funnels.ts';
import { handSql, insertEvents, insightStore, runInsight } from '../helpers/insights.ts';

const store = await insightStore(t);
const NOW = new Date('2022-01-01T00:00:00Z');
const RANGE = { date_from: '2020-01-01', date_to: '2020-01-10' };
const HAND_RANGE = { from: '2020-01-01 00:00:00', to: '2020-01-10 23:59:59.999999' };
let nextProject = 1;
async function project(events: Parameters<typeof insertEvents>[1]): Promise<number> {
  const p = nextProject++;
  await insertEvents(store, events, p);
  return p;
}
/** Events of `who` one minute apart from 2020-01-02 00:00, with properties per event when given. */
function seq(who: string, events: (string | [string, Record<string, unknown>])[], startMinute = 0) {
  return events.map((e, i) => {
    const [name, props] = typeof e === 'string' ? [e, {}] : e;
    const at = new Date(Date.parse('2020-01-02T00:00:00Z') + (startMinute + i) * 60_000);
    return ev(who, name, at.toISOString(), props);
  });
}

t.test('ordered, strict and unordered on the same persons', async (t) => {
  const p = await project([
    ...seq('s1', ['A', 'B', 'C']),
    ...seq('s2', ['A', 'X', 'B', 'C']),
    ...seq('s3', ['B', 'A', 'C']),
    ...seq('s4', ['C', 'B', 'A']),
    ...seq('s5', ['A', 'B']),
  ]);
  const expected: Record<string, number[]> = {
    ordered: [5, 3, 2],
    strict: [5, 2, 1],
    unordered: [5, 5, 4],
  };
  for (const order of Object.keys(expected)) {
    const a = await runInsight(store, funnel(steps('A', 'B', 'C'), RANGE, { funnelOrderType: order }), {
      now: NOW,
      project: p,
    });
    t.same(countsOf(a), expected[order], order);
  }
  const conds = ["e.event = 'A'", "e.event = 'B'", "e.event = 'C'"];
  const hand = { steps: conds, windowSeconds: 14 * 86400, ...HAND_RANGE, project: p };
  t.same(await handCounts(store, hand), expected['ordered'], 'windowFunnel (ordered) agrees');
  t.same(
    await handCounts(store, { ...hand, mode: 'strict_order' }),
    expected['strict'],
    "windowFunnel 'strict_order' agrees",
  );
  const unordered = await handSql(
    store,
    `SELECT countIf(n >= 1), countIf(n >= 2), countIf(n >= 3) FROM (
       SELECT p, max(c) AS n FROM (
         SELECT x.person_id AS p, x.uuid AS u,
                uniqExactIf(y.event, y.timestamp >= x.timestamp AND y.timestamp <= x.timestamp + INTERVAL 14 DAY) AS c
         FROM events AS x JOIN events AS y ON x.person_id = y.person_id AND y.project_id = x.project_id
         WHERE x.project_id = {project:UInt64} AND x.event IN ('A', 'B', 'C') AND y.event IN ('A', 'B', 'C')
         GROUP BY p, u)
       GROUP BY p)`,
    p,
  );
  t.same(unordered[0]!.map(Number), expected['unordered'], 'the hand-written unordered count agrees');
});

t.test('exclusions spoil the attempts between their steps; a clean retry counts', async (t) => {
  const p = await project([
    ...seq('e1', ['A', 'X', 'B', 'C']),
    ...seq('e2', ['A', 'B', 'X', 'C']),
    ...seq('e3', ['A', 'X']),
    ...seq('e4', ['A', 'X', 'A', 'B']),
    ...seq('e5', ['A', 'B', 'C']),
  ]);
  const exclude = (from: number, to: number) => ({
    exclusions: [{ kind: 'EventsNode', event: 'X', funnelFromStep: from, funnelToStep: to }],
  });
  const first = await runInsight(store, funnel(steps('A', 'B', 'C'), RANGE, exclude(0, 1)), {
    now: NOW,
    project: p,
  });
  t.same(countsOf(first), [3, 3, 2], 'X between A and B: e1 and e3 are left out');
  const second = await runInsight(store, funnel(steps('A', 'B', 'C'), RANGE, exclude(1, 2)), {
    now: NOW,
    project: p,
  });
  t.same(countsOf(second), [4, 3, 2], 'X between B and C: e2 is left out');
  const whole = await runInsight(store, funnel(steps('A', 'B', 'C'), RANGE, exclude(0, 2)), {
    now: NOW,
    project: p,
  });
  t.same(countsOf(whole), [2, 2, 1], 'X anywhere before C: only e4 (retry) and e5');
  // By hand: a person is left out when an X follows their last A before the B after it (or there is no B).
  const hand = await handSql(
    store,
    `SELECT countIf(ok AND level >= 1), countIf(ok AND level >= 2), countIf(ok AND level >= 3) FROM (
       SELECT person_id,
              groupArray((toUnixTimestamp64Micro(timestamp), event)) AS evs,
              arrayMax(arrayMap(x -> if(x.2 = 'A', x.1, 0), evs)) AS lastA,
              arrayMin(arrayMap(x -> if(x.2 = 'B' AND x.1 > lastA, x.1, toInt64('9000000000000000000')), evs)) AS nextB,
              NOT arrayExists(x -> x.2 = 'X' AND x.1 > lastA AND x.1 < nextB, evs) AS ok,
              windowFunnel(1209600)(toDateTime(timestamp), event = 'A', event = 'B', event = 'C') AS level
       FROM events WHERE project_id = {project:UInt64} GROUP BY person_id)`,
    p,
  );
  t.same(hand[0]!.map(Number), [3, 3, 2], 'the hand-written exclusion agrees');
});

t.test('breakdown attribution: first_touch, last_touch, all_events, step', async (t) => {
  const p = await project([
    ...seq('b1', [
      ['A', { $browser: 'Chrome' }],
      ['B', { $browser: 'Safari' }],
    ]),
    ...seq('b2', ['A', ['B', { $browser: 'Firefox' }]]),
    ...seq('b3', [['A', { $browser: 'Chrome' }]]),
  ]);
  const run = (filter: Record<string, unknown>) =>
    runInsight(
      store,
      funnel(steps('A', 'B'), RANGE, filter, { breakdownFilter: { breakdown: '$browser' } }),
      { now: NOW, project: p },
    );
  const byValue = (a: Awaited<ReturnType<typeof run>>) =>
    Object.fromEntries(valuesOf(a).map((v) => [String(v), countsOf(a, v)]));
  const first = await run({});
  t.same(first.columns[0], 'breakdown_value');
  t.same(valuesOf(first), ['Chrome', 'Firefox'], 'first_touch is the default');
  t.same(byValue(first), { Chrome: [2, 1], Firefox: [1, 1] });
  const last = await run({ breakdownAttributionType: 'last_touch' });
  t.same(valuesOf(last), ['Firefox', 'Safari', 'Chrome'], 'ordered by the last step, then the value');
  t.same(byValue(last), { Safari: [1, 1], Firefox: [1, 1], Chrome: [1, 0] });
  const all = await run({ breakdownAttributionType: 'all_events' });
  t.same(byValue(all), { Chrome: [2, 0], null: [1, 0] }, "each value's own events");
  const step1 = await run({ breakdownAttributionType: 'step', breakdownAttributionValue: 1 });
  t.same(byValue(step1), { Firefox: [1, 1], Safari: [1, 1], null: [1, 0] }, 'the value on step 2');
  const step0 = await run({ breakdownAttributionType: 'step', breakdownAttributionValue: 0 });
  t.same(byValue(step0), { Chrome: [2, 1], null: [1, 1] }, 'the value on step 1');
  const hand = await handSql(
    store,
    `SELECT v, countIf(level >= 1), countIf(level >= 2) FROM (
       SELECT person_id, argMinIf(b, timestamp, b != '') AS v,
              windowFunnel(1209600)(toDateTime(timestamp), event = 'A', event = 'B') AS level
       FROM (SELECT *, JSONExtractString(properties, '$browser') AS b FROM events WHERE project_id = {project:UInt64})
       GROUP BY person_id)
     GROUP BY v ORDER BY v`,
    p,
  );
  t.same(
    hand.map((r) => [r[0], Number(r[1]), Number(r[2])]),
    [
      ['Chrome', 2, 1],
      ['Firefox', 1, 1],
    ],
    'first_touch by hand',
  );
});

t.test('breakdown limit: values past it merge into Other, last; null is a value', async (t) => {
  const plan = (who: string, value: string | null, gap: number | null) => {
    const props = value === null ? {} : { plan: value };
    const a = ev(who, 'A', '2020-01-02T00:00:00Z', props);
    if (gap === null) return [a];
    return [a, ev(who, 'B', new Date(Date.parse('2020-01-02T00:00:00Z') + gap * 1000).toISOString(), props)];
  };
  const p = await project([
    ...plan('pa1', 'pro', 60),
    ...plan('pa2', 'pro', 120),
    ...plan('pa3', 'pro', 300),
    ...plan('pb1', 'free', 900),
    ...plan('pb2', 'free', null),
    ...plan('pc1', 'team', null),
    ...plan('pn1', null, 600),
  ]);
  const query = (limit?: number) =>
    funnel(
      steps('A', 'B'),
      RANGE,
      {},
      {
        breakdownFilter: { breakdown: 'plan', ...(limit ? { breakdown_limit: limit } : {}) },
      },
    );
  const all = await runInsight(store, query(), { now: NOW, project: p });
  t.same(valuesOf(all), ['pro', 'free', null, 'team']);
  t.same(countsOf(all, 'pro'), [3, 3]);
  t.same(avgsOf(all, 'pro'), [null, 160]);
  t.same(mediansOf(all, 'pro'), [null, 120]);
  t.same(countsOf(all, null), [1, 1], 'no plan: the null value');
  t.same(countsOf(all, 'team'), [1, 0], 'every step of a value is shown');
  t.same(avgsOf(all, 'team'), [null, null]);
  t.equal(all.hasMore, false);
  const two = await runInsight(store, query(2), { now: NOW, project: p });
  t.same(valuesOf(two), ['pro', 'free', 'Other']);
  t.same(countsOf(two, 'Other'), [2, 1], 'null and team summed');
  t.same(avgsOf(two, 'Other'), [null, 600], 'times over the merged actors');
  t.same(
    two.rows.filter((r) => r[0] === 'Other').map((r) => r[4]),
    [1, 0.5],
    'conversion rate within Other',
  );
  t.equal(two.hasMore, true);
  const hand = await handSql(
    store,
    `SELECT v, countIf(level >= 1), countIf(level >= 2) FROM (
       SELECT person_id, argMinIf(b, timestamp, b != '') AS v,
              windowFunnel(1209600)(toDateTime(timestamp), event = 'A', event = 'B') AS level
       FROM (SELECT *, JSONExtractString(properties, 'plan') AS b FROM events WHERE project_id = {project:UInt64})
       GROUP BY person_id)
     GROUP BY v ORDER BY v`,
    p,
  );
  t.same(
    hand.map((r) => [r[0], Number(r[1]), Number(r[2])]),
    [
      ['', 1, 1],
      ['free', 2, 1],
      ['pro', 3, 3],
      ['team', 1, 0],
    ],
  );
  const free = await runInsight(store, query(), { now: NOW, project: p, variables: { plan: 'free' } });
  t.same(valuesOf(free), ['free'], 'the breakdown variable selects one value');
  t.same(countsOf(free, 'free'), [2, 1]);
  const none = await runInsight(store, query(), { now: NOW, project: p, variables: { plan: '' } });
  t.same(valuesOf(none), [null], '"" selects the null value');
  t.same(countsOf(none, null), [1, 1]);
});

t.test('a person-property breakdown', async (t) => {
  const p = await project([
    { ...ev('g1', 'A', '2020-01-02T00:00:00Z'), personProperties: { tier: 'gold' } },
    { ...ev('g1', 'B', '2020-01-02T00:01:00Z'), personProperties: { tier: 'gold' } },
    { ...ev('g2', 'A', '2020-01-02T00:00:00Z'), personProperties: { tier: 'silver' } },
  ]);
  const a = await runInsight(
    store,
    funnel(steps('A', 'B'), RANGE, {}, { breakdownFilter: { breakdown: 'tier', breakdown_type: 'person' } }),
    { now: NOW, project: p },
  );
  t.same(valuesOf(a), ['gold', 'silver']);
  t.same(countsOf(a, 'gold'), [1, 1]);
  t.same(countsOf(a, 'silver'), [1, 0]);
});

t.test('query filters apply to every event, step filters to their step', async (t) => {
  const p = await project([
    ...seq('f1', [
      ['A', { env: 'prod' }],
      ['B', { env: 'prod', ok: true }],
    ]),
    ...seq('f2', [
      ['A', { env: 'prod' }],
      ['B', { env: 'prod', ok: false }],
    ]),
    ...seq('f3', [
      ['A', { env: 'dev' }],
      ['B', { env: 'dev', ok: true }],
    ]),
  ]);
  const series = [
    { kind: 'EventsNode', event: 'A' },
    { kind: 'EventsNode', event: 'B', properties: [{ key: 'ok', value: true, operator: 'exact' }] },
  ];
  const a = await runInsight(
    store,
    funnel(
      series,
      RANGE,
      {},
      { properties: [{ key: 'env', value: 'prod', operator: 'exact', type: 'event' }] },
    ),
    { now: NOW, project: p },
  );
  t.same(countsOf(a), [2, 1], 'f3 is dev; f2 did not meet step 2');
  const hand = await handCounts(store, {
    steps: ["e.event = 'A'", "e.event = 'B' AND JSONExtractRaw(e.properties, 'ok') = 'true'"],
    windowSeconds: 14 * 86400,
    ...HAND_RANGE,
    where: "JSONExtractString(e.properties, 'env') = 'prod'",
    project: p,
  });
  t.same(hand, [2, 1]);
});

t.test('consecutive identical steps need a later event; different steps may share an instant', async (t) => {
  const at = '2020-01-02T00:00:00Z';
  const p = await project([
    ev('same', 'A', at),
    ev('same', 'A', at),
    ev('later', 'A', at),
    ev('later', 'A', '2020-01-02T00:00:05Z'),
    ev('pair', 'A', at),
    ev('pair', 'B', at),
  ]);
  const twice = await runInsight(store, funnel(steps('A', 'A'), RANGE), { now: NOW, project: p });
  t.same(countsOf(twice), [3, 1], "only 'later' did A twice at different times");
  t.same(avgsOf(twice), [null, 5]);
  const ab = await runInsight(store, funnel(steps('A', 'B'), RANGE), { now: NOW, project: p });
  t.same(countsOf(ab), [3, 1], "'pair' converts at the same instant");
  t.same(avgsOf(ab), [null, null], 'a 0-second conversion is left out of the times');
});
