import { open, q, EVENTS_DDL, PERSONS_DDL } from './lib.mjs';
import { cpSync, readdirSync } from 'node:fs';
const src = { events: '/tmp/chdb-research/d3/shadow/x/store/049/04990a5c-bd8b-4f49-8148-e138250847c0', persons: '/tmp/chdb-research/d3/shadow/x/store/65d/65dacfad-3048-4810-b0f7-e4d97481c613' };
const s = open('/tmp/chdb-research/d5');
await q(s, EVENTS_DDL); await q(s, PERSONS_DDL);
for (const t of ['events', 'persons']) {
  const dp = (await s.queryAsync(`SELECT data_paths[1] FROM system.tables WHERE database='default' AND name='${t}'`, { format: 'TSV' })).text().trim();
  console.log(t, 'data path', dp);
  const parts = readdirSync(src[t]);
  for (const p of parts) cpSync(`${src[t]}/${p}`, `${dp}detached/${p}`, { recursive: true });
  console.log('copied', parts);
  if (t === 'events') {
    await q(s, `SELECT name, reason FROM system.detached_parts WHERE table='events'`);
    await q(s, `ALTER TABLE events ATTACH PART '${parts[0]}'`);
    await q(s, `SELECT count() FROM events`);
    await q(s, `ALTER TABLE events ATTACH PARTITION ALL`);
  } else {
    await q(s, `ALTER TABLE persons ATTACH PARTITION tuple()`);
  }
  await q(s, `SELECT count(), sum(cityHash64(*)) FROM ${t}`);
  await q(s, `SELECT count() FROM system.detached_parts WHERE table='${t}'`);
}
s.close();
