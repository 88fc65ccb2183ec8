import { open, q, EVENTS_DDL, fill, bytes } from './lib.mjs';
const N = Number(process.argv[2]);
const only = process.argv[3]?.split(',');
const s = open(`/tmp/chdb-research/dd${N}`, ['--background_pool_size=1']);
const v = async (sql) => (await s.queryAsync(sql, { format: 'TSV' })).text().trim();
const ids = (k) => Array.from({ length: k }, (_, i) => `'user_${i * Math.floor(10000 / k) + 7}'`).join(',');
const OLD = `timestamp < now() - INTERVAL 180 DAY`;
async function setup() {
  await q(s, 'DROP TABLE IF EXISTS events SYNC', { quiet: true });
  await q(s, EVENTS_DDL, { quiet: true });
  await q(s, fill(N), { quiet: true });
  await q(s, 'OPTIMIZE TABLE events FINAL', { quiet: true });
}
async function state(label) {
  const [b, parts, rows] = (await v(bytes)).split('\t');
  const c = await v('SELECT count() FROM events');
  const raw = await v('SELECT count() FROM events SETTINGS apply_deleted_mask = 0');
  const inact = await v(`SELECT sum(bytes_on_disk), count() FROM system.parts WHERE table='events' AND NOT active`);
  console.log(`  STATE ${label}: bytes_on_disk=${b} parts=${parts} part_rows=${rows} count()=${c} count(apply_deleted_mask=0)=${raw} inactive(bytes,parts)=${inact.replace('\t',',')}`);
  return { b: Number(b), c: Number(c), raw: Number(raw) };
}
const exps = {
  lwd_one: [`DELETE FROM events WHERE project_id = 1 AND distinct_id IN (${ids(1)})`],
  lwd_1pct: [`DELETE FROM events WHERE project_id = 1 AND distinct_id IN (${ids(100)})`],
  alter_one: [`ALTER TABLE events DELETE WHERE project_id = 1 AND distinct_id IN (${ids(1)}) SETTINGS mutations_sync = 2`],
  alter_1pct: [`ALTER TABLE events DELETE WHERE project_id = 1 AND distinct_id IN (${ids(100)}) SETTINGS mutations_sync = 2`],
  lwd_retention: [`DELETE FROM events WHERE ${OLD}`],
  alter_retention: [`ALTER TABLE events DELETE WHERE ${OLD} SETTINGS mutations_sync = 2`],
  ttl_modify: [`ALTER TABLE events MODIFY TTL toDateTime(timestamp) + INTERVAL 180 DAY SETTINGS mutations_sync = 2`],
  ttl_nomat_optimize: [`ALTER TABLE events MODIFY TTL toDateTime(timestamp) + INTERVAL 180 DAY SETTINGS materialize_ttl_after_modify = 0`, 'STATE', `OPTIMIZE TABLE events FINAL`],
  ttl_nomat_materialize: [`ALTER TABLE events MODIFY TTL toDateTime(timestamp) + INTERVAL 180 DAY SETTINGS materialize_ttl_after_modify = 0`, 'STATE', `ALTER TABLE events MATERIALIZE TTL SETTINGS mutations_sync = 2`],
};
for (const [name, stmts] of Object.entries(exps)) {
  if (only && !only.includes(name)) continue;
  console.log(`\n=== ${name} (N=${N})`);
  await setup();
  const expect = Number(await v(name.includes('retention') || name.startsWith('ttl') ? `SELECT countIf(toDateTime(timestamp) + INTERVAL 180 DAY <= now()) FROM events` : `SELECT count() FROM events WHERE distinct_id IN (${name.endsWith('one') ? ids(1) : ids(100)})`));
  console.log(`  rows matching = ${expect}`);
  const b0 = await state('before');
  for (const st of stmts) { if (st === 'STATE') { await state('after MODIFY (no materialize)'); continue; } const r = await q(s, st, { quiet: true }); }
  const b1 = await state('right after');
  await q(s, `SELECT count(), countIf(is_done), max(latest_fail_reason) FROM system.mutations WHERE table='events'`);
  const r = await q(s, 'OPTIMIZE TABLE events FINAL', { quiet: true });
  const b2 = await state('after OPTIMIZE FINAL');
  console.log(`  SUMMARY ${name}: matched=${expect} removed_visible=${b0.c - b1.c} bytes ${b0.b} -> ${b1.b} -> (optimize ${r.ms.toFixed(0)} ms) ${b2.b}; raw rows after optimize=${b2.raw}`);
}
await q(s, 'DROP TABLE IF EXISTS events SYNC', { quiet: true });
s.close();
