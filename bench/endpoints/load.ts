/**
 * The callers of the endpoints benchmark, in their own process (so that their work is not timed as Weir's):
 * `concurrency` closed-loop callers POST the same run request over keep-alive connections until `requests`
 * responses have arrived, then the latencies are printed as JSON on stdout.
 * Usage: node bin/run-ts.js bench/endpoints/load.ts '<LoadSpec as JSON>'
 */
import { Agent, request } from 'node:http';

export interface LoadSpec {
  readonly url: string;
  readonly key: string;
  readonly body: string;
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
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
const url = new URL(spec.url);

function call(): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          authorization: `Bearer ${spec.key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(spec.body),
        },
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(spec.body);
  });
}

async function closedLoop(total: number, record: boolean, out: LoadResult): Promise<void> {
  let started = 0;
  const caller = async (): Promise<void> => {
    while (started < total) {
      started += 1;
      const { status, ms } = await call();
      if (!record) continue;
      out.latenciesMs.push(ms);
      out.statuses[status] = (out.statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, caller));
}

const result: LoadResult = { requests: spec.requests, latenciesMs: [], statuses: {}, seconds: 0 };
await closedLoop(spec.warmup ?? spec.concurrency, false, result);
const t0 = performance.now();
await closedLoop(spec.requests, true, result);
result.latenciesMs.sort((a, b) => a - b);
process.stdout.write(JSON.stringify({ ...result, seconds: (performance.now() - t0) / 1000 }));
agent.destroy();
