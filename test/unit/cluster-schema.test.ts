/**
 * The schema's DDL on a ClickHouse cluster (WEIR_CLICKHOUSE_CLUSTER), as text: no cluster runs here (the
 * test-only front has no Keeper and no remote_servers), so these statements were not run against one.
 */
import t from 'tap';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { clusterStatements } from '../../src/store/server/cluster-schema.ts';

const render = clusterStatements({ cluster: 'weir_cluster', database: 'analytics' });
const flat = (sql: string): string => sql.replace(/\s+/g, ' ').trim();
const all = MIGRATIONS.flatMap((m) => m.statements.flatMap((s) => render(s).map(flat)));

t.test('every statement of every migration has a cluster form, ON CLUSTER, in the database', (t) => {
  t.ok(all.length > 0);
  for (const s of all) {
    t.match(s, / ON CLUSTER 'weir_cluster' /, s.slice(0, 80));
    t.match(s, /^(CREATE TABLE IF NOT EXISTS|ALTER TABLE) `analytics`\./, s.slice(0, 80));
  }
  t.end();
});

t.test('events are sharded by distinct id: replicated local tables and a Distributed table', (t) => {
  const events = MIGRATIONS.find((m) => m.name === 'events')!.statements[0]!;
  const [local, distributed, ...rest] = render(events).map(flat);
  t.same(rest, []);
  t.match(
    local,
    "CREATE TABLE IF NOT EXISTS `analytics`.`events_local` ON CLUSTER 'weir_cluster' ( project_id UInt64,",
  );
  t.match(
    local,
    "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/analytics.events_local', '{replica}', _inserted_at) ORDER BY (project_id, toDate(timestamp), event, cityHash64(distinct_id), uuid)",
  );
  t.equal(
    distributed,
    "CREATE TABLE IF NOT EXISTS `analytics`.`events` ON CLUSTER 'weir_cluster' AS `analytics`.`events_local` " +
      "ENGINE = Distributed('weir_cluster', 'analytics', 'events_local', cityHash64(distinct_id))",
  );
  t.end();
});

t.test('person tables are one replicated copy on every node, under their own names', (t) => {
  const persons = MIGRATIONS.find((m) => m.name === 'persons_and_groups')!.statements.map((s) =>
    render(s).map(flat),
  );
  for (const [statement] of persons) {
    t.notMatch(statement, /Distributed|_local/);
    t.match(
      statement,
      /ENGINE = ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/noshard\/analytics\.\w+', '\{replica\}-\{shard\}'/,
    );
  }
  t.match(
    persons[0]![0],
    "ReplicatedReplacingMergeTree('/clickhouse/tables/noshard/analytics.persons', '{replica}-{shard}', version)",
  );
  t.match(
    persons[3]![0],
    "ReplicatedReplacingMergeTree('/clickhouse/tables/noshard/analytics.group_type_mapping', '{replica}-{shard}') ORDER BY",
  );
  t.end();
});

t.test('a column goes to the local and the Distributed table; a storage setting to the local ones', (t) => {
  t.same(render("ALTER TABLE events ADD COLUMN IF NOT EXISTS `$window_id` String DEFAULT ''").map(flat), [
    "ALTER TABLE `analytics`.`events_local` ON CLUSTER 'weir_cluster' ADD COLUMN IF NOT EXISTS `$window_id` String DEFAULT ''",
    "ALTER TABLE `analytics`.`events` ON CLUSTER 'weir_cluster' ADD COLUMN IF NOT EXISTS `$window_id` String DEFAULT ''",
  ]);
  t.same(render('ALTER TABLE events MODIFY SETTING non_replicated_deduplication_window = 10000'), [
    "ALTER TABLE `analytics`.`events_local` ON CLUSTER 'weir_cluster' MODIFY SETTING replicated_deduplication_window = 10000",
  ]);
  t.same(render('ALTER TABLE persons MODIFY SETTING non_replicated_deduplication_window = 10000'), [
    "ALTER TABLE `analytics`.`persons` ON CLUSTER 'weir_cluster' MODIFY SETTING replicated_deduplication_window = 10000",
  ]);
  t.end();
});

t.test('the migrations table is replicated to every node too', (t) => {
  const [statement, ...rest] = render(
    'CREATE TABLE IF NOT EXISTS weir_migrations (version UInt32, name String) ENGINE = ReplacingMergeTree ORDER BY version',
  ).map(flat);
  t.same(rest, []);
  t.equal(
    statement,
    "CREATE TABLE IF NOT EXISTS `analytics`.`weir_migrations` ON CLUSTER 'weir_cluster' (version UInt32, name String) " +
      "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/noshard/analytics.weir_migrations', '{replica}-{shard}') ORDER BY version",
  );
  t.end();
});

t.test('a statement of a shape it does not know is refused, not passed on as it is', (t) => {
  t.throws(() => render('DROP TABLE events'), /no cluster form/);
  t.throws(() => render('ALTER TABLE events DROP COLUMN x'), /no cluster form/);
  t.throws(() => render('CREATE TABLE IF NOT EXISTS s (a UInt8) ENGINE = Log'), /no cluster form/);
  t.end();
});
