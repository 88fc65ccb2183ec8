import { open, q } from './lib.mjs';
import { execSync } from 'node:child_process';
const s = open('/tmp/chdb-research/d9', ['--background_pool_size=1']);
const dp = (await s.queryAsync(`SELECT data_paths[1] FROM system.tables WHERE name='events' AND database='default'`, { format: 'TSV' })).text().trim();
for (const t of [0, 20, 40]) { await new Promise(r => setTimeout(r, t ? 20000 : 0)); console.log(`t=${t}s du=${execSync(`du -sb ${dp}`).toString().split('\t')[0]} dirs=${execSync(`ls ${dp} | grep all_ | tr '\\n' ' '`)}`); }
await q(s, `SELECT sum(bytes_on_disk), count() FROM system.parts WHERE table='events' AND active`);
s.close();
