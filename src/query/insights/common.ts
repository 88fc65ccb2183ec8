/**
 * The parts the three insight kinds share (SPEC §4 "Insight endpoints", PostHog's `InsightsQueryBase`): the
 * date range, property filters, series nodes and the breakdown, read and checked into plain objects that
 * the kinds compile. Reading is strict: see reader.ts.
 */
import { ObjectReader, invalidInsight } from './reader.ts';
import { parseRelativeOrAbsolute } from './date-range.ts';

export const PROPERTY_OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
] as const;
export type PropertyOperator = (typeof PROPERTY_OPERATORS)[number];

export type PropertyType = 'event' | 'person';
export const PROPERTY_TYPES: readonly PropertyType[] = ['event', 'person'];

export type FilterValue = string | number | boolean;

export interface PropertyFilter {
  readonly key: string;
  readonly type: PropertyType;
  readonly operator: PropertyOperator;
  /** One value, or several for `exact` / `is_not` (any of / none of); null for is_set / is_not_set. */
  readonly value: FilterValue | readonly FilterValue[] | null;
}

export interface DateRange {
  /** As written: `-7d`, `2026-01-01`, `all`, … (null: the default `-7d`). */
  readonly dateFrom: string | null;
  /** As written; null: now. */
  readonly dateTo: string | null;
  readonly explicitDate: boolean;
}

export interface Breakdown {
  readonly property: string;
  readonly type: PropertyType;
}

export interface BreakdownSpec {
  /** One or more (several: `breakdowns`). */
  readonly breakdowns: readonly Breakdown[];
  /** Values kept, ranked by their total; the rest are summed into `Other`. @default 25 */
  readonly limit: number;
  /** Leave out the `Other` rows (hasMore still says they exist). */
  readonly hideOther: boolean;
}

/** Fields every insight kind takes (`InsightsQueryBase`), read by `readBase`. */
export const BASE_FIELDS = ['kind', 'dateRange', 'properties', 'filterTestAccounts', 'breakdownFilter'];
/** Base fields taken and ignored: they change nothing Weir computes. */
export const BASE_IGNORED = ['dataColorTheme', 'tags', 'modifiers', 'response', 'version', 'samplingFactor'];

export interface InsightBase {
  readonly dateRange: DateRange;
  readonly properties: readonly PropertyFilter[];
  readonly breakdown: BreakdownSpec | null;
}

export const MAX_BREAKDOWN_LIMIT = 10_000;

export function readBase(q: ObjectReader): InsightBase {
  q.only1(
    'filterTestAccounts',
    [false],
    'Weir has no test-account filters; leave it out or set it to false.',
  );
  q.only1('samplingFactor', [1], 'Weir does not sample; every event counts.');
  return {
    dateRange: readDateRange(q.object('dateRange')),
    properties: readProperties(q, 'properties'),
    breakdown: readBreakdownFilter(q.object('breakdownFilter')),
  };
}

export function readDateRange(r: ObjectReader | undefined): DateRange {
  if (!r) return { dateFrom: null, dateTo: null, explicitDate: false };
  r.only(['date_from', 'date_to', 'explicitDate']);
  const dateFrom = r.string('date_from') ?? null;
  const dateTo = r.string('date_to') ?? null;
  for (const [name, value] of [
    ['date_from', dateFrom],
    ['date_to', dateTo],
  ] as const) {
    if (value === null) continue;
    if (name === 'date_to' && value === 'all') {
      throw invalidInsight(r.at(name), `'all' is a start, not an end: leave '${r.at(name)}' out for now.`);
    }
    if (!parseRelativeOrAbsolute(value)) {
      throw invalidInsight(
        r.at(name),
        `'${r.at(name)}' is ${JSON.stringify(value).slice(0, 64)}; it takes a date (YYYY-MM-DD), an ISO date and time, 'all' (date_from), or a relative date: -Nh, -Nd, -Nw, -Nm, -Ny, dStart, mStart, yStart.`,
      );
    }
  }
  return { dateFrom, dateTo, explicitDate: r.boolean('explicitDate', false) };
}

/** `properties` of a query or a series node: a list of filters (or PostHog's AND group of them). */
export function readProperties(owner: ObjectReader, name: string): PropertyFilter[] {
  const raw = owner.raw(name);
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return readPropertyGroup(ObjectReader.of(raw, owner.at(name)));
  return owner.array(name).map(({ value, path }) => readFilter(ObjectReader.of(value, path)));
}

/** `{type: "AND", values: [{type: "AND", values: [filters]}]}`: all ANDed. OR is not supported. */
function readPropertyGroup(g: ObjectReader): PropertyFilter[] {
  g.only(['type', 'values']);
  g.oneOf('type', ['AND'] as const, 'AND');
  const out: PropertyFilter[] = [];
  for (const { value, path } of g.array('values')) {
    const item = ObjectReader.of(value, path);
    if (item.has('values')) out.push(...readPropertyGroup(item));
    else out.push(readFilter(item));
  }
  return out;
}

function readFilter(f: ObjectReader): PropertyFilter {
  f.only(['key', 'value', 'operator', 'type'], ['label']);
  const key = f.requiredString('key');
  const type = f.oneOf('type', PROPERTY_TYPES, 'event');
  const operator = f.oneOf('operator', PROPERTY_OPERATORS, 'exact');
  const raw = f.raw('value');
  if (operator === 'is_set' || operator === 'is_not_set') return { key, type, operator, value: null };
  const scalar = (v: unknown): v is FilterValue =>
    typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
  if (Array.isArray(raw)) {
    if (operator !== 'exact' && operator !== 'is_not') {
      throw invalidInsight(
        f.at('value'),
        `A list of values is taken by 'exact' and 'is_not' only, not by '${operator}'.`,
      );
    }
    if (raw.length === 0 || !raw.every(scalar)) {
      throw invalidInsight(
        f.at('value'),
        `'${f.at('value')}' must be a non-empty list of strings, numbers or booleans.`,
      );
    }
    return { key, type, operator, value: raw };
  }
  if (!scalar(raw)) {
    throw invalidInsight(
      f.at('value'),
      `'${f.at('value')}' must be a string, a number or a boolean for '${operator}'.`,
    );
  }
  if (
    (operator === 'gt' || operator === 'gte' || operator === 'lt' || operator === 'lte') &&
    !Number.isFinite(Number(raw))
  ) {
    throw invalidInsight(
      f.at('value'),
      `'${operator}' compares numbers; ${JSON.stringify(raw).slice(0, 64)} is not one.`,
    );
  }
  if (
    (operator === 'is_date_before' || operator === 'is_date_after') &&
    (typeof raw !== 'string' || !parseRelativeOrAbsolute(raw))
  ) {
    throw invalidInsight(
      f.at('value'),
      `'${operator}' takes a date (YYYY-MM-DD), an ISO date and time, or a relative date like -7d.`,
    );
  }
  if ((operator === 'regex' || operator === 'not_regex') && typeof raw === 'string')
    checkRegex(f.at('value'), raw);
  return { key, type, operator, value: raw };
}

/** A regex ClickHouse's RE2 would refuse at run time is refused now, with the reason. */
function checkRegex(attr: string, pattern: string): void {
  try {
    new RegExp(pattern, 'u');
  } catch (err) {
    throw invalidInsight(attr, `Not a valid regular expression: ${(err as Error).message}.`);
  }
}

export function readBreakdownFilter(b: ObjectReader | undefined): BreakdownSpec | null {
  if (!b) return null;
  b.only(
    ['breakdown', 'breakdown_type', 'breakdowns', 'breakdown_limit', 'breakdown_hide_other_aggregation'],
    ['breakdown_normalize_url', 'breakdown_histogram_bin_count', 'breakdown_group_type_index'],
  );
  const limit = b.integer('breakdown_limit', 1, MAX_BREAKDOWN_LIMIT, 25);
  const hideOther = b.boolean('breakdown_hide_other_aggregation', false);
  const breakdowns: Breakdown[] = [];
  if (b.has('breakdown')) {
    const raw = b.raw('breakdown');
    if (typeof raw !== 'string' || raw.trim() === '') {
      throw invalidInsight(
        b.at('breakdown'),
        `'${b.at('breakdown')}' is the property to break down by, a non-empty string.`,
      );
    }
    breakdowns.push({ property: raw, type: b.oneOf('breakdown_type', PROPERTY_TYPES, 'event') });
  } else if (b.has('breakdown_type')) {
    b.oneOf('breakdown_type', PROPERTY_TYPES);
  }
  const list = b.array('breakdowns');
  if (list.length > 0 && breakdowns.length > 0) {
    throw invalidInsight(b.at('breakdowns'), "Give either 'breakdown' or 'breakdowns', not both.");
  }
  for (const { value, path } of list) {
    const item = ObjectReader.of(value, path);
    item.only(['property', 'type'], ['normalize_url', 'histogram_bin_count', 'group_type_index']);
    breakdowns.push({
      property: item.requiredString('property'),
      type: item.oneOf('type', PROPERTY_TYPES, 'event'),
    });
  }
  if (breakdowns.length > 3) throw invalidInsight(b.at('breakdowns'), 'At most 3 breakdowns are supported.');
  if (breakdowns.length === 0) return null;
  return { breakdowns, limit, hideOther };
}

export const BASE_MATHS = [
  'total',
  'dau',
  'weekly_active',
  'monthly_active',
  'unique_session',
  'unique_group',
] as const;
export const PROPERTY_MATHS = ['sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'] as const;
export type PropertyMath = (typeof PROPERTY_MATHS)[number];
export type Math = (typeof BASE_MATHS)[number] | PropertyMath;
export const MATHS: readonly Math[] = [...BASE_MATHS, ...PROPERTY_MATHS];

/** An `EventsNode`: one series of a trend, one step of a funnel. */
export interface EventsNode {
  /** null: all events. */
  readonly event: string | null;
  readonly customName: string | null;
  readonly properties: readonly PropertyFilter[];
  readonly math: Math;
  readonly mathProperty: string | null;
  readonly mathPropertyType: PropertyType;
  readonly mathGroupTypeIndex: number | null;
}

/** Fields of an EventsNode that only name or draw it. */
const NODE_IGNORED = ['name', 'limit', 'orderBy', 'fixedProperties', 'response', 'version'];

/**
 * Reads an EventsNode. `maths`: the math values this place takes (funnels and retention take none but
 * `total`, their default).
 */
export function readEventsNode(value: unknown, path: string, maths: readonly Math[] = MATHS): EventsNode {
  const n = ObjectReader.of(
    value,
    path,
    'an EventsNode object: {"kind": "EventsNode", "event": "$pageview"}',
  );
  n.only(
    [
      'kind',
      'event',
      'custom_name',
      'properties',
      'math',
      'math_property',
      'math_property_type',
      'math_group_type_index',
    ],
    NODE_IGNORED,
  );
  n.oneOf('kind', ['EventsNode'] as const, 'EventsNode');
  if (n.raw('event') !== null && n.raw('event') !== undefined) n.requiredString('event');
  const event = n.string('event') ?? null;
  const math = n.oneOf('math', maths, 'total');
  const mathProperty = n.string('math_property') ?? null;
  if ((PROPERTY_MATHS as readonly string[]).includes(math)) {
    if (mathProperty === null || mathProperty.trim() === '') {
      throw invalidInsight(
        n.at('math_property'),
        `math '${math}' needs 'math_property', the property it aggregates.`,
      );
    }
  }
  const typeName = n.oneOf(
    'math_property_type',
    ['event_properties', 'person_properties'] as const,
    'event_properties',
  );
  const mathGroupTypeIndex = n.integer('math_group_type_index', 0, 4) ?? null;
  if (math === 'unique_group' && mathGroupTypeIndex === null) {
    throw invalidInsight(
      n.at('math_group_type_index'),
      "math 'unique_group' needs 'math_group_type_index' (0-4).",
    );
  }
  return {
    event,
    customName: n.string('custom_name') ?? null,
    properties: readProperties(n, 'properties'),
    math,
    mathProperty,
    mathPropertyType: typeName === 'person_properties' ? 'person' : 'event',
    mathGroupTypeIndex,
  };
}
