import { Session } from 'chdb';
export const log = [];
export function open(path, args) {
  return args ? new Session(path, { connectionArgs: args }) : new Session(path);
}
export async function q(s, sql, { quiet = false } = {}) {
  const t0 = performance.now();
  try {
    const r = await s.queryAsync(sql, { format: 'TSV' });
    const ms = performance.now() - t0;
    const out = r.text().trim();
    console.log(`[${ms.toFixed(0)} ms] ${sql.slice(0, 300)}${quiet ? '' : '\n    => ' + out.slice(0, 1500).replace(/\n/g, '\n       ')}`);
    return { ok: true, ms, out };
  } catch (e) {
    const ms = performance.now() - t0;
    console.log(`[${ms.toFixed(0)} ms] ${sql.slice(0, 300)}\n    !! ERROR: ${String(e.message ?? e).slice(0, 1500)}`);
    return { ok: false, ms, err: String(e.message ?? e) };
  }
}
export const EVENTS_DDL = `CREATE TABLE events (project_id UInt64, uuid UUID, event String, distinct_id String, person_id UUID, timestamp DateTime64(6,'UTC'), properties String, _inserted_at DateTime64(6,'UTC') DEFAULT now64(6)) ENGINE = ReplacingMergeTree(_inserted_at) ORDER BY (project_id, toDate(timestamp), event, cityHash64(distinct_id), uuid) SETTINGS non_replicated_deduplication_window = 10000, min_bytes_for_wide_part = 33554432`;
export const PERSONS_DDL = `CREATE TABLE persons (project_id UInt64, id UUID, properties String, version UInt64, is_deleted UInt8) ENGINE = ReplacingMergeTree(version) ORDER BY (project_id, id)`;
// N rows, 10,000 distinct ids, timestamps over 365 days back from now, ~200-byte JSON props
export const fill = (n, offset = 0) => `INSERT INTO events (project_id, uuid, event, distinct_id, person_id, timestamp, properties)
SELECT 1, generateUUIDv4(number), ['pageview','click','signup','purchase','leave'][(number % 5) + 1], concat('user_', toString(number % 10000)),
  reinterpretAsUUID(cityHash64(number % 10000)), now64(6) - toIntervalMicrosecond((cityHash64(number, 'ts') % (365 * 86400000000))),
  concat('{"$current_url":"https://example.com/page/', toString(number % 997), '","$browser":"Chrome","$os":"Linux","$screen_width":1920,"utm_source":"newsletter","n":', toString(number), ',"pad":"', repeat('x', 60), '"}')
FROM numbers(${offset}, ${n})`;
export const bytes = `SELECT sum(bytes_on_disk), count(), sum(rows) FROM system.parts WHERE table='events' AND active`;
export const ck = (t = 'events') => `SELECT count(), sum(cityHash64(*)) FROM ${t}`;
