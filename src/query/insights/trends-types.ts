/**
 * The checked form of a TrendsQuery, apart from trends.ts (which reads it) so that the compile pieces can
 * name it without importing the reader that imports them.
 */
import type { EventsNode } from './common.ts';
import type { Interval } from './date-range.ts';
import type { CheckedInsight } from './kind.ts';
import type { Compare } from './trends-compare.ts';
import type { Formula } from './trends-formula.ts';

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
  /** When given, the answer is these formulas' rows instead of the series'. */
  readonly formulas: readonly Formula[];
  /** Also answer an earlier period (`compare_label`): null when not comparing. */
  readonly compare: Compare | null;
}
