import { open, q, ck } from './lib.mjs';
const s = open(process.argv[2], JSON.parse(process.argv[3]));
for (const sql of process.argv.slice(4)) await q(s, sql);
s.close();
