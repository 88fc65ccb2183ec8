/**
 * What a query can name that the store does not hold as such, with HogQL's meaning: the `sessions` table
 * (derived from events), and the virtual fields of a table that read another one through a join made only
 * when a query uses them — on events `pdi.*`, `person.*` beyond the person-on-events columns, `group_N.*`
 * and `session.*`; on persons `last_seen_at`.
 *
 * Each is written as dialect text over the real tables and resolved by the resolver like any query, so it is
 * confined to the caller's project and deduplicated exactly as a query written by hand would be.
 */
import { parseDialect, type Expr, type Query } from '../dialect/mod.ts';

/** A join added to a query the first time one of its fields is read. */
export interface LazyJoinSpec {
  /** What it is, for messages: "the person of the event's distinct id". */
  readonly description: string;
  /** The joined query, in the dialect. */
  readonly text: string;
  /** The join condition: `owner` is the alias of the table the field is read on, `joined` the join's. */
  readonly on: (owner: string, joined: string) => Expr;
  /** Which property definitions type its `properties` column. */
  readonly properties?: 'person' | 'group';
  /** Virtual fields of the joined table itself (`pdi.person.…`). */
  readonly virtual?: Readonly<Record<string, VirtualField>>;
  /** Columns of the joined table computed by a further join (`pdi.person.last_seen_at`). */
  readonly joinedColumns?: Readonly<Record<string, JoinedColumn>>;
}

/**
 * A virtual field: a lazy join, or (`poe`, and `person` on events) names for columns of the same table, with
 * a join for the names not among them.
 */
export type VirtualField =
  | { readonly kind: 'join'; readonly join: LazyJoinSpec }
  | {
      readonly kind: 'columns';
      /** Field → the table's own column. */
      readonly columns: Readonly<Record<string, string>>;
      /** Where other fields are read; without it they are refused. */
      readonly otherwise?: { readonly field: string; readonly join: LazyJoinSpec };
      readonly hint: string;
    };

const f = (...chain: string[]): Expr => ({ kind: 'field', chain });
const eq = (left: Expr, right: Expr): Expr => ({ kind: 'binary', op: '=', left, right });

/**
 * When each person was last seen: the time of the newest event of any of its distinct ids. Computed when a
 * query reads it, from the events, rather than kept up to date on every event.
 */
const LAST_SEEN: LazyJoinSpec = {
  description: 'when the person was last seen',
  text: `SELECT pdi.person_id AS person_id, max(e.timestamp) AS last_seen_at
    FROM events AS e INNER JOIN person_distinct_ids AS pdi ON e.distinct_id = pdi.distinct_id
    GROUP BY person_id`,
  on: (owner, joined) => eq(f(owner, 'id'), f(joined, 'person_id')),
};

/** A column of a table read through a lazy join (persons' `last_seen_at`). */
export interface JoinedColumn {
  readonly join: LazyJoinSpec;
  /** The column of the join's query. */
  readonly column: string;
}

export const PERSON_JOINED_COLUMNS: Readonly<Record<string, JoinedColumn>> = {
  last_seen_at: { join: LAST_SEEN, column: 'last_seen_at' },
};

// The person a distinct id belongs to now (merged persons followed), as PostHog's `pdi.person` reads it.
const PERSON: LazyJoinSpec = {
  description: 'the person of the distinct id',
  text: 'SELECT id, created_at, properties, is_identified FROM persons',
  on: (owner, joined) => eq(f(owner, 'person_id'), f(joined, 'id')),
  properties: 'person',
  joinedColumns: PERSON_JOINED_COLUMNS,
};

const PDI: LazyJoinSpec = {
  description: "the event's distinct id",
  text: 'SELECT distinct_id, person_id FROM person_distinct_ids',
  on: (owner, joined) => eq(f(owner, 'distinct_id'), f(joined, 'distinct_id')),
  virtual: { person: { kind: 'join', join: PERSON } },
};

const SESSION: LazyJoinSpec = {
  description: "the event's session",
  text: 'SELECT * FROM sessions',
  on: (owner, joined) => eq(f(owner, '$session_id'), f(joined, 'session_id')),
};

function group(index: number): LazyJoinSpec {
  return {
    description: `the group of type index ${index}`,
    text: `SELECT key, index, created_at, properties FROM groups WHERE index = ${index}`,
    on: (owner, joined) => eq(f(owner, `$group_${index}`), f(joined, 'key')),
    properties: 'group',
  };
}

/** The virtual fields of person_distinct_ids: `person.*`, the person the distinct id belongs to. */
export const PDI_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = {
  person: { kind: 'join', join: PERSON },
};

/** The virtual fields of events. */
export const EVENT_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = {
  pdi: { kind: 'join', join: PDI },
  // `person.properties` and `person.id` are the person as the event saw it (person-on-events); any other
  // field of the person (`person.created_at`) is the current person of the event's distinct id.
  person: {
    kind: 'columns',
    columns: { properties: 'person_properties', id: 'person_id' },
    otherwise: { field: 'pdi', join: PERSON },
    hint: 'write person.properties.<key>, person.id, person.created_at or person.is_identified',
  },
  poe: {
    kind: 'columns',
    columns: { properties: 'person_properties', id: 'person_id' },
    hint: 'the person on an event (poe) has properties and id',
  },
  session: { kind: 'join', join: SESSION },
  group_0: { kind: 'join', join: group(0) },
  group_1: { kind: 'join', join: group(1) },
  group_2: { kind: 'join', join: group(2) },
  group_3: { kind: 'join', join: group(3) },
  group_4: { kind: 'join', join: group(4) },
};

/**
 * PostHog's `sessions` table, derived from events: one row per `$session_id`. Entry and end are the first and
 * last events with a URL; a bounce is a session of at most one pageview or screen, no autocapture, under 10
 * seconds. `$exit_*` are PostHog's other names for `$end_*`.
 */
export const SESSIONS_TEXT = `
SELECT
  \`$session_id\` AS session_id,
  argMin(e.distinct_id, e.timestamp) AS distinct_id,
  min(e.timestamp) AS \`$start_timestamp\`,
  max(e.timestamp) AS \`$end_timestamp\`,
  dateDiff('second', \`$start_timestamp\`, \`$end_timestamp\`) AS \`$session_duration\`,
  \`$session_duration\` AS duration,
  groupUniqArrayIf(properties.$current_url, properties.$current_url != '') AS \`$urls\`,
  length(\`$urls\`) AS \`$num_uniq_urls\`,
  argMinIf(properties.$current_url, e.timestamp, properties.$current_url != '') AS \`$entry_current_url\`,
  argMinIf(properties.$pathname, e.timestamp, properties.$current_url != '') AS \`$entry_pathname\`,
  argMaxIf(properties.$current_url, e.timestamp, properties.$current_url != '') AS \`$end_current_url\`,
  argMaxIf(properties.$pathname, e.timestamp, properties.$current_url != '') AS \`$end_pathname\`,
  \`$end_current_url\` AS \`$exit_current_url\`,
  \`$end_pathname\` AS \`$exit_pathname\`,
  argMinIf(properties.$referring_domain, e.timestamp, properties.$current_url != '') AS \`$entry_referring_domain\`,
  argMinIf(properties.utm_source, e.timestamp, properties.$current_url != '') AS \`$entry_utm_source\`,
  argMinIf(properties.utm_campaign, e.timestamp, properties.$current_url != '') AS \`$entry_utm_campaign\`,
  argMinIf(properties.utm_medium, e.timestamp, properties.$current_url != '') AS \`$entry_utm_medium\`,
  countIf(e.event = '$pageview') AS \`$pageview_count\`,
  countIf(e.event = '$screen') AS \`$screen_count\`,
  countIf(e.event = '$autocapture') AS \`$autocapture_count\`,
  count() AS \`$event_count\`,
  \`$pageview_count\` + \`$screen_count\` <= 1 AND \`$autocapture_count\` = 0 AND \`$session_duration\` < 10 AS \`$is_bounce\`
FROM events AS e
WHERE \`$session_id\` != ''
GROUP BY session_id`;

const parsed = new Map<string, Query>();

/** The query of a constant text, parsed once: the texts above are Weir's own, so they always parse. */
export function parsedOnce(text: string): Query {
  let q = parsed.get(text);
  if (q === undefined) {
    q = parseDialect(text);
    parsed.set(text, q);
  }
  return q;
}
