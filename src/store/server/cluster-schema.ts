import { sqlString } from '../sql.ts';
import type { StatementRender } from '../migrate.ts';

/**
 * Weir's schema on a ClickHouse cluster (`WEIR_CLICKHOUSE_CLUSTER`): every migration statement, written for
 * one server, is rendered as `ON CLUSTER` DDL over replicated tables, PostHog's layout:
 *
 * - `events` and `ingestion_warnings` are sharded: a `Replicated…MergeTree` table `<name>_local` on every
 *   node, and a `Distributed` table under the name the rest of Weir queries and inserts into. Events are
 *   sharded by `cityHash64(distinct_id)`: the copies of a retried event share its distinct id and uuid, so they
 *   land on one shard, where the ReplacingMergeTree collapses them, and one person's events are read together.
 * - Everything else (persons, distinct ids, groups, group types, property definitions, the migrations table)
 *   is small beside events and joined to them: one replicated table of the same name with a full copy on
 *   every node (ZooKeeper path without `{shard}`), so a query's join of events with persons runs on each
 *   shard against its local copy, and needs no `GLOBAL` join.
 *
 * Replicated tables keep their deduplication tokens under `replicated_deduplication_window`; a migration's
 * `non_replicated_deduplication_window` (the token history a retried insert needs) becomes that.
 *
 * A statement of a shape not known here throws: a new migration must say how it goes on a cluster (the unit
 * test renders every migration).
 */

/** Sharding keys of the sharded tables; every other table is copied whole to every node. */
const SHARDED: Readonly<Record<string, string>> = {
  events: 'cityHash64(distinct_id)',
  // Deterministic (not rand()): a retried block's rows go to the shards they went to the first time, so
  // each shard's copy of the block has the same deduplication token and content as before.
  ingestion_warnings: 'cityHash64(project_id, details)',
};

/** Whether a table is sharded on a cluster: its rows live in `<name>_local` on each shard. */
export function isSharded(table: string): boolean {
  return Object.hasOwn(SHARDED, table);
}

const CREATE =
  /^\s*CREATE TABLE IF NOT EXISTS (\w+)\s*(\([\s\S]*\))\s*ENGINE\s*=\s*(\w*MergeTree)(?:\(([^)]*)\))?(\s[\s\S]*)$/;
const ALTER = /^\s*ALTER TABLE (\w+) (MODIFY SETTING|ADD COLUMN IF NOT EXISTS) ([\s\S]+)$/;

export interface ClusterSchema {
  /** The cluster's name in the servers' `remote_servers`. */
  readonly cluster: string;
  /** The database Weir's tables live in (created `ON CLUSTER` beforehand). */
  readonly database: string;
}

/** The DDL of one migration statement on the cluster, in the order to run it. */
export function clusterStatements(schema: ClusterSchema): StatementRender {
  const on = `ON CLUSTER ${sqlString(schema.cluster)}`;
  const db = `\`${schema.database}\``;
  const zk = (path: string): string => sqlString(`/clickhouse/tables/${path}`);
  return (written) => {
    const statement = written.replace(
      /\bnon_replicated_deduplication_window\b/g,
      'replicated_deduplication_window',
    );
    const create = CREATE.exec(statement);
    if (create) {
      const [, table, columns, engine, args, rest] = create as unknown as [
        string,
        string,
        string,
        string,
        string | undefined,
        string,
      ];
      const key = SHARDED[table];
      const local = key === undefined ? table : `${table}_local`;
      // Sharded: one replica set per shard. Copied whole: one replica set of all nodes, so replica names must
      // be unique across shards too.
      const replication =
        key === undefined
          ? `${zk(`noshard/${schema.database}.${table}`)}, '{replica}-{shard}'`
          : `${zk(`{shard}/${schema.database}.${local}`)}, '{replica}'`;
      const engineArgs = args?.trim() ? `${replication}, ${args.trim()}` : replication;
      const out = [
        `CREATE TABLE IF NOT EXISTS ${db}.\`${local}\` ${on} ${columns}
      ENGINE = Replicated${engine}(${engineArgs})${rest}`,
      ];
      if (key !== undefined)
        out.push(
          `CREATE TABLE IF NOT EXISTS ${db}.\`${table}\` ${on} AS ${db}.\`${local}\`
      ENGINE = Distributed(${sqlString(schema.cluster)}, ${sqlString(schema.database)}, ${sqlString(local)}, ${key})`,
        );
      return out;
    }
    const alter = ALTER.exec(statement);
    if (alter) {
      const [, table, action, what] = alter as unknown as [string, string, string, string];
      const key = SHARDED[table];
      if (key === undefined) return [`ALTER TABLE ${db}.\`${table}\` ${on} ${action} ${what}`];
      const local = `ALTER TABLE ${db}.\`${table}_local\` ${on} ${action} ${what}`;
      // A storage setting is the local tables'; a column is both theirs and the Distributed table's.
      return action === 'MODIFY SETTING'
        ? [local]
        : [local, `ALTER TABLE ${db}.\`${table}\` ${on} ${action} ${what}`];
    }
    throw new Error(`no cluster form for this migration statement: ${written.slice(0, 200)}`);
  };
}
