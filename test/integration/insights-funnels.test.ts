/**
 * FunnelsQuery on PostHog's published conversion-time cases (reference §5.2: F1 for every order type, F2's
 * window boundary, F3's incomplete retries), then each window unit, the date range, 20 steps and merged
 * persons; step counts checked against ClickHouse's windowFunnel over the store tables.
 */
import t from 'tap';
import { avgsOf, countsOf, ev, funnel, handCounts, mediansOf, steps } from '../helpers/funnels.ts';
import {
  handSql,
  insertEvents,
  insightStore,
  personOf,
  pointDistinctIds,
  runInsight,
} from '../helpers/insights.ts';

const store = await insightStore(t);
const NOW = new Date('2022-01-01T00:00:00Z');
let nextProject = 1;
/** Each case writes into a project of its own. */
async function project(events: Parameters<typeof insertEvents>[1]): Promise<number> {
  const p = nextProject++;
  await insertEvents(store, events, p);
  return p;
}

t.test('F1: step conversion times from the previous step, for every order type', async (t) => {
  const p = await project([
    ev('person1', 'sign up', '2020-01-01T12:00:00Z'),
    ev('person1', 'play movie', '2020-01-01T13:00:00Z'),
    ev('person1', 'buy', '2020-01-01T15:00:00Z'),
    ev('person2', 'sign up', '2020-01-02T14:00:00Z'),
    ev('person2', 'play movie', '2020-01-02T16:00:00Z'),
    ev('person3', 'sign up', '2020-01-02T14:00:00Z'),
    ev('person3', 'play movie', '2020-01-02T16:00:00Z'),
    ev('person3', 'buy', '2020-01-02T17:00:00Z'),
  ]);
  const range = { date_from: '2020-01-01', date_to: '2020-01-08' };
  for (const order of ['ordered', 'strict', 'unordered']) {
    const a = await runInsight(
      store,
      funnel(steps('sign up', 'play movie', 'buy'), range, {
        funnelWindowInterval: 7,
        funnelOrderType: order,
      }),
      { now: NOW, project: p },
    );
    t.same(a.columns, [
      'step',
      'event',
      'count',
      'conversion_rate',
      'average_conversion_time',
      'median_conversion_time',
    ]);
    t.same(countsOf(a), [3, 3, 2], `${order}: counts`);
    t.same(avgsOf(a), [null, 6000, 5400], `${order}: PostHog's averages`);
    t.same(mediansOf(a), [null, 7200, 5400], `${order}: PostHog's medians`);
    t.same(
      a.rows.map((r) => r[3]),
      [1, 1, 2 / 3],
      `${order}: conversion rate against step 1`,
    );
    t.same(
      a.rows.map((r) => r[1]),
      order === 'unordered'
        ? ['Completed 1 step', 'Completed 2 steps', 'Completed 3 steps']
        : ['sign up', 'play movie', 'buy'],
    );
  }
  const hand = await handCounts(store, {
    steps: ["e.event = 'sign up'", "e.event = 'play movie'", "e.event = 'buy'"],
    windowSeconds: 7 * 86400,
    from: '2020-01-01 00:00:00',
    to: '2020-01-08 23:59:59.999999',
    project: p,
  });
  t.same(hand, [3, 3, 2], 'windowFunnel agrees');
  const times = await handSql(
    store,
    `SELECT avg(d1), median(d1), avgIf(d2, d2 > 0), medianIf(d2, d2 > 0) FROM (
       SELECT dateDiff('second', minIf(timestamp, event = 'sign up'), minIf(timestamp, event = 'play movie')) AS d1,
              dateDiff('second', minIf(timestamp, event = 'play movie'), minIf(timestamp, event = 'buy')) AS d2
       FROM events WHERE project_id = {project:UInt64} GROUP BY person_id)`,
    p,
  );
  t.same(times[0]!.map(Number), [6000, 7200, 5400, 5400], 'hand-written times agree');
});

t.test('F2: the window includes its edge; a 5-minute window keeps one conversion', async (t) => {
  const p = await project([
    ev('A', 'user signed up', '2020-01-02T14:00:00Z'),
    ev('A', 'pageview', '2020-01-02T14:05:00Z'),
    ev('B', 'user signed up', '2020-01-02T14:03:00Z'),
    ev('C', 'user signed up', '2020-01-02T12:00:00Z'),
    ev('C', 'pageview', '2020-01-02T12:15:00Z'),
  ]);
  const range = { date_from: '2020-01-01', date_to: '2020-01-14' };
  const series = steps('user signed up', 'pageview');
  const wide = await runInsight(store, funnel(series, range), { now: NOW, project: p });
  t.same(countsOf(wide), [3, 2]);
  t.same(avgsOf(wide), [null, 600]);
  const narrow = await runInsight(
    store,
    funnel(series, range, { funnelWindowInterval: 5, funnelWindowIntervalUnit: 'minute' }),
    { now: NOW, project: p },
  );
  t.same(countsOf(narrow), [3, 1], 'A converts at exactly 300 s');
  t.same(avgsOf(narrow), [null, 300]);
  const hand = (windowSeconds: number): Promise<number[]> =>
    handCounts(store, {
      steps: ["e.event = 'user signed up'", "e.event = 'pageview'"],
      windowSeconds,
      from: '2020-01-01 00:00:00',
      to: '2020-01-14 23:59:59.999999',
      project: p,
    });
  t.same(await hand(14 * 86400), [3, 2]);
  t.same(await hand(300), [3, 1]);
});

t.test('F3: incomplete retries do not replace the best attempt', async (t) => {
  const p = await project([
    ev('person1', 'user signed up', '2021-05-01T01:00:00Z'),
    ev('person1', '$pageview', '2021-05-01T02:00:00Z'),
    ev('person1', 'something else', '2021-05-01T03:00:00Z'),
    ev('person1', 'user signed up', '2021-05-03T04:00:00Z'),
    ev('person1', '$pageview', '2021-05-03T05:00:00Z'),
    ev('person1', 'user signed up', '2021-05-04T07:00:00Z'),
    ev('person1', '$pageview', '2021-05-04T10:00:00Z'),
  ]);
  const a = await runInsight(
    store,
    funnel(
      steps('user signed up', '$pageview', 'something else'),
      { date_from: '2021-05-01', date_to: '2021-05-14' },
      { funnelWindowInterval: 1 },
    ),
    { now: NOW, project: p },
  );
  t.same(countsOf(a), [1, 1, 1]);
  t.same(avgsOf(a), [null, 3600, 3600]);
  t.same(mediansOf(a), [null, 3600, 3600]);
  const hand = await handCounts(store, {
    steps: ["e.event = 'user signed up'", "e.event = '$pageview'", "e.event = 'something else'"],
    windowSeconds: 86400,
    from: '2021-05-01 00:00:00',
    to: '2021-05-14 23:59:59.999999',
    project: p,
  });
  t.same(hand, [1, 1, 1]);
});

t.test('each window unit: a gap converts within interval × unit and not beyond', async (t) => {
  const gaps: [string, number][] = [
    ['u_sec', 45],
    ['u_min', 45 * 60],
    ['u_hour', 5 * 3600],
    ['u_day', 3 * 86400],
    ['u_week', 15 * 86400],
    ['u_month', 40 * 86400],
  ];
  const start = Date.parse('2020-01-05T00:00:00Z');
  const p = await project(
    gaps.flatMap(([who, gap]) => [
      ev(who, 'a', new Date(start).toISOString()),
      ev(who, 'b', new Date(start + gap * 1000).toISOString()),
    ]),
  );
  const range = { date_from: '2020-01-01', date_to: '2020-03-31' };
  const cases: [number, string, number, number][] = [
    [45, 'second', 45, 1],
    [44, 'second', 44, 0],
    [45, 'minute', 45 * 60, 2],
    [5, 'hour', 5 * 3600, 3],
    [3, 'day', 3 * 86400, 4],
    [3, 'week', 21 * 86400, 5],
    [1, 'month', 31 * 86400, 5],
    [2, 'month', 62 * 86400, 6],
  ];
  for (const [interval, unit, seconds, converted] of cases) {
    const a = await runInsight(
      store,
      funnel(steps('a', 'b'), range, { funnelWindowInterval: interval, funnelWindowIntervalUnit: unit }),
      { now: NOW, project: p },
    );
    t.same(countsOf(a), [6, converted], `${interval} ${unit}`);
    const hand = await handCounts(store, {
      steps: ["e.event = 'a'", "e.event = 'b'"],
      windowSeconds: seconds,
      from: '2020-01-01 00:00:00',
      to: '2020-03-31 23:59:59.999999',
      project: p,
    });
    t.same(hand, [6, converted], `${interval} ${unit}: windowFunnel agrees`);
  }
});

t.test('every step must fall in the date range', async (t) => {
  const p = await project([
    ev('before', 'a', '2020-01-31T23:00:00Z'),
    ev('before', 'b', '2020-02-01T01:00:00Z'),
    ev('after', 'a', '2020-02-07T23:00:00Z'),
    ev('after', 'b', '2020-02-08T01:00:00Z'),
    ev('inside', 'a', '2020-02-03T10:00:00Z'),
    ev('inside', 'b', '2020-02-03T11:00:00Z'),
  ]);
  const a = await runInsight(
    store,
    funnel(steps('a', 'b'), { date_from: '2020-02-01', date_to: '2020-02-07' }),
    { now: NOW, project: p },
  );
  t.same(countsOf(a), [2, 1], "'before' has no step 1 in range; 'after' has no step 2");
  const hand = await handCounts(store, {
    steps: ["e.event = 'a'", "e.event = 'b'"],
    windowSeconds: 14 * 86400,
    from: '2020-02-01 00:00:00',
    to: '2020-02-07 23:59:59.999999',
    project: p,
  });
  t.same(hand, [2, 1]);
});

t.test('20 steps, every one shown, zero-filled past the furthest', async (t) => {
  const names = Array.from({ length: 20 }, (_, i) => `s${i + 1}`);
  const at = (i: number): string => new Date(Date.parse('2020-01-02T00:00:00Z') + i * 60_000).toISOString();
  const p = await project([
    ...names.map((n, i) => ev('all', n, at(i))),
    ...names.slice(0, 10).map((n, i) => ev('half', n, at(i))),
  ]);
  const a = await runInsight(
    store,
    funnel(steps(...names), { date_from: '2020-01-01', date_to: '2020-01-05' }),
    { now: NOW, project: p },
  );
  t.same(countsOf(a), [...Array<number>(10).fill(2), ...Array<number>(10).fill(1)]);
  t.same(avgsOf(a), [null, ...Array<number>(19).fill(60)]);
  t.same(
    a.rows.map((r) => r[1]),
    names,
  );
  const hand = await handCounts(store, {
    steps: names.map((n) => `e.event = '${n}'`),
    windowSeconds: 14 * 86400,
    from: '2020-01-01 00:00:00',
    to: '2020-01-05 23:59:59.999999',
    project: p,
  });
  t.same(hand, countsOf(a));
  const empty = await runInsight(
    store,
    funnel(steps('a', 'b', 'c'), { date_from: '2020-01-01', date_to: '2020-01-05' }),
    { now: NOW, project: p },
  );
  t.same(countsOf(empty), [0, 0, 0], 'a funnel no one entered still shows its steps');
  t.same(
    empty.rows.map((r) => r[3]),
    [0, 0, 0],
  );
});

t.test('merged persons count once, with the steps of all their distinct ids', async (t) => {
  const p = await project([
    ev('d1', 'a', '2020-01-02T10:00:00Z'),
    ev('d2', 'b', '2020-01-02T11:00:00Z'),
    ev('d3', 'a', '2020-01-02T10:00:00Z'),
  ]);
  await pointDistinctIds(store, [{ distinctId: 'd2', personId: personOf('d1') }], p, 2);
  const a = await runInsight(
    store,
    funnel(steps('a', 'b'), { date_from: '2020-01-01', date_to: '2020-01-05' }),
    { now: NOW, project: p },
  );
  t.same(countsOf(a), [2, 1], 'd1 and d2 are one person who converted; d3 another');
  t.same(avgsOf(a), [null, 3600]);
  const hand = await handCounts(store, {
    steps: ["e.event = 'a'", "e.event = 'b'"],
    windowSeconds: 14 * 86400,
    from: '2020-01-01 00:00:00',
    to: '2020-01-05 23:59:59.999999',
    project: p,
  });
  t.same(hand, [2, 1]);
});
