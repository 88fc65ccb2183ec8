/**
 * Issue 25's equality tests for insight endpoints: for trends, funnels and retention with and without a
 * breakdown, on a fixed dataset in real chDB, the materialized answer (the insight's answer for its range
 * stored with the breakdown kept as a column, a run's breakdown value selected from it) equals the direct
 * answer with the same breakdown variable: values present and absent, the null value, no value (the
 * insight's own answer, its `Other` and hasMore), `breakdown_hide_other_aggregation`.
 */
import t from 'tap';
import { insertDataset } from '../helpers/materialize-dataset.ts';
import {
  directRun,
  materialize,
  materializeStore,
  sameAnswer,
  servedRun,
  sqlVersion,
} from '../helpers/materialize.ts';

const { store, engine } = await materializeStore(t);
await insertDataset(store);
const NOW = new Date('2024-06-10T12:00:00Z');
const RANGE = { date_from: '2024-04-01', date_to: '2024-04-21' };
const BROWSER = { breakdown: '$browser', breakdown_type: 'event' };
/** Runs of an insight broken down by `$browser`: no variable, each value, an absent one, the null value. */
const BY_BROWSER: Record<string, unknown>[] = [
  {},
  { $browser: 'Chrome' },
  { $browser: 'Safari' },
  { $browser: 'Édge' },
  { $browser: 'Opera' },
  { $browser: '' },
  { $browser: null },
];

interface Case {
  readonly name: string;
  readonly query: Record<string, unknown>;
  readonly runs: readonly Record<string, unknown>[];
}

const pageviews = { kind: 'EventsNode', event: '$pageview' };
const CASES: Case[] = [
  {
    name: 'trends by browser, the limit below the values (Other)',
    query: {
      kind: 'TrendsQuery',
      series: [pageviews],
      dateRange: RANGE,
      breakdownFilter: { ...BROWSER, breakdown_limit: 2 },
    },
    runs: BY_BROWSER,
  },
  {
    name: 'trends, distinct persons and a sum, weekly, Other hidden',
    query: {
      kind: 'TrendsQuery',
      interval: 'week',
      series: [
        { ...pageviews, math: 'dau' },
        { kind: 'EventsNode', event: 'purchase', math: 'sum', math_property: 'amount' },
      ],
      dateRange: RANGE,
      breakdownFilter: { ...BROWSER, breakdown_limit: 2, breakdown_hide_other_aggregation: true },
    },
    runs: BY_BROWSER,
  },
  {
    name: 'trends total value (BoldNumber) by browser',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'purchase' }],
      trendsFilter: { display: 'BoldNumber' },
      dateRange: RANGE,
      breakdownFilter: BROWSER,
    },
    runs: BY_BROWSER,
  },
  {
    name: 'trends without a breakdown (no variables)',
    query: {
      kind: 'TrendsQuery',
      interval: 'hour',
      series: [pageviews],
      dateRange: { date_from: '2024-04-10', date_to: '2024-04-11' },
    },
    runs: [{}],
  },
  {
    name: 'trends with two breakdowns (no variables)',
    query: {
      kind: 'TrendsQuery',
      series: [pageviews],
      dateRange: RANGE,
      breakdownFilter: {
        breakdowns: [
          { property: '$browser', type: 'event' },
          { property: 'qty', type: 'event' },
        ],
      },
    },
    runs: [{}],
  },
  {
    name: 'funnel by browser',
    query: {
      kind: 'FunnelsQuery',
      series: [pageviews, { kind: 'EventsNode', event: 'purchase' }],
      dateRange: RANGE,
      breakdownFilter: { ...BROWSER, breakdown_limit: 2 },
    },
    runs: BY_BROWSER,
  },
  {
    name: 'retention by browser, weekly',
    query: {
      kind: 'RetentionQuery',
      retentionFilter: {
        period: 'Week',
        totalIntervals: 4,
        targetEntity: { id: '$pageview', type: 'events' },
        returningEntity: { id: 'purchase', type: 'events' },
      },
      dateRange: { date_from: '2024-03-03', date_to: '2024-04-27' },
      breakdownFilter: BROWSER,
    },
    runs: BY_BROWSER,
  },
];

for (const c of CASES) {
  t.test(c.name, async (t) => {
    const version = sqlVersion(c.query);
    const m = await materialize(store, engine, version, { now: NOW });
    let withRows = 0;
    for (const variables of c.runs) {
      const served = servedRun(m, variables);
      const direct = await directRun(store, version, variables, { now: NOW });
      if (direct.rows.length > 0) withRows++;
      if (!sameAnswer(served, direct)) {
        t.same(served, direct, JSON.stringify(variables));
        return;
      }
    }
    t.ok(withRows > 0, `${c.runs.length} runs equal the direct answer (${withRows} with rows)`);
  });
}

t.test('a materialized insight refuses date_from / date_to', async (t) => {
  const version = sqlVersion(CASES[0]!.query);
  const m = await materialize(store, engine, version, { now: NOW });
  t.throws(() => servedRun(m, { date_from: '2024-04-02' }), { code: 'date_variables_unavailable' });
});
