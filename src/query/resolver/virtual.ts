/**
 * What a query can name that the store does not hold as such, with HogQL's meaning: the `sessions` table
 * (derived from events), the virtual fields of a table that read another one through a join made only
 * when a query uses them — on events `pdi.*`, `person.*` beyond the person-on-events columns, `group_N.*`
 * and `session.*`; on persons `last_seen_at` — and PostHog's expression fields over a table's own columns
 * (`team_id`, `$virt_initial_channel_type`, `$virt_path_cleaned_pathname`).
 *
 * Each is written as dialect text over the real tables and resolved by the resolver like any query, so it is
 * confined to the caller's project and deduplicated exactly as a query written by hand would be.
 */
import { parseDialect, type Expr, type Query } from '../dialect/mod.ts';
import { channelTypeText, domainTypeText, nullIfEmpty } from './channel-type.ts';

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
 * A field computed from its table's own columns (PostHog's expression fields: `team_id`,
 * `$virt_initial_channel_type`): `text` is a dialect expression that names the table `__table`, read under
 * the name the query gives the table, so it reads that table's columns even beside a join.
 */
export interface ExpressionField {
  readonly kind: 'expression';
  readonly text: string;
}

/**
 * A virtual field: a lazy join, an expression field, or (`poe`, and `person` on events) names for columns of
 * the same table, with a join for the names not among them.
 */
export type VirtualField =
  | { readonly kind: 'join'; readonly join: LazyJoinSpec }
  | ExpressionField
  | {
      readonly kind: 'columns';
      /** Field → the table's own column. */
      readonly columns: Readonly<Record<string, string>>;
      /** Fields computed from the table's own columns (`poe.$virt_initial_channel_type`). */
      readonly expressions?: Readonly<Record<string, ExpressionField>>;
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

/**
 * `team_id`: PostHog's team is Weir's project, so a row's team is its project (a query reads one project's
 * rows only, so it is the same number on every row).
 */
const TEAM_ID: ExpressionField = { kind: 'expression', text: '__table.project_id' };

/**
 * PostHog's channel of a person's first visit, and the type of its first referring domain, from the
 * `$initial_…` properties an SDK sets once on a person (channel-type.ts), in the JSON column `properties`
 * (persons' `properties`, or an event's `person_properties` for `poe`).
 */
function personChannelFields(properties: string): Record<string, ExpressionField> {
  const initial = (key: string): string => `toString(__table.${properties}.$initial_${key})`;
  const initialSet = (key: string): string =>
    `isNotNull(${nullIfEmpty(`__table.${properties}.$initial_${key}`)})`;
  return {
    $virt_initial_channel_type: {
      kind: 'expression',
      text: channelTypeText({
        source: initial('utm_source'),
        medium: initial('utm_medium'),
        campaign: initial('utm_campaign'),
        referringDomain: initial('referring_domain'),
        gadSource: initial('gad_source'),
        hasGclid: initialSet('gclid'),
        hasFbclid: initialSet('fbclid'),
      }),
    },
    $virt_initial_referring_domain_type: {
      kind: 'expression',
      text: domainTypeText(initial('referring_domain')),
    },
  };
}

const PERSON_CHANNEL_FIELDS = personChannelFields('properties');

/** The virtual fields of persons: `team_id` and the person's channel fields. */
export const PERSON_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = {
  team_id: TEAM_ID,
  ...PERSON_CHANNEL_FIELDS,
};

/** The channel fields of the person on an event (person-on-events), as PostHog's `poe` has them. */
const POE_CHANNEL_FIELDS = personChannelFields('person_properties');

// The person a distinct id belongs to now (merged persons followed), as PostHog's `pdi.person` reads it.
const PERSON: LazyJoinSpec = {
  description: 'the person of the distinct id',
  text: 'SELECT id, created_at, properties, is_identified FROM persons',
  on: (owner, joined) => eq(f(owner, 'person_id'), f(joined, 'id')),
  properties: 'person',
  virtual: PERSON_CHANNEL_FIELDS,
  joinedColumns: PERSON_JOINED_COLUMNS,
};

const PDI: LazyJoinSpec = {
  description: "the event's distinct id",
  text: 'SELECT distinct_id, person_id FROM person_distinct_ids',
  on: (owner, joined) => eq(f(owner, 'distinct_id'), f(joined, 'distinct_id')),
  virtual: { person: { kind: 'join', join: PERSON } },
};

/**
 * `$channel_type`, an expression field of sessions over its entry columns: the classification carries PostHog's
 * channel definitions (about 33 KB of query text), so it is printed only where a query reads it, as PostHog's
 * expression fields are (and, like them, it is not in `SELECT *`).
 */
export const SESSION_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = {
  $channel_type: {
    kind: 'expression',
    text: channelTypeText({
      source: '__table.`$entry_utm_source`',
      medium: '__table.`$entry_utm_medium`',
      campaign: '__table.`$entry_utm_campaign`',
      referringDomain: nullIfEmpty('__table.`$entry_referring_domain`'),
      gadSource: '__table.`$entry_gad_source`',
      hasGclid: '__table.`$entry_has_gclid`',
      hasFbclid: '__table.`$entry_has_fbclid`',
    }),
  },
};

const SESSION: LazyJoinSpec = {
  description: "the event's session",
  text: 'SELECT * FROM sessions',
  on: (owner, joined) => eq(f(owner, '$session_id'), f(joined, 'session_id')),
  virtual: SESSION_VIRTUAL_FIELDS,
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
  team_id: TEAM_ID,
};

/** The virtual fields of groups and ingestion_warnings. */
export const TEAM_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = { team_id: TEAM_ID };

/** The virtual fields of events. */
export const EVENT_VIRTUAL_FIELDS: Readonly<Record<string, VirtualField>> = {
  pdi: { kind: 'join', join: PDI },
  // `person.properties`, `person.id` and the channel fields are the person as the event saw it
  // (person-on-events); any other field of the person (`person.created_at`) is the current person of the
  // event's distinct id.
  person: {
    kind: 'columns',
    columns: { properties: 'person_properties', id: 'person_id' },
    expressions: POE_CHANNEL_FIELDS,
    otherwise: { field: 'pdi', join: PERSON },
    hint: 'write person.properties.<key>, person.id, person.created_at or person.is_identified',
  },
  poe: {
    kind: 'columns',
    columns: { properties: 'person_properties', id: 'person_id' },
    expressions: POE_CHANNEL_FIELDS,
    hint: 'the person on an event (poe) has properties, id, $virt_initial_channel_type and $virt_initial_referring_domain_type',
  },
  session: { kind: 'join', join: SESSION },
  group_0: { kind: 'join', join: group(0) },
  group_1: { kind: 'join', join: group(1) },
  group_2: { kind: 'join', join: group(2) },
  group_3: { kind: 'join', join: group(3) },
  group_4: { kind: 'join', join: group(4) },
  team_id: TEAM_ID,
  // PostHog's pathname with the project's path cleaning rules applied; Weir has none, and PostHog without
  // rules gives the pathname as it is.
  $virt_path_cleaned_pathname: { kind: 'expression', text: '__table.properties.$pathname' },
};

/**
 * PostHog's ad click ids: each is read as `$entry_<id>`, the value of the session's entry (sessions v1–v3).
 * posthog-js sends them as event properties of the same name, taken from the page's URL.
 */
export const SESSION_CLICK_IDS: readonly string[] = [
  'gclid',
  'gad_source',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'twclid',
  'li_fat_id',
  'mc_cid',
  'igshid',
  'ttclid',
  'epik',
  'qclid',
  'sccid',
  '_kx',
  'irclid',
];

/** A value of the session's entry: of its first event with a URL, as the other `$entry_…` columns are. */
const entry = (property: string, name: string): string =>
  `argMinIf(properties.${property}, e.timestamp, properties.$current_url != '') AS \`${name}\``;

/**
 * PostHog's `sessions` table, derived from events: one row per `$session_id`. Entry and end are the first and
 * last events with a URL; a bounce is a session of at most one pageview or screen, no autocapture, under 10
 * seconds. `$exit_*` are PostHog's other names for `$end_*`, `id` for `session_id`; `session_id_v7` is the id as
 * the UUID posthog-js makes it, `max_inserted_at` when Weir last received one of its events (PostHog's columns of
 * its stored sessions, which its batch export reads). The channel is PostHog's
 * classification of the entry's utm values, referring domain and click ids, as its sessions v2 reads them (an
 * empty value as none).
 */
export const SESSIONS_TEXT = `
SELECT
  \`$session_id\` AS session_id,
  session_id AS id,
  toUUIDOrNull(session_id) AS session_id_v7,
  any(e.project_id) AS team_id,
  argMin(e.distinct_id, e.timestamp) AS distinct_id,
  min(e.timestamp) AS \`$start_timestamp\`,
  max(e.timestamp) AS \`$end_timestamp\`,
  max(e.created_at) AS max_inserted_at,
  dateDiff('second', \`$start_timestamp\`, \`$end_timestamp\`) AS \`$session_duration\`,
  \`$session_duration\` AS duration,
  groupUniqArrayIf(properties.$current_url, properties.$current_url != '') AS \`$urls\`,
  length(\`$urls\`) AS \`$num_uniq_urls\`,
  argMinIf(properties.$current_url, e.timestamp, properties.$current_url != '') AS \`$entry_current_url\`,
  argMinIf(properties.$pathname, e.timestamp, properties.$current_url != '') AS \`$entry_pathname\`,
  domain(\`$entry_current_url\`) AS \`$entry_hostname\`,
  argMaxIf(properties.$current_url, e.timestamp, properties.$current_url != '') AS \`$end_current_url\`,
  argMaxIf(properties.$pathname, e.timestamp, properties.$current_url != '') AS \`$end_pathname\`,
  domain(\`$end_current_url\`) AS \`$end_hostname\`,
  \`$end_current_url\` AS \`$exit_current_url\`,
  \`$end_pathname\` AS \`$exit_pathname\`,
  ${entry('$referring_domain', '$entry_referring_domain')},
  ${entry('utm_source', '$entry_utm_source')},
  ${entry('utm_campaign', '$entry_utm_campaign')},
  ${entry('utm_medium', '$entry_utm_medium')},
  ${entry('utm_term', '$entry_utm_term')},
  ${entry('utm_content', '$entry_utm_content')},
  ${SESSION_CLICK_IDS.map((id) => entry(id, `$entry_${id}`)).join(',\n  ')},
  isNotNull(${nullIfEmpty('`$entry_gclid`')}) AS \`$entry_has_gclid\`,
  isNotNull(${nullIfEmpty('`$entry_fbclid`')}) AS \`$entry_has_fbclid\`,
  argMax(${nullIfEmpty('properties.$external_click_url')}, e.timestamp) AS \`$last_external_click_url\`,
  argMin(accurateCastOrNull(properties.$web_vitals_LCP_value, 'Float64'), e.timestamp) AS \`$vitals_lcp\`,
  countIf(e.event = '$pageview') AS \`$pageview_count\`,
  countIf(e.event = '$screen') AS \`$screen_count\`,
  countIf(e.event = '$autocapture') AS \`$autocapture_count\`,
  count() AS \`$event_count\`,
  uniqUpToIf(1)(e.uuid, e.event IN ('$pageview', '$screen', '$autocapture')) AS \`$page_screen_autocapture_count_up_to\`,
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

/** The name an expression field's text gives its table. */
const TABLE = '__table';

const parsedExprs = new Map<string, Expr>();

/** An expression field's expression over the table named `table`: its text parsed once, the table renamed. */
export function expressionOn(field: ExpressionField, table: string): Expr {
  let expr = parsedExprs.get(field.text);
  if (expr === undefined) {
    const q = parseDialect(`SELECT ${field.text}`);
    const columns = q.kind === 'select' ? q.columns : [];
    const column = columns[0];
    if (column === undefined || column.kind === 'star' || column.kind === 'alias' || columns.length !== 1) {
      throw new Error(`an expression field is one expression: ${field.text.slice(0, 80)}`);
    }
    expr = column;
    parsedExprs.set(field.text, expr);
  }
  return renamed(expr, table) as Expr;
}

/**
 * A tree with `__table` renamed, sharing every subtree that has none (the channel definitions' constant arrays
 * are most of a channel type's tree): nothing changes a tree once made, so sharing is safe.
 */
function renamed(node: unknown, table: string): unknown {
  if (Array.isArray(node)) {
    const items = node.map((n: unknown) => renamed(n, table));
    return items.some((n, i) => n !== node[i]) ? items : node;
  }
  if (typeof node !== 'object' || node === null) return node;
  const o = node as { kind?: unknown; chain?: unknown };
  if (o.kind === 'field' && Array.isArray(o.chain) && o.chain[0] === TABLE) {
    return { ...o, chain: [table, ...(o.chain as string[]).slice(1)] };
  }
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(node)) {
    const w = renamed(v, table);
    if (w !== v) (out ??= { ...node })[k] = w;
  }
  return out ?? node;
}
