/**
 * TrendsQuery (SPEC §4): how often events happen, or how many persons, sessions or groups do them, per
 * interval of a date range (or over the whole range with a total-value display), for one or more series,
 * broken down by up to three properties. This file reads and checks the query; trends-compile.ts makes the
 * dialect query. docs/insights-trends.md lists every field and the decisions taken.
 */
import { BASE_FIELDS, BASE_IGNORED, readBase, readEventsNode } from './common.ts';
import { INTERVALS, resolveRange } from './date-range.ts';
import type { InsightKindSpec } from './kind.ts';
import { invalidInsight, ObjectReader } from './reader.ts';
import { readCompareFilter } from './trends-compare.ts';
import { parseFormula, type Formula } from './trends-formula.ts';
import { compileTrends } from './trends-compile.ts';
import { DISPLAYS, type CheckedTrends, type Display } from './trends-types.ts';

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
  const { display, formulas } = readTrendsFilter(q.object('trendsFilter'), series.length);
  const compare = readCompareFilter(q.object('compareFilter'), base.dateRange.dateFrom);
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
    formulas,
    compare,
  };
}

function readTrendsFilter(
  f: ObjectReader | undefined,
  seriesCount: number,
): { display: Display; formulas: Formula[] } {
  if (!f) return { display: 'ActionsLineGraph', formulas: [] };
  f.only(['display', 'formula', 'formulas', 'formulaNodes', 'smoothingIntervals'], TRENDS_FILTER_IGNORED);
  f.only1('smoothingIntervals', [1], 'Weir does not smooth; each interval has its own value.');
  return {
    display: f.oneOf('display', DISPLAYS, 'ActionsLineGraph'),
    formulas: readFormulas(f, seriesCount),
  };
}

/** `formulaNodes` (`{formula, custom_name}`), else `formulas` (strings), else the older `formula`. */
function readFormulas(f: ObjectReader, seriesCount: number): Formula[] {
  const given: { text: string; customName: string | null; path: string }[] = [];
  const nodes = f.array('formulaNodes');
  const texts = f.array('formulas');
  const single = f.string('formula');
  const sources = [nodes.length > 0, texts.length > 0, single !== undefined && single !== ''];
  if (sources.filter(Boolean).length > 1) {
    throw invalidInsight(f.at('formulaNodes'), "Give one of 'formulaNodes', 'formulas' and 'formula'.");
  }
  for (const { value, path } of nodes) {
    const n = ObjectReader.of(value, path, 'an object: {"formula": "A+B", "custom_name": "…"}');
    n.only(['formula', 'custom_name']);
    given.push({
      text: n.requiredString('formula'),
      customName: n.string('custom_name') ?? null,
      path: n.at('formula'),
    });
  }
  for (const { value, path } of texts) {
    if (typeof value !== 'string')
      throw invalidInsight(path, `'${path}' must be a formula string, like "A+2*B".`);
    given.push({ text: value, customName: null, path });
  }
  if (single) given.push({ text: single, customName: null, path: f.at('formula') });
  return given.map(({ text, customName, path }) => {
    const parsed = parseFormula(text, seriesCount);
    if (typeof parsed === 'string') {
      throw invalidInsight(path, `'${path}' is not a formula Weir can compute: ${parsed}.`);
    }
    return { text, label: customName || `Formula (${text})` };
  });
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
