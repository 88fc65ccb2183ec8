import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/** Distinct ids spread over the events, as in the capture bench (bench/capture/payloads.ts). */
export const DISTINCT_IDS = 10_000;
const START = Date.UTC(2024, 0, 1);

/**
 * Writes `events` JSON lines as PostHog's export writes events (uuid, event, distinct_id, timestamp,
 * properties), a second apart from 2024-01-01, streamed to disk with back-pressure: 10M lines are ~2 GB,
 * never held in memory. Returns the bytes written.
 */
export async function writeExport(path: string, events: number): Promise<number> {
  const out = createWriteStream(path, { highWaterMark: 1 << 20 });
  let bytes = 0;
  let chunk = '';
  for (let i = 0; i < events; i++) {
    const n = i % DISTINCT_IDS;
    chunk +=
      `{"uuid":"${uuid(i, START + i * 1000)}","event":"$pageview","distinct_id":"user-${n}",` +
      `"timestamp":"${new Date(START + i * 1000).toISOString()}",` +
      `"properties":{"$current_url":"https://example.com/p/${n}","$browser":"Chrome"}}\n`;
    if (chunk.length > 1 << 20) {
      bytes += Buffer.byteLength(chunk);
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  bytes += Buffer.byteLength(chunk);
  out.end(chunk);
  await once(out, 'finish');
  return bytes;
}

/**
 * A UUIDv7 as PostHog's export carries: the event's milliseconds, then bits that look random (a mix of `i`,
 * so the file is the same every run). Not a counter in the last digits: uuids that differ only in their low
 * bits all land in one region of the duplicate window's table (its slot is taken from a hash's high bits),
 * which measured ~1,000 events/s instead of what capture takes.
 */
function uuid(i: number, ms: number): string {
  const t = ms.toString(16).padStart(12, '0');
  const a = mix(i).toString(16).padStart(8, '0');
  const b = mix(i ^ 0x5bd1e995)
    .toString(16)
    .padStart(8, '0');
  const c = mix(i + 0x27d4eb2d)
    .toString(16)
    .padStart(8, '0');
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${a.slice(0, 3)}-${'89ab'[i & 3]}${a.slice(3, 6)}-${b}${c.slice(0, 4)}`;
}

/** murmur3's 32-bit finaliser: every input bit moves every output bit. */
function mix(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
