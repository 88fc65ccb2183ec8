/**
 * The tables a query in the dialect can name (DESIGN.md, "The SQL dialect"), and what each one reads in the
 * store (src/store/migrations.ts). A query never reaches a store table directly: the printer replaces each
 * reference with a subquery over the store table, confined to the caller's project and deduplicated, that
 * shows exactly the columns listed here. Store bookkeeping (`_inserted_at`, `version`, `is_deleted`) is hidden.
 */
import {
  EVENT_VIRTUAL_FIELDS,
  PDI_VIRTUAL_FIELDS,
  PERSON_JOINED_COLUMNS,
  PERSON_VIRTUAL_FIELDS,
  SESSIONS_TEXT,
  SESSION_VIRTUAL_FIELDS,
  TEAM_VIRTUAL_FIELDS,
  type JoinedColumn,
  type VirtualField,
} from './virtual.ts';

/** How a column is read. `json`: a String of JSON whose keys `col.key` / `col['key']` reach. */
export interface ColumnSpec {
  readonly name: string;
  /** The ClickHouse type, for messages and the README. */
  readonly type: string;
  readonly json?: boolean;
  /** Whose property definitions type the keys of this JSON column (`properties.price` as a number). */
  readonly properties?: PropertyOwner;
  /** The store column when it is not the column of the same name. */
  readonly source?: string;
}

/** Whose properties a JSON column holds. Group properties are not typed yet: they read as text. */
export type PropertyOwner = 'event' | 'person' | 'group';

export interface TableSpec {
  readonly name: string;
  /** The table in the store (in the store's database). */
  readonly storeTable: string;
  readonly columns: readonly ColumnSpec[];
  /**
   * Read with FINAL: the table is a ReplacingMergeTree, and only the newest version of a row may be seen
   * (a retried event's copy, a person's older versions).
   */
  readonly final: boolean;
  /** A filter applied after FINAL: what the newest version must be to count (not deleted). */
  readonly filter?: string;
  readonly description: string;
  /** Fields that read another table through a join made when a query uses them (virtual.ts). */
  readonly virtual?: Readonly<Record<string, VirtualField>>;
  /** Columns computed by a join when a query reads them (virtual.ts). */
  readonly joinedColumns?: Readonly<Record<string, JoinedColumn>>;
}

const TS = "DateTime64(6, 'UTC')";

const EVENTS: TableSpec = {
  name: 'events',
  storeTable: 'events',
  final: true,
  description: 'one row per captured event',
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'uuid', type: 'UUID' },
    { name: 'event', type: 'String' },
    { name: 'distinct_id', type: 'String' },
    { name: 'person_id', type: 'UUID' },
    { name: 'timestamp', type: TS },
    { name: 'properties', type: 'String', json: true, properties: 'event' },
    { name: 'person_properties', type: 'String', json: true, properties: 'person' },
    { name: 'person_mode', type: 'LowCardinality(String)' },
    { name: '$group_0', type: 'String' },
    { name: '$group_1', type: 'String' },
    { name: '$group_2', type: 'String' },
    { name: '$group_3', type: 'String' },
    { name: '$group_4', type: 'String' },
    { name: 'created_at', type: TS },
    { name: '$session_id', type: 'String' },
    { name: '$window_id', type: 'String' },
    { name: 'elements_chain', type: 'String' },
  ],
  virtual: EVENT_VIRTUAL_FIELDS,
};

const PERSONS: TableSpec = {
  name: 'persons',
  storeTable: 'persons',
  final: true,
  filter: 'is_deleted = 0',
  description: 'the current version of each person (merged-away persons are gone)',
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'id', type: 'UUID' },
    { name: 'properties', type: 'String', json: true, properties: 'person' },
    { name: 'is_identified', type: 'UInt8' },
    { name: 'created_at', type: TS },
  ],
  virtual: PERSON_VIRTUAL_FIELDS,
  joinedColumns: PERSON_JOINED_COLUMNS,
};

const PERSON_DISTINCT_IDS: TableSpec = {
  name: 'person_distinct_ids',
  storeTable: 'person_distinct_ids',
  final: true,
  filter: 'is_deleted = 0',
  description: 'which person each distinct id belongs to now',
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'distinct_id', type: 'String' },
    { name: 'person_id', type: 'UUID' },
  ],
  virtual: PDI_VIRTUAL_FIELDS,
};

const GROUPS: TableSpec = {
  name: 'groups',
  storeTable: 'groups',
  final: true,
  description: 'the current version of each group',
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'group_type_index', type: 'UInt8' },
    { name: 'group_type', type: 'String' },
    { name: 'group_key', type: 'String' },
    { name: 'properties', type: 'String', json: true, properties: 'group' },
    // PostHog's names (HogQL's `index` and `key`, ClickHouse's `group_properties`), so queries written
    // against PostHog read the same.
    { name: 'index', type: 'UInt8', source: 'group_type_index' },
    { name: 'key', type: 'String', source: 'group_key' },
    { name: 'group_properties', type: 'String', json: true, source: 'properties', properties: 'group' },
    { name: 'created_at', type: TS },
  ],
  virtual: TEAM_VIRTUAL_FIELDS,
};

/**
 * PostHog's `raw_groups` (the groups table as stored, before HogQL's `groups` keeps each group's newest
 * version), with its column names. Weir's store keeps only the newest version of a group once its parts are
 * merged, and has no time of each version (PostHog's `updated_at`), so this reads the newest version too:
 * what PostHog's `argMax(…, updated_at)` over raw_groups gives.
 */
const RAW_GROUPS: TableSpec = {
  name: 'raw_groups',
  storeTable: 'groups',
  final: true,
  description: "the groups, by the column names of PostHog's raw_groups",
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'index', type: 'UInt8', source: 'group_type_index' },
    { name: 'key', type: 'String', source: 'group_key' },
    { name: 'created_at', type: TS },
    { name: 'properties', type: 'String', json: true, properties: 'group' },
  ],
  virtual: TEAM_VIRTUAL_FIELDS,
};

const INGESTION_WARNINGS: TableSpec = {
  name: 'ingestion_warnings',
  storeTable: 'ingestion_warnings',
  final: false,
  description: 'what ingestion dropped or changed, and why',
  columns: [
    { name: 'project_id', type: 'UInt64' },
    { name: 'type', type: 'LowCardinality(String)' },
    { name: 'source', type: 'LowCardinality(String)' },
    { name: 'details', type: 'String', json: true },
    { name: 'timestamp', type: TS },
  ],
  virtual: TEAM_VIRTUAL_FIELDS,
};

export const TABLES: ReadonlyMap<string, TableSpec> = new Map(
  [EVENTS, PERSONS, PERSON_DISTINCT_IDS, GROUPS, INGESTION_WARNINGS, RAW_GROUPS].map((t) => [t.name, t]),
);

/** The table of this name, matched as ClickHouse matches table names (case-sensitively). */
export function tableSpec(name: string): TableSpec | undefined {
  return TABLES.get(name);
}

/** Tables derived from the others by a query (virtual.ts): what a query names them, and the query. */
export const DERIVED_TABLES: ReadonlyMap<string, string> = new Map([['sessions', SESSIONS_TEXT]]);

/** The virtual fields of each derived table (its expression fields). */
export const DERIVED_VIRTUAL_FIELDS: ReadonlyMap<string, Readonly<Record<string, VirtualField>>> = new Map([
  ['sessions', SESSION_VIRTUAL_FIELDS],
]);

/** Every table a query can name, for messages. */
export const TABLE_NAMES: readonly string[] = [...TABLES.keys(), ...DERIVED_TABLES.keys()];
