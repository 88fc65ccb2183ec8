/**
 * Numbered schema migrations, applied in order at start. Each is idempotent (`IF NOT EXISTS`), and the
 * versions applied are recorded in `weir_migrations`, so a restart applies only what is new. Never edit a
 * migration that has shipped: add the next number.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
}

const TS = "DateTime64(6, 'UTC')";

// No PARTITION BY on events: one group-committed insert of a historical migration can span years, and a
// part per month per insert would hit max_partitions_per_insert_block and multiply small parts.

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'events',
    statements: [
      `CREATE TABLE IF NOT EXISTS events (
        project_id UInt64,
        uuid UUID,
        event String,
        distinct_id String,
        person_id UUID,
        timestamp ${TS},
        properties String,
        person_properties String,
        person_mode LowCardinality(String),
        \`$group_0\` String,
        \`$group_1\` String,
        \`$group_2\` String,
        \`$group_3\` String,
        \`$group_4\` String,
        created_at ${TS},
        _inserted_at ${TS} DEFAULT now64(6)
      ) ENGINE = ReplacingMergeTree(_inserted_at)
      ORDER BY (project_id, toDate(timestamp), event, cityHash64(distinct_id), uuid)`,
    ],
  },
  {
    version: 2,
    name: 'ingestion_warnings',
    statements: [
      `CREATE TABLE IF NOT EXISTS ingestion_warnings (
        project_id UInt64,
        type LowCardinality(String),
        source LowCardinality(String),
        details String,
        timestamp ${TS},
        _inserted_at ${TS} DEFAULT now64(6)
      ) ENGINE = MergeTree
      ORDER BY (project_id, timestamp)`,
    ],
  },
  {
    version: 3,
    name: 'persons_and_groups',
    statements: [
      `CREATE TABLE IF NOT EXISTS persons (
        project_id UInt64,
        id UUID,
        properties String,
        is_identified UInt8,
        created_at ${TS},
        version UInt64,
        is_deleted UInt8 DEFAULT 0
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (project_id, id)`,
      `CREATE TABLE IF NOT EXISTS person_distinct_ids (
        project_id UInt64,
        distinct_id String,
        person_id UUID,
        version UInt64,
        is_deleted UInt8 DEFAULT 0
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (project_id, distinct_id)`,
      `CREATE TABLE IF NOT EXISTS groups (
        project_id UInt64,
        group_type_index UInt8,
        group_type String,
        group_key String,
        properties String,
        created_at ${TS},
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (project_id, group_type_index, group_key)`,
      `CREATE TABLE IF NOT EXISTS group_type_mapping (
        project_id UInt64,
        group_type String,
        group_type_index UInt8
      ) ENGINE = ReplacingMergeTree
      ORDER BY (project_id, group_type)`,
    ],
  },
  {
    version: 4,
    name: 'block_deduplication',
    // The embedded store applies its commit log in blocks, each with a deduplication token, so a block
    // applied again after a crash is not stored twice. Non-replicated tables keep no token history unless
    // asked to.
    statements: [
      'events',
      'ingestion_warnings',
      'persons',
      'person_distinct_ids',
      'groups',
      'group_type_mapping',
    ].map((t) => `ALTER TABLE ${t} MODIFY SETTING non_replicated_deduplication_window = 10000`),
  },
  {
    version: 5,
    name: 'events_compact_parts',
    // A part of up to 32 MiB is written in the compact format (one file for all columns) rather than the wide
    // one (two files a column): a second's events applied took the engine much less CPU compact, most of the
    // difference in the kernel creating files. ClickHouse's default
    // is 10 MB.
    statements: ['ALTER TABLE events MODIFY SETTING min_bytes_for_wide_part = 33554432'],
  },
  {
    version: 6,
    name: 'property_definitions',
    // The properties ingest has seen and the type each was given (PostHog's property definitions). One row a
    // (project, type, name): ingest rewrites it when what it holds changes (the events it was seen with, its
    // last day seen, a type set through the API), and the highest version is the row that counts.
    statements: [
      `CREATE TABLE IF NOT EXISTS property_definitions (
        project_id UInt64,
        type LowCardinality(String),
        name String,
        property_type LowCardinality(String),
        events Array(String),
        first_seen_at ${TS},
        last_seen_at ${TS},
        type_changed_at Nullable(${TS}),
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (project_id, type, name)
      SETTINGS non_replicated_deduplication_window = 10000`,
    ],
  },
  {
    version: 7,
    name: 'events_session_and_elements',
    // PostHog's own columns of events (HogQL's `$session_id`, `$window_id`, `elements_chain`). Ingest writes
    // them; the DEFAULT gives rows stored before this migration the same values, computed when read.
    statements: [
      "ALTER TABLE events ADD COLUMN IF NOT EXISTS `$session_id` String DEFAULT JSONExtractString(properties, '$session_id')",
      "ALTER TABLE events ADD COLUMN IF NOT EXISTS `$window_id` String DEFAULT JSONExtractString(properties, '$window_id')",
      "ALTER TABLE events ADD COLUMN IF NOT EXISTS elements_chain String DEFAULT JSONExtractString(properties, '$elements_chain')",
    ],
  },
  {
    version: 8,
    name: 'quarantine',
    // Rows the engine refused, set aside so that they never stop the rows behind them (quarantine.ts): each
    // row's JSON bytes as base64, exactly as refused, with the engine's error. A replay writes a row's next
    // state as a higher version.
    statements: [
      `CREATE TABLE IF NOT EXISTS quarantine (
        id String,
        project_id UInt64,
        target_table LowCardinality(String),
        columns Array(String),
        row String,
        event_uuid String,
        error_code Int32,
        error_name LowCardinality(String),
        error String,
        status LowCardinality(String),
        attempts UInt32,
        quarantined_at ${TS},
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (project_id, id)
      SETTINGS non_replicated_deduplication_window = 10000`,
    ],
  },
];
