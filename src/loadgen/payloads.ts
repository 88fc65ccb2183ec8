/**
 * The capture requests the generator sends, built once as raw HTTP/1.1 bytes so that sending one costs a
 * single socket write and nothing else: on a 2-core machine every microsecond the generator spends is taken
 * from the server it measures.
 */

export type Mode = 'single' | 'batch';

/** Distinct ids spread over the requests, so spike detection (100 events/s per id) stays out of the way. */
export const DISTINCT_IDS = 10_000;

/** Events in one `/batch/` request unless a batch size is given. */
export const EVENTS_PER_BATCH = 100;

export const MODE_PATH: Readonly<Record<Mode, string>> = { single: '/i/v0/e/', batch: '/batch/' };

export interface PayloadOptions {
  /** The project API key (`phc_…`) every body carries. */
  readonly apiKey: string;
  /** The Host header: `host:port` of the server under test. */
  readonly host: string;
  /** Events per `/batch/` request. @default EVENTS_PER_BATCH */
  readonly batchSize?: number;
  /** A path the capture routes sit under (a proxy's prefix), without a trailing slash. @default '' */
  readonly basePath?: string;
  /**
   * Client addresses: event n of a cycle gets `properties.$ip` = `ips[n % ips.length]`, and the cycle grows
   * to as many whole rounds of the distinct ids as it takes to send every address (so a GeoIP lookup per
   * event is of an address that varies as much as the list). @default none: no `$ip`, Weir stores the peer's
   */
  readonly ips?: readonly string[];
}

export interface Payloads {
  readonly mode: Mode;
  /** Complete requests (head and body); request i sends `requests[i % requests.length]`. */
  readonly requests: readonly Buffer[];
  /** Events carried by one request. */
  readonly eventsPerRequest: number;
  /** Mean body size in bytes, for the report. */
  readonly meanBodyBytes: number;
}

/** The properties of event `e` of a cycle, whose distinct id is number `n`. */
function properties(n: number, e: number, ips: readonly string[] | undefined): Record<string, string> {
  const props: Record<string, string> = { $current_url: `https://example.com/p/${n}`, $browser: 'Chrome' };
  if (ips !== undefined && ips.length > 0) props['$ip'] = ips[e % ips.length]!;
  return props;
}

function singleBody(apiKey: string, e: number, ips: readonly string[] | undefined): string {
  const n = e % DISTINCT_IDS;
  return JSON.stringify({
    api_key: apiKey,
    event: '$pageview',
    distinct_id: `user-${n}`,
    properties: properties(n, e, ips),
  });
}

function batchBody(apiKey: string, first: number, size: number, ips: readonly string[] | undefined): string {
  const batch = [];
  for (let i = 0; i < size; i++) {
    const n = (first + i) % DISTINCT_IDS;
    batch.push({
      event: '$pageview',
      properties: { distinct_id: `user-${n}`, ...properties(n, first + i, ips) },
    });
  }
  return JSON.stringify({ api_key: apiKey, batch });
}

/** Events in one cycle: the distinct ids once, or as many times as it takes to send every address. */
function cycleEvents(ips: readonly string[] | undefined): number {
  return DISTINCT_IDS * Math.max(1, Math.ceil((ips?.length ?? 0) / DISTINCT_IDS));
}

function request(host: string, path: string, body: string): Buffer {
  const bytes = Buffer.from(body);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${bytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
}

/**
 * The JSON bodies of one cycle of requests: every distinct id appears once per cycle, in both modes (with
 * `ips`, once per round of the cycle, in the same order each round).
 */
export function buildBodies(
  mode: Mode,
  apiKey: string,
  batchSize = EVENTS_PER_BATCH,
  ips?: readonly string[],
): string[] {
  const bodies: string[] = [];
  const events = cycleEvents(ips);
  if (mode === 'single') {
    for (let e = 0; e < events; e++) bodies.push(singleBody(apiKey, e, ips));
  } else {
    for (let first = 0; first < events; first += batchSize)
      bodies.push(batchBody(apiKey, first, batchSize, ips));
  }
  return bodies;
}

export function buildPayloads(mode: Mode, options: PayloadOptions): Payloads {
  const batchSize = options.batchSize ?? EVENTS_PER_BATCH;
  const bodies = buildBodies(mode, options.apiKey, batchSize, options.ips);
  const path = `${options.basePath ?? ''}${MODE_PATH[mode]}`;
  const requests = bodies.map((body) => request(options.host, path, body));
  const totalBody = bodies.reduce((sum, body) => sum + Buffer.byteLength(body), 0);
  return {
    mode,
    requests,
    eventsPerRequest: mode === 'single' ? 1 : batchSize,
    meanBodyBytes: Math.round(totalBody / bodies.length),
  };
}
