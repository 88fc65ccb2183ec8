/**
 * TrendsQuery (SPEC §4): how often events happen, or how many persons, sessions or groups do them, per
 * interval of a date range (or over the whole range with a total-value display), for one or more series,
 * broken down by up to three properties. This file reads and checks the query; trends-compile.ts makes the
 * dialect query. docs/insights-trends.md lists every field and the decisions taken.
 */
import { BASE_FIELDS, BASE_IGNORED, readBase, readEventsNode, type EventsNode } from './common.ts';
import { INTERVALS, resolveRange, type Interval } from './date-range.ts';
import type { CheckedInsight, InsightKindSpec } from './kind.ts';
import { invalidInsight, type ObjectReader } from './reader.ts';
import { compileTrends } from './trends-compile.ts';

/** PostHog's `ChartDisplayType`. */
export const DISPLAYS = [
  'ActionsLineGraph',
  'ActionsBar',
  'ActionsUnstackedBar',
  'ActionsStackedBar',
  'ActionsAreaGraph',
  'ActionsLineGraphCumulative',
  'BoldNumber',
  'ActionsPie',
  'ActionsBarValue',
  'ActionsTable',
  'WorldMap',
] as const;
export type Display = (typeof DISPLAYS)[number];

/** Displays of one number per series × breakdown value (PostHog's NON_TIME_SERIES_DISPLAY_TYPES). */
const TOTAL_VALUE_DISPLAYS: readonly Display[] = [
  'BoldNumber',
  'ActionsPie',
  'ActionsBarValue',
  'ActionsTable',
  'WorldMap',
];

/** trendsFilter fields that only change how PostHog draws the chart: taken and ignored. */
export const TRENDS_FILTER_IGNORED = [
  'showLegend',
  'showValuesOnSeries',
  'showLabelsOnSeries',
  'showPercentStackView',
  'showMultipleYAxes',
  'showAlertThresholdLines',
  'showTrendLines',
  'showConfidenceIntervals',
  'confidenceLevel',
  'showMovingAverage',
  'movingAverageIntervals',
  'decimalPlaces',
  'minDecimalPlaces',
  'aggregationAxisFormat',
  'aggregationAxisPrefix',
  'aggregationAxisPostfix',
  'hiddenLegendIndexes',
  'hiddenLegendBreakdowns',
  'resultCustomizations',
  'resultCustomizationBy',
  'goalLines',
  'yAxisScaleType',
  'detailedResultsAggregationType',
  'breakdown_histogram_bin_count',
];

export interface CheckedTrends extends CheckedInsight {
  readonly series: readonly EventsNode[];
  /** @default 'day' */
  readonly interval: Interval;
  /** @default 'ActionsLineGraph' */
  readonly display: Display;
  /** One value per series × breakdown value over the whole range, no `date` (a total-value display). */
  readonly totalValue: boolean;
  /** Each interval's value is the running sum up to it (ActionsLineGraphCumulative). */
  readonly cumulative: boolean;
}

/** Maths whose running sum is a meaningful total (a count or a sum of values). */
const CUMULATIVE_MATHS: readonly string[] = ['total', 'sum'];

function readTrends(q: ObjectReader): CheckedTrends {
  q.only(
    [...BASE_FIELDS, 'series', 'interval', 'trendsFilter', 'compareFilter'],
    [...BASE_IGNORED, 'aggregation_group_type_index'],
  );
  q.only1(
    'aggregation_group_type_index',
    [],
    'Weir counts persons; use math "unique_group" with "math_group_type_index" to count groups.',
  );
  const base = readBase(q);
  const items = q.array('series');
  if (items.length === 0) {
    throw invalidInsight(q.at('series'), "'query.series' needs at least one EventsNode.");
  }
  if (items.length > 26) throw invalidInsight(q.at('series'), 'At most 26 series are supported.');
  const series = items.map(({ value, path }) => readEventsNode(value, path));
  const interval = q.oneOf('interval', INTERVALS, 'day');
  const display = readTrendsFilter(q.object('trendsFilter'));
  readCompareFilter(q.object('compareFilter'));
  const cumulative = display === 'ActionsLineGraphCumulative';
  if (cumulative) {
    series.forEach((s, i) => {
      if (!CUMULATIVE_MATHS.includes(s.math)) {
        throw invalidInsight(
          `query.series[${i}].math`,
          `The cumulative display adds up each interval's value; math '${s.math}' does not add up (it supports ${CUMULATIVE_MATHS.join(', ')}).`,
        );
      }
    });
  }
  return {
    base,
    series,
    interval,
    display,
    totalValue: TOTAL_VALUE_DISPLAYS.includes(display),
    cumulative,
  };
}

function readTrendsFilter(f: ObjectReader | undefined): Display {
  if (!f) return 'ActionsLineGraph';
  f.only(['display', 'formula', 'formulas', 'formulaNodes', 'smoothingIntervals'], TRENDS_FILTER_IGNORED);
  const empty = (v: unknown): boolean =>
    v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
  for (const name of ['formula', 'formulas', 'formulaNodes']) {
    if (!empty(f.raw(name))) {
      throw invalidInsight(
        f.at(name),
        `'${f.at(name)}': formulas are not supported by Weir; each series is answered on its own rows.`,
      );
    }
  }
  f.only1('smoothingIntervals', [1], 'Weir does not smooth; each interval has its own value.');
  return f.oneOf('display', DISPLAYS, 'ActionsLineGraph');
}

function readCompareFilter(f: ObjectReader | undefined): void {
  if (!f) return;
  f.only(['compare', 'compare_to']);
  if (f.boolean('compare', false)) {
    throw invalidInsight(
      f.at('compare'),
      `'${f.at('compare')}' = true is not supported: Weir answers the range itself, not a previous period.`,
    );
  }
  // compare_to without compare changes nothing (PostHog's rule), so it is taken.
  f.string('compare_to');
}

export const trends: InsightKindSpec<CheckedTrends> = {
  kind: 'TrendsQuery',
  read: readTrends,
  range(q, overrides, now) {
    const range = q.base.dateRange;
    const written = {
      dateFrom: overrides.dateFrom ?? range.dateFrom,
      dateTo: overrides.dateTo ?? range.dateTo,
      explicitDate: range.explicitDate,
    };
    if (!q.totalValue) return resolveRange(written, { interval: q.interval, now });
    // A total value has no intervals to keep whole: it ends with its day (PostHog's day interval), and
    // starts at the start of its hour, so `-6h` is the last six hours, not the whole of yesterday too.
    return {
      from: resolveRange(written, { interval: 'hour', now }).from,
      to: resolveRange(written, { interval: 'day', now }).to,
    };
  },
  compile: compileTrends,
};
