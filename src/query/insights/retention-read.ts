/**
 * Reading a RetentionQuery (SPEC §4, PostHog's `RetentionQuery` / `RetentionFilter` / `RetentionEntity`):
 * every field Weir computes is checked into `CheckedRetention`; fields that only change how PostHog draws
 * the table are taken and ignored; fields that would change the counts in a way Weir does not compute are
 * refused with the reason, never silently dropped.
 */
import {
  BASE_FIELDS,
  BASE_IGNORED,
  type InsightBase,
  type PropertyFilter,
  readBase,
  readProperties,
} from './common.ts';
import type { Interval } from './date-range.ts';
import type { CheckedInsight } from './kind.ts';
import { ObjectReader, invalidInsight } from './reader.ts';

export const RETENTION_PERIODS = ['Hour', 'Day', 'Week', 'Month'] as const;
export const RETENTION_TYPES = [
  'retention_recurring',
  'retention_first_time',
  'retention_first_ever_occurrence',
] as const;
export type RetentionType = (typeof RETENTION_TYPES)[number];

/**
 * The most periods a cohort row has. Its answer has up to n(n+1)/2 rows for the default range: 300 keeps
 * that (45,150) under a run's 50,000-row limit.
 */
export const MAX_TOTAL_INTERVALS = 300;
/** @default 8 (PostHog's current schema). */
export const DEFAULT_TOTAL_INTERVALS = 8;

/** A target or returning entity: one event (null: any event) and the filters its events must match. */
export interface RetentionEntity {
  readonly event: string | null;
  readonly properties: readonly PropertyFilter[];
}

export interface CheckedRetention extends CheckedInsight {
  readonly base: InsightBase;
  readonly interval: Interval;
  readonly totalIntervals: number;
  readonly target: RetentionEntity;
  readonly returning: RetentionEntity;
  readonly type: RetentionType;
  /** A period k ≥ 1 counts an actor who did the returning event at least this many times in it. @default 1 */
  readonly minimumOccurrences: number;
  /** An actor who returned in period k counts in every period 0…k. @default false */
  readonly cumulative: boolean;
}

/** Fields of `retentionFilter` that only change how PostHog draws the table. */
const FILTER_IGNORED = [
  'display',
  'dashboardDisplay',
  'retentionReference',
  'meanRetentionCalculation',
  'showMean',
  'showTrendLines',
  'selectedInterval',
  'cohortLabelStartIndex',
];

const DEFAULT_ENTITY: RetentionEntity = { event: '$pageview', properties: [] };

export function readRetention(q: ObjectReader): CheckedRetention {
  q.only([...BASE_FIELDS, 'retentionFilter', 'aggregation_group_type_index'], BASE_IGNORED);
  q.only1(
    'aggregation_group_type_index',
    [],
    'Weir counts persons in a retention; aggregating by group is not supported.',
  );
  const base = readBase(q);
  const breakdowns = base.breakdown?.breakdowns ?? [];
  if (breakdowns.length > 1) {
    throw invalidInsight(
      'query.breakdownFilter.breakdowns',
      'A retention takes one breakdown at most (as PostHog does); give one property.',
    );
  }
  const f = q.object('retentionFilter') ?? ObjectReader.of({}, q.at('retentionFilter'));
  f.only(
    [
      'period',
      'totalIntervals',
      'targetEntity',
      'returningEntity',
      'retentionType',
      'minimumOccurrences',
      'cumulative',
      'timeWindowMode',
      'retentionCustomBrackets',
      'aggregationType',
      'aggregationProperty',
      'aggregationPropertyType',
    ],
    FILTER_IGNORED,
  );
  f.only1(
    'timeWindowMode',
    ['strict_calendar_dates'],
    'Weir counts calendar periods (strict_calendar_dates); 24-hour windows from each event are not supported.',
  );
  f.only1(
    'aggregationType',
    ['count'],
    'Weir counts actors in a retention (count); sums and averages of a property are not supported.',
  );
  f.only1('aggregationProperty', [], 'Weir counts actors; a property to aggregate is not supported.');
  f.only1('aggregationPropertyType', [], 'Weir counts actors; a property to aggregate is not supported.');
  const brackets = f.raw('retentionCustomBrackets');
  if (brackets !== undefined && brackets !== null && !(Array.isArray(brackets) && brackets.length === 0)) {
    throw invalidInsight(
      f.at('retentionCustomBrackets'),
      `'${f.at('retentionCustomBrackets')}' is not supported: Weir's periods are one interval each.`,
    );
  }
  const period = f.oneOf('period', RETENTION_PERIODS, 'Day');
  return {
    base,
    interval: period.toLowerCase() as Interval,
    totalIntervals: f.integer('totalIntervals', 1, MAX_TOTAL_INTERVALS, DEFAULT_TOTAL_INTERVALS),
    target: readEntity(f.object('targetEntity')),
    returning: readEntity(f.object('returningEntity')),
    type: f.oneOf('retentionType', RETENTION_TYPES, 'retention_recurring'),
    minimumOccurrences: f.integer('minimumOccurrences', 1, 1_000_000, 1),
    cumulative: f.boolean('cumulative', false),
  };
}

/** A `RetentionEntity`: `{id: <event name>, type: "events"}`; null or absent `id` is any event. */
function readEntity(r: ObjectReader | undefined): RetentionEntity {
  if (!r) return DEFAULT_ENTITY;
  r.only(['id', 'type', 'kind', 'properties'], ['name', 'custom_name', 'order', 'uuid']);
  r.oneOf('type', ['events'] as const, 'events');
  r.oneOf('kind', ['EventsNode'] as const, 'EventsNode');
  const id = r.raw('id');
  if (id !== undefined && id !== null && (typeof id !== 'string' || id.trim() === '')) {
    throw invalidInsight(
      r.at('id'),
      `'${r.at('id')}' is the event's name, a non-empty string (Weir has no actions); null means any event.`,
    );
  }
  return { event: typeof id === 'string' ? id : null, properties: readProperties(r, 'properties') };
}
