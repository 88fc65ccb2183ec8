/**
 * Reading a TrendsQuery: defaults, the display-only fields taken and ignored, the range a run covers, and
 * every refusal naming the field (attr) and saying what Weir takes instead.
 */
import t, { type Test } from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import { readInsight } from '../../src/query/insights/insight.ts';
import { trends, TRENDS_FILTER_IGNORED } from '../../src/query/insights/trends.ts';
import type { CheckedTrends } from '../../src/query/insights/trends-types.ts';

const node = (extra: Record<string, unknown> = {}) => ({ kind: 'EventsNode', event: '$pageview', ...extra });
const base = (extra: Record<string, unknown> = {}) => ({ kind: 'TrendsQuery', series: [node()], ...extra });

function read(q: unknown): CheckedTrends {
  return readInsight(q).checked as CheckedTrends;
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
    t.match(e.message, detail);
  }
}

t.test('defaults: day interval, a line graph, -7d', (t) => {
  const q = read(base());
  t.equal(q.interval, 'day');
  t.equal(q.display, 'ActionsLineGraph');
  t.equal(q.totalValue, false);
  t.equal(q.cumulative, false);
  t.same(q.series[0], {
    event: '$pageview',
    customName: null,
    properties: [],
    math: 'total',
    mathProperty: null,
    mathPropertyType: 'event',
    mathGroupTypeIndex: null,
  });
  t.equal(q.base.breakdown, null);
  const now = new Date('2024-03-10T05:30:00Z');
  t.same(trends.range(q, {}, now), {
    from: new Date('2024-03-03T00:00:00Z'),
    to: new Date('2024-03-10T23:59:59.999Z'),
  });
  t.end();
});

t.test('total-value displays, and their range in whole days', (t) => {
  for (const display of ['BoldNumber', 'ActionsPie', 'ActionsTable', 'WorldMap', 'ActionsBarValue']) {
    t.equal(read(base({ trendsFilter: { display } })).totalValue, true, display);
  }
  for (const display of [
    'ActionsLineGraph',
    'ActionsBar',
    'ActionsUnstackedBar',
    'ActionsStackedBar',
    'ActionsAreaGraph',
  ]) {
    t.equal(read(base({ trendsFilter: { display } })).totalValue, false, display);
  }
  const q = read(
    base({ interval: 'hour', dateRange: { date_from: '-6h' }, trendsFilter: { display: 'BoldNumber' } }),
  );
  t.same(trends.range(q, {}, new Date('2024-03-10T05:30:00Z')), {
    from: new Date('2024-03-09T23:00:00Z'),
    to: new Date('2024-03-10T23:59:59.999Z'),
  });
  t.end();
});

t.test('the date variables replace the range’s ends', (t) => {
  const q = read(base({ dateRange: { date_from: '-30d' } }));
  t.same(
    trends.range(q, { dateFrom: '2024-01-01', dateTo: '2024-01-31' }, new Date('2024-03-10T00:00:00Z')),
    {
      from: new Date('2024-01-01T00:00:00Z'),
      to: new Date('2024-01-31T23:59:59.999Z'),
    },
  );
  t.end();
});

t.test('display-only fields are taken and ignored', (t) => {
  const filter = Object.fromEntries(TRENDS_FILTER_IGNORED.map((name) => [name, 1]));
  const q = read(
    base({
      trendsFilter: {
        ...filter,
        display: 'ActionsBar',
        formulas: [],
        formula: '',
        formulaNodes: [],
        smoothingIntervals: 1,
      },
      compareFilter: { compare: false, compare_to: '-1w' },
      dataColorTheme: 3,
      series: [node({ name: 'Pageviews', custom_name: 'Views' })],
    }),
  );
  t.equal(q.display, 'ActionsBar');
  t.equal(q.series[0]!.customName, 'Views');
  t.end();
});

t.test('a query without series, or with an empty event name, is refused', (t) => {
  refused(t, { kind: 'TrendsQuery' }, 'query.series', /at least one/);
  refused(t, base({ series: [] }), 'query.series', /at least one/);
  refused(t, base({ series: [node({ event: '' })] }), 'query.series[0].event', /must not be empty/);
  refused(t, base({ series: [node(), node({ event: '  ' })] }), 'query.series[1].event', /must not be empty/);
  refused(t, base({ series: 'x' }), 'query.series', /must be a list/);
  refused(t, base({ series: [1] }), 'query.series[0]', /EventsNode/);
  refused(t, base({ series: [{ kind: 'ActionsNode', id: 3 }] }), 'query.series[0].id', /Unknown field/);
  refused(t, base({ series: [{ kind: 'ActionsNode' }] }), 'query.series[0].kind', /EventsNode/);
  t.end();
});

t.test('unknown fields are refused with their path', (t) => {
  refused(t, base({ interval2: 'day' }), 'query.interval2', /Unknown field/);
  refused(t, base({ series: [node({ mathh: 'dau' })] }), 'query.series[0].mathh', /Unknown field/);
  refused(t, base({ trendsFilter: { bogus: 1 } }), 'query.trendsFilter.bogus', /Unknown field/);
  refused(t, base({ compareFilter: { compare_too: 1 } }), 'query.compareFilter.compare_too', /Unknown field/);
  refused(t, base({ dateRange: { date_form: '-7d' } }), 'query.dateRange.date_form', /Unknown field/);
  refused(t, base({ breakdownFilter: { breakdwn: 'x' } }), 'query.breakdownFilter.breakdwn', /Unknown field/);
  refused(
    t,
    base({ properties: [{ key: 'a', value: 1, operater: 'exact' }] }),
    'query.properties[0].operater',
    /Unknown field/,
  );
  refused(
    t,
    base({ series: [node({ properties: [{ key: 'a', valu: 1 }] })] }),
    'query.series[0].properties[0].valu',
    /Unknown field/,
  );
  t.end();
});

t.test('an unsupported value is named, with the values Weir takes', (t) => {
  refused(t, base({ series: [node({ math: 'hogql' })] }), 'query.series[0].math', /"hogql".*total, dau/);
  refused(
    t,
    base({ series: [node({ math: 'avg_count_per_actor' })] }),
    'query.series[0].math',
    /avg_count_per_actor/,
  );
  refused(
    t,
    base({ series: [node({ math: 'first_time_for_user' })] }),
    'query.series[0].math',
    /first_time_for_user/,
  );
  refused(t, base({ interval: 'minute' }), 'query.interval', /"minute".*hour, day, week, month/);
  refused(
    t,
    base({ trendsFilter: { display: 'CalendarHeatmap' } }),
    'query.trendsFilter.display',
    /CalendarHeatmap/,
  );
  refused(
    t,
    base({ properties: [{ key: 'a', operator: 'between', value: 1 }] }),
    'query.properties[0].operator',
    /between/,
  );
  refused(
    t,
    base({ properties: [{ key: 'a', type: 'cohort', value: 1 }] }),
    'query.properties[0].type',
    /cohort/,
  );
  refused(
    t,
    base({ breakdownFilter: { breakdown: 'a', breakdown_type: 'cohort' } }),
    'query.breakdownFilter.breakdown_type',
    /cohort/,
  );
  refused(
    t,
    base({
      series: [
        node({ math_property_type: 'data_warehouse_person_properties', math: 'sum', math_property: 'x' }),
      ],
    }),
    'query.series[0].math_property_type',
    /data_warehouse_person_properties/,
  );
  t.end();
});

t.test('a math without what it aggregates is refused', (t) => {
  refused(
    t,
    base({ series: [node({ math: 'sum' })] }),
    'query.series[0].math_property',
    /needs 'math_property'/,
  );
  refused(
    t,
    base({ series: [node({ math: 'p90', math_property: '' })] }),
    'query.series[0].math_property',
    /needs/,
  );
  refused(
    t,
    base({ series: [node({ math: 'unique_group' })] }),
    'query.series[0].math_group_type_index',
    /0-4/,
  );
  refused(
    t,
    base({ series: [node({ math: 'unique_group', math_group_type_index: 5 })] }),
    'query.series[0].math_group_type_index',
    /0 to 4/,
  );
  t.end();
});

t.test('formulas: read and checked; a formula Weir cannot compute is refused with the reason', (t) => {
  const two = { series: [node(), node({ event: '$pageleave' })] };
  const f = (trendsFilter: Record<string, unknown>) => read(base({ ...two, trendsFilter })).formulas;
  t.same(f({ formulas: ['A+2*B', 'A-B'] }), [
    { text: 'A+2*B', label: 'Formula (A+2*B)' },
    { text: 'A-B', label: 'Formula (A-B)' },
  ]);
  t.same(f({ formula: '(a + b) / 2' }), [{ text: '(a + b) / 2', label: 'Formula ((a + b) / 2)' }]);
  t.same(
    f({
      formulaNodes: [
        { formula: 'B/A', custom_name: 'rate' },
        { formula: 'A', custom_name: '' },
      ],
    }),
    [
      { text: 'B/A', label: 'rate' },
      { text: 'A', label: 'Formula (A)' },
    ],
  );
  t.same(f({ formulas: [], formula: '' }), [], 'empty ones are none');
  const bad = (trendsFilter: Record<string, unknown>, attr: string, detail: RegExp) =>
    refused(t, base({ ...two, trendsFilter }), attr, detail);
  bad({ formula: 'A+C' }, 'query.trendsFilter.formula', /'C' names no series \(there are 2: A to B\)/);
  bad({ formulas: ['A', 'A+'] }, 'query.trendsFilter.formulas[1]', /ends too soon/);
  bad({ formulas: ['A % B'] }, 'query.trendsFilter.formulas[0]', /'% B' is not part of a formula/);
  bad({ formulas: ['(A+B'] }, 'query.trendsFilter.formulas[0]', /not closed/);
  bad({ formulas: ['A B'] }, 'query.trendsFilter.formulas[0]', /'B' is left over/);
  bad({ formulas: ['AB'] }, 'query.trendsFilter.formulas[0]', /left over/);
  bad({ formulas: [' '] }, 'query.trendsFilter.formulas[0]', /empty/);
  bad({ formulas: [3] }, 'query.trendsFilter.formulas[0]', /formula string/);
  bad(
    { formulaNodes: [{ formula: 'A', name: 'x' }] },
    'query.trendsFilter.formulaNodes[0].name',
    /Unknown field/,
  );
  bad({ formulaNodes: [{ custom_name: 'x' }] }, 'query.trendsFilter.formulaNodes[0].formula', /required/);
  bad({ formula: 'A', formulas: ['B'] }, 'query.trendsFilter.formulaNodes', /one of/);
  t.end();
});

t.test('compare: the previous period of the same length, or moved back by compare_to', (t) => {
  t.same(read(base({ compareFilter: { compare: true } })).compare, { shift: null });
  t.same(read(base({ compareFilter: { compare: true, compare_to: '-1w' } })).compare, {
    shift: { count: 1, unit: 'w' },
  });
  t.equal(read(base({ compareFilter: { compare: false, compare_to: '-1w' } })).compare, null);
  for (const bad of ['-1wStart', '2024-01-01', '-0d', 'all', '-5M']) {
    refused(
      t,
      base({ compareFilter: { compare: true, compare_to: bad } }),
      'query.compareFilter.compare_to',
      /how far back/,
    );
  }
  refused(
    t,
    base({ dateRange: { date_from: 'all' }, compareFilter: { compare: true } }),
    'query.compareFilter.compare',
    /not supported with date_from 'all'/,
  );
  t.end();
});

t.test('smoothing, group aggregation and test accounts are not supported, and say so', (t) => {
  refused(
    t,
    base({ trendsFilter: { smoothingIntervals: 7 } }),
    'query.trendsFilter.smoothingIntervals',
    /not supported/,
  );
  refused(
    t,
    base({ aggregation_group_type_index: 0 }),
    'query.aggregation_group_type_index',
    /not supported/,
  );
  refused(t, base({ filterTestAccounts: true }), 'query.filterTestAccounts', /not supported/);
  t.end();
});

t.test('the cumulative display takes the maths that add up', (t) => {
  const cumulative = { trendsFilter: { display: 'ActionsLineGraphCumulative' } };
  t.equal(read(base(cumulative)).cumulative, true);
  t.equal(
    read(base({ ...cumulative, series: [node({ math: 'sum', math_property: 'x' })] })).cumulative,
    true,
  );
  refused(
    t,
    base({ ...cumulative, series: [node(), node({ math: 'dau' })] }),
    'query.series[1].math',
    /does not add up/,
  );
  t.end();
});

t.test('breakdowns: one, several (at most 3), the limit', (t) => {
  const one = read(base({ breakdownFilter: { breakdown: '$browser' } }));
  t.same(one.base.breakdown, {
    breakdowns: [{ property: '$browser', type: 'event' }],
    limit: 25,
    hideOther: false,
  });
  const several = read(
    base({
      breakdownFilter: {
        breakdowns: [{ property: 'a' }, { property: 'b', type: 'person' }],
        breakdown_limit: 5,
      },
    }),
  );
  t.same(several.base.breakdown?.breakdowns, [
    { property: 'a', type: 'event' },
    { property: 'b', type: 'person' },
  ]);
  t.equal(several.base.breakdown?.limit, 5);
  refused(
    t,
    base({ breakdownFilter: { breakdown: 'a', breakdown_limit: 0 } }),
    'query.breakdownFilter.breakdown_limit',
    /from 1/,
  );
  refused(
    t,
    base({ breakdownFilter: { breakdowns: [1, 2, 3, 4].map((i) => ({ property: `p${i}` })) } }),
    'query.breakdownFilter.breakdowns',
    /At most 3/,
  );
  t.end();
});
