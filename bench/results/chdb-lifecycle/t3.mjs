import { open, q, EVENTS_DDL } from './lib.mjs';
const s = open('/tmp/chdb-research/d6', ['--background_pool_size=1']);
const v = async (sql) => (await s.queryAsync(sql, { format: 'TSV' })).text().trim();
const phase = process.argv[2] ?? 'all';
const blk = (tag, n = 100, props = 'p') => `INSERT INTO events (project_id, uuid, event, distinct_id, person_id, timestamp, properties)
SELECT 1, reinterpretAsUUID(cityHash64('${tag}', number)), 'pageview', concat('${tag}_', toString(number % 10)), reinterpretAsUUID(cityHash64(number % 10)),
 now64(6) - toIntervalDay(number % 365), '${props}' FROM numbers(${n}) SETTINGS insert_deduplication_token = 'tok_${tag}', optimize_on_insert = 0`;
const cnt = (tag) => v(`SELECT count() FROM events WHERE startsWith(distinct_id, '${tag}_')`);
async function show(label, tag) { console.log(`  -> ${label}: count(${tag})=${await cnt(tag)} FINAL=${await v(`SELECT count() FROM events FINAL WHERE startsWith(distinct_id, '${tag}_')`)} parts=${await v(`SELECT groupArray(name) FROM system.parts WHERE table='events' AND active`)}`); }
if (phase === 'all') {
  await q(s, 'DROP TABLE IF EXISTS events SYNC', { quiet: true });
  await q(s, EVENTS_DDL, { quiet: true });
  await q(s, 'ALTER TABLE events MODIFY SETTING min_parts_to_merge_at_once = 1000');
  console.log('\n## Q3 baseline: same token twice');
  await q(s, blk('A'), { quiet: true }); await q(s, blk('A'), { quiet: true }); await show('after A twice', 'A');
  await q(s, blk('A', 100, 'different'), { quiet: true }); await show('after A third time with DIFFERENT data, same token', 'A');
  console.log('\n## Q3 lightweight DELETE then same token');
  await q(s, `DELETE FROM events WHERE startsWith(distinct_id, 'A_') SETTINGS lightweight_deletes_sync = 2`, { quiet: true }); await show('after LWD', 'A');
  await q(s, blk('A'), { quiet: true }); await show('re-insert tok_A after LWD', 'A');
  console.log('\n## Q3 ALTER DELETE (mutation) then same token');
  await q(s, blk('B'), { quiet: true });
  await q(s, `ALTER TABLE events DELETE WHERE startsWith(distinct_id, 'B_') SETTINGS mutations_sync = 2`, { quiet: true }); await show('after ALTER DELETE', 'B');
  await q(s, blk('B'), { quiet: true }); await show('re-insert tok_B after ALTER DELETE', 'B');
  console.log('\n## Q3 LWD + OPTIMIZE FINAL then same token');
  await q(s, 'ALTER TABLE events RESET SETTING min_parts_to_merge_at_once');
  await q(s, blk('C'), { quiet: true });
  await q(s, `DELETE FROM events WHERE startsWith(distinct_id, 'C_')`, { quiet: true });
  await q(s, 'OPTIMIZE TABLE events FINAL', { quiet: true }); await show('after LWD+OPTIMIZE', 'C');
  await q(s, blk('C'), { quiet: true }); await show('re-insert tok_C after LWD+OPTIMIZE FINAL', 'C');
  console.log('\n## Q3 DROP PART then same token');
  await q(s, blk('D'), { quiet: true });
  const partD = await v(`SELECT name FROM system.parts WHERE table='events' AND active ORDER BY modification_time DESC, name DESC LIMIT 1`);
  await q(s, `ALTER TABLE events DROP PART '${partD}'`); await show('after DROP PART', 'D');
  await q(s, blk('D'), { quiet: true }); await show('re-insert tok_D after DROP PART', 'D');
  console.log('\n## Q3 TRUNCATE then same token');
  await q(s, blk('E'), { quiet: true });
  await q(s, `TRUNCATE TABLE events SYNC`); await show('after TRUNCATE', 'E');
  await q(s, blk('E'), { quiet: true }); await show('re-insert tok_E after TRUNCATE', 'E');
  await q(s, blk('A'), { quiet: true }); await show('re-insert tok_A after TRUNCATE', 'A');
  console.log('\n## Q3 TTL delete then same token');
  await q(s, blk('F'), { quiet: true });
  await q(s, `ALTER TABLE events MODIFY TTL toDateTime(timestamp) + INTERVAL 180 DAY SETTINGS mutations_sync = 2`, { quiet: true });
  await show('after TTL (F has rows over 365 days)', 'F');
  await q(s, blk('F'), { quiet: true }); await show('re-insert tok_F after TTL', 'F');
  await q(s, `ALTER TABLE events REMOVE TTL`, { quiet: true });
  console.log('\n## Q3 window: 10000 other tokens after G, then G again');
  await q(s, blk('G'), { quiet: true });

  await q(s, `DELETE FROM events WHERE startsWith(distinct_id, 'G_')`, { quiet: true }); await show('after LWD', 'G');
  await q(s, `SELECT name, value FROM system.merge_tree_settings WHERE name = 'non_replicated_deduplication_window'`);
}
if (phase === 'restart') {
  console.log('\n## Q3 after process restart (dedup log on disk)');
  await show('before', 'G');
  await q(s, blk('G'), { quiet: true }); await show('re-insert tok_G after LWD + process restart', 'G');
  await q(s, blk('H'), { quiet: true }); await show('new token H', 'H');
}
s.close();
