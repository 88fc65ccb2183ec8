/**
 * The capture requests the generator sends, built once as raw HTTP/1.1 bytes so that sending one costs a
 * single socket write and nothing else: on a 2-core machine every microsecond the generator spends is taken
 * from the server it measures.
 */

export type Mode = 'single' | 'batch';

export const API_KEY = 'phc_bench';

/** Distinct ids spread over the requests, so spike detection (100 events/s per id) stays out of the way. */
export const DISTINCT_IDS = 10_000;

export const EVENTS_PER_BATCH = 100;

export const MODE_PATH: Readonly<Record<Mode, string>> = { single: '/i/v0/e/', batch: '/batch/' };

export interface Payloads {
  readonly mode: Mode;
  /** Complete requests (head and body); request i sends `requests[i % requests.length]`. */
  readonly requests: readonly Buffer[];
  /** Events carried by one request. */
  readonly eventsPerRequest: number;
  /** Mean body size in bytes, for the report. */
  readonly meanBodyBytes: number;
}

function properties(n: number): Record<string, string> {
  return { $current_url: `https://example.com/p/${n}`, $browser: 'Chrome' };
}

function singleBody(n: number): string {
  return JSON.stringify({
    api_key: API_KEY,
    event: '$pageview',
    distinct_id: `user-${n}`,
    properties: properties(n),
  });
}

function batchBody(first: number): string {
  const batch = [];
  for (let i = 0; i < EVENTS_PER_BATCH; i++) {
    const n = (first + i) % DISTINCT_IDS;
    batch.push({ event: '$pageview', properties: { distinct_id: `user-${n}`, ...properties(n) } });
  }
  return JSON.stringify({ api_key: API_KEY, batch });
}

function request(host: string, path: string, body: string): Buffer {
  const bytes = Buffer.from(body);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${bytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
}

/** The JSON bodies of one cycle of requests: every distinct id appears once per cycle, in both modes. */
export function buildBodies(mode: Mode): string[] {
  const bodies: string[] = [];
  if (mode === 'single') {
    for (let n = 0; n < DISTINCT_IDS; n++) bodies.push(singleBody(n));
  } else {
    for (let first = 0; first < DISTINCT_IDS; first += EVENTS_PER_BATCH) bodies.push(batchBody(first));
  }
  return bodies;
}

export function buildPayloads(mode: Mode, host: string): Payloads {
  const bodies = buildBodies(mode);
  const path = MODE_PATH[mode];
  const requests = bodies.map((body) => request(host, path, body));
  const totalBody = bodies.reduce((sum, body) => sum + Buffer.byteLength(body), 0);
  return {
    mode,
    requests,
    eventsPerRequest: mode === 'single' ? 1 : EVENTS_PER_BATCH,
    meanBodyBytes: Math.round(totalBody / bodies.length),
  };
}
