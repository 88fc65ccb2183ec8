/**
 * Capture V1 test helpers (docs/capture-v1.md): the headers and bodies a V1 SDK sends, a zstd encoder (Node
 * 20 has none: frames of raw blocks are valid zstd), and a check of V1's `{error, error_description,
 * error_uri}` refusals. Plain functions over the harness in `weir.ts`.
 */
import { randomUUID } from 'node:crypto';
import type { Test } from 'tap';
import { PROJECT_API_KEY, post, type HttpResult } from './weir.ts';

export const V1_PATH = '/i/v1/analytics/events';

/** The headers posthog-node 5.70 sends, with `overrides` (a value of undefined leaves the header out). */
export function v1Headers(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const all: Record<string, string | undefined> = {
    'content-type': 'application/json',
    authorization: `Bearer ${PROJECT_API_KEY}`,
    'posthog-sdk-info': 'posthog-node/5.70.0',
    'posthog-attempt': '1',
    'posthog-request-id': randomUUID(),
    'posthog-request-timestamp': new Date().toISOString(),
    'user-agent': 'posthog-node/5.70.0',
    ...overrides,
  };
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(all)) if (v !== undefined) out[k] = v;
  return out;
}

export interface V1EventInput {
  event?: unknown;
  uuid?: unknown;
  distinct_id?: unknown;
  timestamp?: unknown;
  session_id?: unknown;
  window_id?: unknown;
  options?: unknown;
  properties?: unknown;
  [key: string]: unknown;
}

/** A well-formed V1 event (a fresh uuid, now), with `fields` over it. */
export function v1Event(fields: V1EventInput = {}): Record<string, unknown> {
  return {
    event: 'v1 test',
    uuid: randomUUID(),
    distinct_id: 'v1-user',
    timestamp: new Date().toISOString(),
    options: {},
    properties: {},
    ...fields,
  };
}

/** The envelope around `batch`, with `extra` top-level fields. */
export function v1Body(batch: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ created_at: new Date().toISOString(), batch, ...extra });
}

export async function postV1(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string> = v1Headers(),
  path = V1_PATH,
): Promise<HttpResult> {
  const res = await fetch(`${url}${path}`, { method: 'POST', body, headers });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export interface V1Answer {
  results: Record<string, { result: string; details?: string }>;
}

/** Checks a V1 refusal: status, JSON content type, and `{error, error_description, error_uri}` exactly. */
export function assertV1Error(t: Test, res: HttpResult, status: number, tag: string, label = tag): void {
  t.equal(res.status, status, `${label}: status`);
  t.match(res.headers.get('content-type'), /^application\/json/, `${label}: content type`);
  const body = res.json as Record<string, unknown> | undefined;
  t.same(Object.keys(body ?? {}).sort(), ['error', 'error_description', 'error_uri'], `${label}: body keys`);
  t.equal(body?.['error'], tag, `${label}: error`);
  t.match(body?.['error_description'], /\S/, `${label}: a description`);
  t.equal(body?.['error_uri'], 'https://posthog.com/docs/api', `${label}: error_uri`);
}

/**
 * `data` as one zstd frame of raw (stored) blocks: valid zstd that any decoder reads, made without a zstd
 * library. `declaredSize` overrides the content size the header declares (to test a decoder's bounds).
 */
export function zstdRaw(data: Buffer, declaredSize = data.length): Buffer {
  const header = Buffer.alloc(9);
  header.writeUInt32LE(0xfd2fb528, 0);
  header[4] = 0xa0; // single segment, 4-byte content size, no checksum, no dictionary
  header.writeUInt32LE(declaredSize, 5);
  const parts: Buffer[] = [header];
  const BLOCK = 128 * 1024;
  for (let at = 0; at < data.length || at === 0; at += BLOCK) {
    const chunk = data.subarray(at, at + BLOCK);
    const last = at + BLOCK >= data.length ? 1 : 0;
    const h = last | (chunk.length << 3);
    parts.push(Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), chunk);
    if (data.length === 0) break;
  }
  return Buffer.concat(parts);
}

/**
 * Fills a store that cannot apply (its events table renamed away) with v0 batches named `event` until
 * capture answers 503, as store-behind.test.ts does: true once it did, within 100 batches.
 */
export async function fillUntilRefused(url: string, event: string): Promise<boolean> {
  const padding = 'p'.repeat(2_000);
  for (let round = 0; round < 100; round++) {
    const res = await post(
      `${url}/batch/`,
      JSON.stringify({
        api_key: PROJECT_API_KEY,
        batch: Array.from({ length: 50 }, (_, i) => ({
          event,
          uuid: `0190a1b2-c3d4-7e5f-8a9b-${String(round * 50 + i).padStart(12, '0')}`,
          properties: { distinct_id: `filler-${i}`, padding },
        })),
      }),
    );
    if (res.status === 503) return true;
  }
  return false;
}
