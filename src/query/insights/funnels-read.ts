/**
 * Reading a FunnelsQuery (SPEC §4 "Funnels", PostHog's `FunnelsQuery` / `FunnelsFilter`): the steps, the
 * conversion window, the order type, breakdown attribution and exclusions, checked as PostHog checks them
 * (reference §2.3) so a funnel that PostHog refuses is refused at create time with the same reason.
 */
import {
  BASE_FIELDS,
  BASE_IGNORED,
  readBase,
  readEventsNode,
  type EventsNode,
  type PropertyFilter,
} from './common.ts';
import type { CheckedInsight } from './kind.ts';
import { ObjectReader, invalidInsight } from './reader.ts';

export const ORDER_TYPES = ['ordered', 'strict', 'unordered'] as const;
export type FunnelOrder = (typeof ORDER_TYPES)[number];

export const ATTRIBUTIONS = ['first_touch', 'last_touch', 'all_events', 'step'] as const;
export type Attribution = (typeof ATTRIBUTIONS)[number];

/** Seconds in one `funnelWindowIntervalUnit` (PostHog's DATERANGE_MAP: a month is 31 days). */
export const WINDOW_UNITS = {
  second: 1,
  minute: 60,
  hour: 3_600,
  day: 86_400,
  week: 7 * 86_400,
  month: 31 * 86_400,
} as const;
export type WindowUnit = keyof typeof WINDOW_UNITS;

export const MIN_STEPS = 2;
export const MAX_STEPS = 20;

export interface FunnelExclusion {
  readonly node: EventsNode;
  /** 0-based: an attempt that reached this step… */
  readonly fromStep: number;
  /** …and has not yet reached this one is spoiled by the exclusion's event. */
  readonly toStep: number;
}

export interface CheckedFunnels extends CheckedInsight {
  readonly steps: readonly EventsNode[];
  /** The conversion window in seconds, from the step-1 event, inclusive. */
  readonly windowSeconds: number;
  readonly order: FunnelOrder;
  readonly attribution: Attribution;
  /** 0-based step whose event gives the breakdown value (attribution `step`). */
  readonly attributionStep: number;
  readonly exclusions: readonly FunnelExclusion[];
}

/** Query fields that only PostHog's funnel trends / time-to-convert views or its UI read. */
const QUERY_IGNORED = ['interval'];

/** FunnelsFilter fields that only change how PostHog draws the steps (or belong to other views). */
const FILTER_IGNORED = [
  'layout',
  'funnelStepReference',
  'binCount',
  'breakdownSorting',
  'hiddenLegendBreakdowns',
  'hideIncompleteConversionWindowPeriods',
  'resultCustomizations',
  'showValuesOnSeries',
  'funnelFromStep',
  'funnelToStep',
  'useUdf',
  'goalLines',
];

export function readFunnels(q: ObjectReader): CheckedFunnels {
  q.only(
    [...BASE_FIELDS, 'series', 'funnelsFilter', 'aggregation_group_type_index'],
    [...BASE_IGNORED, ...QUERY_IGNORED],
  );
  q.only1('aggregation_group_type_index', [], 'Weir funnels count persons; group funnels are not built.');
  const base = readBase(q);
  if (base.breakdown && base.breakdown.breakdowns.length > 1) {
    throw invalidInsight(
      q.at('breakdownFilter.breakdowns'),
      'A funnel takes one breakdown; several breakdowns are not supported.',
    );
  }
  const series = q.array('series');
  if (series.length < MIN_STEPS || series.length > MAX_STEPS) {
    throw invalidInsight(
      q.at('series'),
      `A funnel has ${MIN_STEPS} to ${MAX_STEPS} steps (series); got ${series.length}.`,
    );
  }
  const steps = series.map(({ value, path }) => readEventsNode(value, path, ['total']));
  const f = q.object('funnelsFilter');
  return { base, steps, ...readFilter(f, steps) };
}

function readFilter(
  f: ObjectReader | undefined,
  steps: readonly EventsNode[],
): Omit<CheckedFunnels, 'base' | 'steps'> {
  if (!f) {
    return {
      windowSeconds: 14 * WINDOW_UNITS.day,
      order: 'ordered',
      attribution: 'first_touch',
      attributionStep: 0,
      exclusions: [],
    };
  }
  f.only(
    [
      'funnelWindowInterval',
      'funnelWindowIntervalUnit',
      'funnelOrderType',
      'breakdownAttributionType',
      'breakdownAttributionValue',
      'exclusions',
      'funnelVizType',
      'funnelAggregateByHogQL',
    ],
    FILTER_IGNORED,
  );
  f.only1(
    'funnelVizType',
    ['steps'],
    "Weir answers the steps view only ('steps'); 'trends' and 'time_to_convert' are not built.",
  );
  f.only1('funnelAggregateByHogQL', ['person_id'], 'Weir funnels count persons (person_id).');
  const interval = f.integer('funnelWindowInterval', 1, 100_000, 14);
  const unit = f.oneOf('funnelWindowIntervalUnit', Object.keys(WINDOW_UNITS) as WindowUnit[], 'day');
  const order = f.oneOf('funnelOrderType', ORDER_TYPES, 'ordered');
  const attribution = f.oneOf('breakdownAttributionType', ATTRIBUTIONS, 'first_touch');
  const attributionStep =
    attribution === 'step' ? f.integer('breakdownAttributionValue', 0, steps.length - 1, 0) : 0;
  if (order === 'unordered' && attribution === 'step' && attributionStep !== 0) {
    throw invalidInsight(
      f.at('breakdownAttributionValue'),
      'Only the first step can be used for breakdown attribution in unordered funnels.',
    );
  }
  const exclusions = f
    .array('exclusions')
    .map(({ value, path: at }) => readExclusion(value, at, steps, order));
  return { windowSeconds: interval * WINDOW_UNITS[unit], order, attribution, attributionStep, exclusions };
}

function readExclusion(
  value: unknown,
  path: string,
  steps: readonly EventsNode[],
  order: FunnelOrder,
): FunnelExclusion {
  const r = ObjectReader.of(value, path, 'an exclusion: an EventsNode with funnelFromStep and funnelToStep');
  const last = steps.length - 1;
  const fromStep = r.integer('funnelFromStep', 0, last, 0);
  const toStep = r.integer('funnelToStep', 0, last, last);
  // The node's own fields are read as any EventsNode's; the step range is the exclusion's.
  const nodeFields = Object.fromEntries(
    Object.entries(r.value).filter(([k]) => k !== 'funnelFromStep' && k !== 'funnelToStep'),
  );
  const node = readEventsNode(nodeFields, path, ['total']);
  if (fromStep >= toStep) {
    throw invalidInsight(
      r.at('funnelToStep'),
      'Exclusion event range is invalid. End of range should be greater than start.',
    );
  }
  if (order === 'unordered' && (fromStep !== 0 || toStep !== last)) {
    throw invalidInsight(
      r.at('funnelFromStep'),
      `Partial Exclusions not allowed in unordered funnels: an exclusion spans steps 0 to ${last}.`,
    );
  }
  for (const step of steps.slice(fromStep, toStep + 1)) {
    if (matchesAllOf(step, node)) {
      throw invalidInsight(path, "Exclusion steps cannot contain an event that's part of funnel steps.");
    }
  }
  return { node, fromStep, toStep };
}

function filterKey(f: PropertyFilter): string {
  return JSON.stringify([f.type, f.key, f.operator, f.value]);
}

/**
 * Whether `wide` matches every event `narrow` matches, as PostHog's `is_equal || is_superset` decides it: the
 * same event, and `wide`'s filters a sub-multiset of `narrow`'s.
 */
export function matchesAllOf(wide: EventsNode, narrow: EventsNode): boolean {
  if (wide.event !== narrow.event) return false;
  const left = narrow.properties.map(filterKey);
  for (const key of wide.properties.map(filterKey)) {
    const i = left.indexOf(key);
    if (i < 0) return false;
    left.splice(i, 1);
  }
  return true;
}
