/**
 * Reading a RetentionQuery (no I/O): defaults, what is taken and ignored, what is refused with the field's
 * path in `attr` and the unsupported value named in the detail; and the range a run covers.
 */
import t, { type Test } from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import { ObjectReader } from '../../src/query/insights/reader.ts';
import { type CheckedRetention, retention, retentionRange } from '../../src/query/insights/retention.ts';

const read = (raw: Record<string, unknown>): CheckedRetention =>
  retention.read(ObjectReader.of({ kind: 'RetentionQuery', ...raw }, 'query'));

function refused(t: Test, raw: Record<string, unknown>, attr: string, detail: RegExp): void {
  try {
    read(raw);
    t.fail(`${attr}: not refused`);
  } catch (err) {
    t.ok(err instanceof AppError, attr);
    t.equal((err as AppError).code, 'invalid_query', `${attr}: code`);
    t.equal((err as AppError).attr, attr, `${attr}: attr`);
    t.match((err as AppError).message, detail, `${attr}: detail`);
  }
}

t.test('defaults: Day, 8 periods, recurring, $pageview to $pageview', (t) => {
  const q = read({});
  t.equal(q.interval, 'day');
  t.equal(q.totalIntervals, 8);
  t.equal(q.type, 'retention_recurring');
  t.same(q.target, { event: '$pageview', properties: [] });
  t.same(q.returning, { event: '$pageview', properties: [] });
  t.equal(q.minimumOccurrences, 1);
  t.equal(q.cumulative, false);
  t.equal(q.base.breakdown, null);
  t.end();
});

t.test('fields taken, and display-only ones ignored', (t) => {
  const q = read({
    retentionFilter: {
      period: 'Week',
      totalIntervals: 300,
      retentionType: 'retention_first_time',
      targetEntity: {
        id: 'signup',
        type: 'events',
        kind: 'EventsNode',
        name: 'signup',
        custom_name: 'Signed up',
        order: 0,
        uuid: 'abc',
        properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }],
      },
      returningEntity: { id: null, type: 'events' },
      minimumOccurrences: 3,
      cumulative: true,
      display: 'ActionsTable',
      dashboardDisplay: 'ActionsLineGraph',
      retentionReference: 'previous',
      meanRetentionCalculation: 'weighted',
      showMean: true,
      selectedInterval: 2,
      timeWindowMode: 'strict_calendar_dates',
      aggregationType: 'count',
      retentionCustomBrackets: [],
    },
    breakdownFilter: { breakdown: '$browser', breakdown_limit: 5 },
    tags: { productKey: 'x' },
  });
  t.equal(q.interval, 'week');
  t.equal(q.totalIntervals, 300);
  t.equal(q.type, 'retention_first_time');
  t.same(q.target, {
    event: 'signup',
    properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'person' }],
  });
  t.same(q.returning, { event: null, properties: [] }, 'id null: any event');
  t.equal(q.minimumOccurrences, 3);
  t.equal(q.cumulative, true);
  t.same(q.base.breakdown?.breakdowns, [{ property: '$browser', type: 'event' }]);
  t.equal(
    read({ retentionFilter: { retentionType: 'retention_first_ever_occurrence' } }).type,
    'retention_first_ever_occurrence',
  );
  t.end();
});

t.test('refusals name the field and say why', (t) => {
  refused(
    t,
    { retentionFilter: { period: 'Year' } },
    'query.retentionFilter.period',
    /"Year".*Hour, Day, Week, Month/,
  );
  refused(t, { retentionFilter: { totalIntervals: 0 } }, 'query.retentionFilter.totalIntervals', /1 to 300/);
  refused(
    t,
    { retentionFilter: { totalIntervals: 301 } },
    'query.retentionFilter.totalIntervals',
    /1 to 300/,
  );
  refused(
    t,
    { retentionFilter: { totalIntervals: 2.5 } },
    'query.retentionFilter.totalIntervals',
    /whole number/,
  );
  refused(
    t,
    { retentionFilter: { retentionType: 'retention_weekly' } },
    'query.retentionFilter.retentionType',
    /retention_weekly/,
  );
  refused(t, { retentionFilter: { wat: 1 } }, 'query.retentionFilter.wat', /Unknown field/);
  refused(
    t,
    { retentionFilter: { minimumOccurrences: 0 } },
    'query.retentionFilter.minimumOccurrences',
    /1 to/,
  );
  refused(t, { retentionFilter: { cumulative: 'yes' } }, 'query.retentionFilter.cumulative', /true or false/);
  refused(
    t,
    { retentionFilter: { timeWindowMode: '24_hour_windows' } },
    'query.retentionFilter.timeWindowMode',
    /24-hour windows/,
  );
  refused(
    t,
    { retentionFilter: { aggregationType: 'sum' } },
    'query.retentionFilter.aggregationType',
    /"sum".*not supported/,
  );
  refused(
    t,
    { retentionFilter: { aggregationProperty: 'amount' } },
    'query.retentionFilter.aggregationProperty',
    /not supported/,
  );
  refused(
    t,
    { retentionFilter: { retentionCustomBrackets: [1, 3] } },
    'query.retentionFilter.retentionCustomBrackets',
    /not supported/,
  );
  refused(
    t,
    { retentionFilter: { targetEntity: { id: 7, type: 'actions' } } },
    'query.retentionFilter.targetEntity.type',
    /"actions".*events/,
  );
  refused(
    t,
    { retentionFilter: { targetEntity: { id: 7 } } },
    'query.retentionFilter.targetEntity.id',
    /event's name/,
  );
  refused(
    t,
    { retentionFilter: { returningEntity: { id: 'x', kind: 'ActionsNode' } } },
    'query.retentionFilter.returningEntity.kind',
    /ActionsNode/,
  );
  refused(
    t,
    { retentionFilter: { returningEntity: { id: 'x', math: 'dau' } } },
    'query.retentionFilter.returningEntity.math',
    /Unknown field/,
  );
  refused(
    t,
    { retentionFilter: { targetEntity: { id: 'x', properties: [{ key: 'a', operator: 'between' }] } } },
    'query.retentionFilter.targetEntity.properties[0].operator',
    /between/,
  );
  refused(t, { retentionFilter: 'Day' }, 'query.retentionFilter', /object/);
  refused(t, { aggregation_group_type_index: 0 }, 'query.aggregation_group_type_index', /group/);
  refused(t, { series: [] }, 'query.series', /Unknown field/);
  refused(
    t,
    { breakdownFilter: { breakdowns: [{ property: 'a' }, { property: 'b' }] } },
    'query.breakdownFilter.breakdowns',
    /one breakdown/,
  );
  refused(t, { dateRange: { date_from: 'yesterday' } }, 'query.dateRange.date_from', /relative date/);
  t.end();
});

t.test('the range: whole periods, the one holding date_to last', (t) => {
  const now = new Date('2024-03-05T12:34:56Z');
  const range = (raw: Record<string, unknown>, overrides = {}): { from: string; to: string } => {
    const r = retentionRange(read(raw), overrides, now);
    return { from: r.from === 'all' ? 'all' : r.from.toISOString(), to: r.to.toISOString() };
  };
  t.same(
    range({}),
    { from: '2024-02-27T00:00:00.000Z', to: '2024-03-05T23:59:59.999Z' },
    'default: 8 days to now',
  );
  t.same(
    range({ retentionFilter: { period: 'Hour', totalIntervals: 3 } }),
    { from: '2024-03-05T10:00:00.000Z', to: '2024-03-05T12:59:59.999Z' },
    'hours',
  );
  t.same(
    range({ retentionFilter: { period: 'Week', totalIntervals: 2 } }),
    { from: '2024-02-25T00:00:00.000Z', to: '2024-03-09T23:59:59.999Z' },
    'weeks from Sunday (2024-03-03)',
  );
  t.same(
    range({ retentionFilter: { period: 'Month', totalIntervals: 13 } }),
    { from: '2023-03-01T00:00:00.000Z', to: '2024-03-31T23:59:59.999Z' },
    'months',
  );
  t.same(
    range({
      dateRange: { date_from: '2024-01-17T08:00:00', date_to: '-1d' },
      retentionFilter: { period: 'Week' },
    }),
    { from: '2024-01-14T00:00:00.000Z', to: '2024-03-09T23:59:59.999Z' },
    'a given date_from starts its period; a relative date_to',
  );
  t.same(
    range({ dateRange: { date_from: '-3d', explicitDate: true } }),
    { from: '2024-03-02T00:00:00.000Z', to: '2024-03-05T23:59:59.999Z' },
    'explicitDate still takes whole periods',
  );
  t.same(range({ dateRange: { date_from: 'all' } }), { from: 'all', to: '2024-03-05T23:59:59.999Z' });
  t.same(
    range({}, { dateFrom: '2024-01-01', dateTo: '2024-01-10' }),
    { from: '2024-01-01T00:00:00.000Z', to: '2024-01-10T23:59:59.999Z' },
    'the date variables replace both ends',
  );
  t.same(
    range({ retentionFilter: { totalIntervals: 3 } }, { dateTo: '2024-01-10' }),
    { from: '2024-01-08T00:00:00.000Z', to: '2024-01-10T23:59:59.999Z' },
    'date_to alone: totalIntervals periods back from it',
  );
  t.end();
});
