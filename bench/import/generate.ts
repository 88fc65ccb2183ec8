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
      `{"uuid":"${uuid(i)}","event":"$pageview","distinct_id":"user-${n}",` +
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

/** A UUIDv7-shaped uuid numbered `i`: what PostHog's export carries, unique per row. */
function uuid(i: number): string {
  const h = i.toString(16).padStart(12, '0');
  return `018d0000-0000-7000-8000-${h}`;
}
