import { open, q, EVENTS_DDL } from './lib.mjs';
const s = open('/tmp/chdb-research/d8', ['--background_pool_size=1']);
const v = async (sql) => (await s.queryAsync(sql, { format: 'TSV' })).text().trim();
const blk = (tag, days) => `INSERT INTO events (project_id, uuid, event, distinct_id, person_id, timestamp, properties)
SELECT 1, reinterpretAsUUID(cityHash64('${tag}', number)), 'pageview', concat('${tag}_', toString(number % 10)), reinterpretAsUUID(cityHash64(number % 10)),
 now64(6) - toIntervalDay(${days}), 'p' FROM numbers(100) SETTINGS insert_deduplication_token = 'tok_${tag}', optimize_on_insert = 0`;
async function show(label, tag) { console.log(`  -> ${label}: count(${tag})=${await v(`SELECT count() FROM events WHERE startsWith(distinct_id, '${tag}_')`)} parts=${await v(`SELECT groupArray(name) FROM system.parts WHERE table='events' AND active`)}`); }
await q(s, EVENTS_DDL, { quiet: true });
await q(s, 'ALTER TABLE events MODIFY SETTING min_parts_to_merge_at_once = 1000');
console.log('## DROP PART of the block\'s own part');
await q(s, blk('D', 1), { quiet: true });
const partD = await v(`SELECT _part FROM events WHERE startsWith(distinct_id, 'D_') LIMIT 1`);
await q(s, `ALTER TABLE events DROP PART '${partD}'`); await show('after DROP PART ' + partD, 'D');
await q(s, blk('D', 1), { quiet: true }); await show('re-insert tok_D after DROP PART', 'D');
console.log('## ALTER DELETE removing every row of the part (part becomes empty)');
await q(s, blk('X', 1), { quiet: true }); await show('inserted', 'X');
await q(s, `ALTER TABLE events DELETE WHERE startsWith(distinct_id, 'X_') SETTINGS mutations_sync = 2`, { quiet: true }); await show('after ALTER DELETE', 'X');
await q(s, blk('X', 1), { quiet: true }); await show('re-insert tok_X', 'X');
console.log('## TTL deletes whole block (rows 300 days old)');
await q(s, blk('F', 300), { quiet: true }); await show('inserted', 'F');
await q(s, `ALTER TABLE events MODIFY TTL toDateTime(timestamp) + INTERVAL 180 DAY SETTINGS mutations_sync = 2`, { quiet: true }); await show('after MODIFY TTL', 'F');
await q(s, `ALTER TABLE events REMOVE TTL`, { quiet: true });
await q(s, blk('F', 300), { quiet: true }); await show('re-insert tok_F after TTL (TTL removed)', 'F');
await q(s, `SELECT count() FROM system.parts WHERE table='events' AND active AND rows = 0`);
s.close();
