/**
 * Reading a FunnelsQuery: defaults, and every refusal naming the field (attr) and what Weir takes instead,
 * including PostHog's exclusion and unordered-funnel rules (reference §2.3).
 */
import t, { type Test } from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import { readInsight } from '../../src/query/insights/insight.ts';
import type { CheckedFunnels } from '../../src/query/insights/funnels.ts';

const step = (event: string, extra: Record<string, unknown> = {}) => ({
  kind: 'EventsNode',
  event,
  ...extra,
});
const base = (extra: Record<string, unknown> = {}, filter?: Record<string, unknown>) => ({
  kind: 'FunnelsQuery',
  series: [step('a'), step('b'), step('c')],
  ...(filter ? { funnelsFilter: filter } : {}),
  ...extra,
});

function read(q: unknown): CheckedFunnels {
  return readInsight(q).checked as CheckedFunnels;
}

function refused(t: Test, q: unknown, attr: string, detail: RegExp): void {
  try {
    read(q);
    t.fail(`not refused: ${attr}`);
  } catch (err) {
    t.ok(err instanceof AppError, 'an AppError');
    const e = err as AppError;
    t.equal(e.code, 'invalid_query');
    t.equal(e.attr, attr);
    t.match(e.message + ' ' + JSON.stringify(e), detail);
  }
}

t.test('defaults: 14 days, ordered, first_touch, no exclusions', (t) => {
  const q = read(base());
  t.equal(q.steps.length, 3);
  t.equal(q.windowSeconds, 14 * 86400);
  t.equal(q.order, 'ordered');
  t.equal(q.attribution, 'first_touch');
  t.same(q.exclusions, []);
  t.end();
});

t.test('window units in seconds; a month is 31 days', (t) => {
  const units: [string, number][] = [
    ['second', 1],
    ['minute', 60],
    ['hour', 3600],
    ['day', 86400],
    ['week', 604800],
    ['month', 31 * 86400],
  ];
  for (const [unit, seconds] of units) {
    const q = read(base({}, { funnelWindowInterval: 2, funnelWindowIntervalUnit: unit }));
    t.equal(q.windowSeconds, 2 * seconds, unit);
  }
  refused(t, base({}, { funnelWindowInterval: 0 }), 'query.funnelsFilter.funnelWindowInterval', /from 1/);
  refused(
    t,
    base({}, { funnelWindowIntervalUnit: 'year' }),
    'query.funnelsFilter.funnelWindowIntervalUnit',
    /month/,
  );
  t.end();
});

t.test('steps: 2 to 20 EventsNodes, math total only', (t) => {
  refused(t, base({ series: [step('a')] }), 'query.series', /2 to 20/);
  refused(
    t,
    base({ series: Array.from({ length: 21 }, (_, i) => step(`s${i}`)) }),
    'query.series',
    /2 to 20/,
  );
  refused(t, base({ series: [step('a'), step('b', { math: 'dau' })] }), 'query.series[1].math', /total/);
  refused(
    t,
    base({ series: [step('a'), step('b', { order: 1 })] }),
    'query.series[1].order',
    /Unknown field/,
  );
  t.equal(
    read(base({ series: [step('a'), step('b', { math: 'total', custom_name: 'B' })] })).steps.length,
    2,
  );
  t.end();
});

t.test('unknown and unsupported fields are refused with their path', (t) => {
  refused(t, base({ funnelz: 1 }), 'query.funnelz', /Unknown field/);
  refused(t, base({}, { bogus: true }), 'query.funnelsFilter.bogus', /Unknown field/);
  refused(
    t,
    base({}, { funnelOrderType: 'loose' }),
    'query.funnelsFilter.funnelOrderType',
    /ordered, strict, unordered/,
  );
  refused(t, base({}, { funnelVizType: 'trends' }), 'query.funnelsFilter.funnelVizType', /steps/);
  refused(t, base({}, { funnelVizType: 'time_to_convert' }), 'query.funnelsFilter.funnelVizType', /steps/);
  refused(
    t,
    base({}, { breakdownAttributionType: 'middle' }),
    'query.funnelsFilter.breakdownAttributionType',
    /first_touch/,
  );
  refused(t, base({ aggregation_group_type_index: 0 }), 'query.aggregation_group_type_index', /persons/);
  refused(
    t,
    base({ breakdownFilter: { breakdowns: [{ property: 'a' }, { property: 'b' }] } }),
    'query.breakdownFilter.breakdowns',
    /one breakdown/,
  );
  // Display-only fields are taken and change nothing.
  const q = read(
    base(
      { interval: 'week' },
      { funnelVizType: 'steps', layout: 'horizontal', binCount: 5, funnelStepReference: 'previous' },
    ),
  );
  t.equal(q.order, 'ordered');
  t.end();
});

t.test('step attribution: the step index, within the steps; unordered only on the first', (t) => {
  const q = read(base({}, { breakdownAttributionType: 'step', breakdownAttributionValue: 2 }));
  t.equal(q.attribution, 'step');
  t.equal(q.attributionStep, 2);
  refused(
    t,
    base({}, { breakdownAttributionType: 'step', breakdownAttributionValue: 3 }),
    'query.funnelsFilter.breakdownAttributionValue',
    /0 to 2/,
  );
  refused(
    t,
    base(
      {},
      { funnelOrderType: 'unordered', breakdownAttributionType: 'step', breakdownAttributionValue: 1 },
    ),
    'query.funnelsFilter.breakdownAttributionValue',
    /first step/,
  );
  t.end();
});

t.test("exclusions: PostHog's range and step checks", (t) => {
  const x = (from: number, to: number, extra: Record<string, unknown> = {}) => ({
    kind: 'EventsNode',
    event: 'x',
    funnelFromStep: from,
    funnelToStep: to,
    ...extra,
  });
  const q = read(base({}, { exclusions: [x(0, 2)] }));
  t.same(
    q.exclusions.map((e) => [e.node.event, e.fromStep, e.toStep]),
    [['x', 0, 2]],
  );
  refused(
    t,
    base({}, { exclusions: [x(1, 1)] }),
    'query.funnelsFilter.exclusions[0].funnelToStep',
    /range is invalid/,
  );
  refused(t, base({}, { exclusions: [x(0, 3)] }), 'query.funnelsFilter.exclusions[0].funnelToStep', /0 to 2/);
  refused(
    t,
    base({}, { exclusions: [x(0, 1, { bad: 1 })] }),
    'query.funnelsFilter.exclusions[0].bad',
    /Unknown field/,
  );
  refused(
    t,
    base({}, { exclusions: [{ ...x(0, 1), event: 'b' }] }),
    'query.funnelsFilter.exclusions[0]',
    /part of funnel steps/,
  );
  // A step with fewer filters matches every event of the exclusion: refused too (PostHog's is_superset).
  refused(
    t,
    base({}, { exclusions: [{ ...x(0, 1), event: 'a', properties: [{ key: 'k', value: 'v' }] }] }),
    'query.funnelsFilter.exclusions[0]',
    /part of funnel steps/,
  );
  // Outside its range, a step's event may be excluded.
  t.equal(read(base({}, { exclusions: [{ ...x(0, 1), event: 'c' }] })).exclusions.length, 1);
  refused(
    t,
    base({}, { funnelOrderType: 'unordered', exclusions: [x(0, 1)] }),
    'query.funnelsFilter.exclusions[0].funnelFromStep',
    /Partial Exclusions/,
  );
  t.equal(read(base({}, { funnelOrderType: 'unordered', exclusions: [x(0, 2)] })).exclusions.length, 1);
  t.end();
});
