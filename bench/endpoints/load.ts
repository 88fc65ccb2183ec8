/**
 * The callers of the endpoints benchmark, in their own process (so that their work is not timed as Weir's):
 * `concurrency` keep-alive connections, each a closed-loop caller that POSTs a run request again as soon as
 * its response has arrived (the same one, or the next of `bodies`), until `requests` responses have; then
 * the latencies are printed as JSON.
 * It writes `timing\n` and `timed\n` to stderr when the timed part starts and ends, so the runner can take
 * the server's CPU over exactly that span.
 * The connections are capture's lean client (src/loadgen/http-connection.ts): a full HTTP client would
 * spend more CPU per request than a cached run costs Weir, on the same two cores.
 * Usage: node bin/run-ts.js bench/endpoints/load.ts '<LoadSpec as JSON>'
 */
import { HttpConnection } from '../../src/loadgen/http-connection.ts';

export interface LoadSpec {
  readonly url: string;
  readonly key: string;
  readonly body: string;
  /** Bodies sent in turn, each request the next (varying variable values); `body` is then unused. */
  readonly bodies?: readonly string[];
  readonly concurrency: number;
  readonly requests: number;
  /** Requests sent first and not timed (connections, JIT). @default concurrency */
  readonly warmup?: number;
}

export interface LoadResult {
  readonly requests: number;
  /** Milliseconds, sorted. */
  readonly latenciesMs: number[];
  /** Responses by status. */
  readonly statuses: Record<string, number>;
  readonly seconds: number;
  /** CPU the callers' process used while timed, in cores (1.0 = one core busy throughout). */
  readonly cpuCores: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const url = new URL(spec.url);
const requests = (spec.bodies ?? [spec.body]).map((body) =>
  Buffer.from(
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${spec.key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  ),
);
let turn = 0;

/**
 * Sends `total` requests over fresh connections, closed loop; records each latency when `out` is given.
 * Fresh, because uWS closes a keep-alive connection idle for 10 s, as one is that finished its share early
 * while the others wait for the store. Such a close is no error; one with a request in flight is.
 */
async function closedLoop(total: number, out?: LoadResult): Promise<void> {
  const connections = await open();
  let sent = 0;
  let done = 0;
  await new Promise<void>((resolve, reject) => {
    const next = (conn: HttpConnection): void => {
      if (sent >= total) return;
      sent += 1;
      conn.send(requests[turn++ % requests.length]!, Number.NaN, performance.now());
    };
    for (const conn of connections) {
      listeners.set(conn, {
        onResponse(status) {
          if (out) {
            out.latenciesMs.push(performance.now() - conn.sentAt);
            out.statuses[status] = (out.statuses[status] ?? 0) + 1;
          }
          done += 1;
          if (done === total) resolve();
          else next(conn);
        },
        onClosed(hadRequest, reason) {
          if (hadRequest) reject(new Error(`connection closed: ${reason}`));
        },
      });
      next(conn);
    }
  });
}

const listeners = new Map<
  HttpConnection,
  { onResponse(status: number): void; onClosed(hadRequest: boolean, reason: string): void }
>();

function open(): Promise<HttpConnection[]> {
  return Promise.all(
    Array.from({ length: spec.concurrency }, () =>
      HttpConnection.open(
        url.hostname,
        Number(url.port),
        {
          onResponse: (conn, status) => listeners.get(conn)?.onResponse(status),
          onClosed: (conn, hadRequest, reason) => listeners.get(conn)?.onClosed(hadRequest, reason),
        },
        10_000,
      ),
    ),
  );
}

const result: LoadResult = {
  requests: spec.requests,
  latenciesMs: [],
  statuses: {},
  seconds: 0,
  cpuCores: 0,
};
await closedLoop(spec.warmup ?? spec.concurrency);
process.stderr.write('timing\n');
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await closedLoop(spec.requests, result);
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
process.stderr.write('timed\n');
result.latenciesMs.sort((a, b) => a - b);
const cpuCores = (cpu.user + cpu.system) / 1e6 / seconds;
process.stdout.write(JSON.stringify({ ...result, seconds, cpuCores }));
for (const conn of listeners.keys()) conn.destroy();
