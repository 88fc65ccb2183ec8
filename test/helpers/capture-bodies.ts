/**
 * Capture test helpers: the ways SDKs encode a capture body (SPEC §2 "Bodies"), a reader for Prometheus
 * counters, and a check of the SPEC §1 error body. Plain functions over the harness in `weir.ts`.
 */
import { gzipSync } from 'node:zlib';
import LZString from 'lz-string';
import type { Test } from 'tap';
import type { HttpResult } from './weir.ts';

/** One way of putting a JSON text on the wire: the query string, the headers and the body bytes. */
export interface Encoding {
  readonly name: string;
  /** Query string to append to the path, with its `?`, or ''. */
  readonly query: string;
  readonly headers: Record<string, string>;
  encode(json: string): string | Uint8Array;
}

export function gzip(text: string): Buffer {
  return gzipSync(Buffer.from(text, 'utf8'));
}

export function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** A urlencoded form body, as posthog-js and older SDKs send it. */
export function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

const JSON_TYPE = { 'content-type': 'application/json' };
const TEXT_TYPE = { 'content-type': 'text/plain' };
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' };

/** Every body encoding of SPEC §2 that a PostHog SDK or script sends. */
export const ENCODINGS: readonly Encoding[] = [
  { name: 'json', query: '', headers: JSON_TYPE, encode: (j) => j },
  { name: 'text-plain', query: '', headers: TEXT_TYPE, encode: (j) => j },
  {
    name: 'gzip-header',
    query: '',
    headers: { ...JSON_TYPE, 'content-encoding': 'gzip' },
    encode: gzip,
  },
  { name: 'gzip-query', query: '?compression=gzip', headers: TEXT_TYPE, encode: gzip },
  { name: 'gzip-js-query', query: '?compression=gzip-js', headers: TEXT_TYPE, encode: gzip },
  { name: 'gzip-magic-only', query: '', headers: JSON_TYPE, encode: gzip },
  {
    name: 'lz64-query',
    query: '?compression=lz64',
    headers: TEXT_TYPE,
    encode: (j) => LZString.compressToBase64(j),
  },
  {
    name: 'lz-string-query',
    query: '?compression=lz-string',
    headers: TEXT_TYPE,
    encode: (j) => LZString.compressToBase64(j),
  },
  { name: 'form-json', query: '', headers: FORM_TYPE, encode: (j) => form({ data: j }) },
  { name: 'form-base64', query: '', headers: FORM_TYPE, encode: (j) => form({ data: base64(j) }) },
  {
    // posthog-js (legacy transport): lz-string base64 in `data`, the compression named in the form.
    name: 'form-lz64',
    query: '',
    headers: FORM_TYPE,
    encode: (j) => form({ data: LZString.compressToBase64(j), compression: 'lz64' }),
  },
  {
    // The same, with the compression named in the query string instead.
    name: 'form-lz64-query',
    query: '?compression=lz64',
    headers: FORM_TYPE,
    encode: (j) => form({ data: LZString.compressToBase64(j) }),
  },
];

/**
 * The value of one Prometheus sample from `GET /metrics`, or 0 when the series does not exist yet.
 * `labels` must match the sample's labels exactly (all of them).
 */
export async function metricValue(
  baseUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? ([^ ]+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean).sort().join(',');
    if (have === wanted) return Number(m[3]);
  }
  return 0;
}

/** Checks a SPEC §1 error response: status, JSON content type, and `{type, code, detail, attr}` exactly. */
export function assertError(
  t: Test,
  res: HttpResult,
  status: number,
  type: string,
  code: string,
  label = code,
): void {
  t.equal(res.status, status, `${label}: status`);
  t.match(res.headers.get('content-type'), /^application\/json/, `${label}: content type`);
  const body = res.json as Record<string, unknown> | undefined;
  t.same(Object.keys(body ?? {}).sort(), ['attr', 'code', 'detail', 'type'], `${label}: body keys`);
  t.equal(body?.['type'], type, `${label}: type`);
  t.equal(body?.['code'], code, `${label}: code`);
  t.match(body?.['detail'], /\S/, `${label}: detail is a sentence`);
  const attr = body?.['attr'];
  t.equal(attr === null || typeof attr === 'string', true, `${label}: attr is a string or null`);
}
