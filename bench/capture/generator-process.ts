/**
 * Entry point of the load-generator child process. The generator runs in its own process so that neither
 * the runner's bookkeeping nor a server under test shares its event loop: on two cores, the server gets
 * one and the generator the other. The runner sends `GeneratorRequest`s over IPC, one at a time.
 */
import { readFileSync } from 'node:fs';
import { runLoad, type LoadResult, type LoadSpec } from '../../src/loadgen/load-generator.ts';
import { buildPayloads, type Mode, type Payloads } from '../../src/loadgen/payloads.ts';
import { API_KEY } from './bench-key.ts';

export interface GeneratorRequest {
  readonly id: number;
  readonly spec: LoadSpec;
}

export type GeneratorReply =
  | { readonly id: number; readonly ok: true; readonly result: LoadResult; readonly meanBodyBytes: number }
  | { readonly id: number; readonly ok: false; readonly error: string };

// Bodies are built once per server and mode; rebuilding 10,000 of them inside a measured run would not
// matter, but between runs it would make every warm-up start with a cold heap.
const payloadCache = new Map<string, Payloads>();

/**
 * `BENCH_GENERATOR_IPS=FILE`, one address a line: every event carries one of them as `properties.$ip`, in
 * turn (the GeoIP bench, geoip.ts). Unset, events carry none and Weir stores the peer's, 127.0.0.1.
 */
const ipsFile = process.env['BENCH_GENERATOR_IPS'];
const ips = ipsFile
  ? readFileSync(ipsFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
  : undefined;

function payloadsFor(host: string, port: number, mode: Mode): Payloads {
  const key = `${host}:${port}:${mode}`;
  let payloads = payloadCache.get(key);
  if (!payloads) {
    payloads = buildPayloads(mode, { apiKey: API_KEY, host: `${host}:${port}`, ...(ips ? { ips } : {}) });
    payloadCache.set(key, payloads);
  }
  return payloads;
}

function reply(message: GeneratorReply): void {
  process.send?.(message);
}

async function handle(request: GeneratorRequest): Promise<void> {
  try {
    const payloads = payloadsFor(request.spec.host, request.spec.port, request.spec.mode);
    const result = await runLoad(request.spec, payloads);
    reply({ id: request.id, ok: true, result, meanBodyBytes: payloads.meanBodyBytes });
  } catch (err) {
    reply({ id: request.id, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
}

if (!process.send) {
  console.error('generator-process.ts runs as a child of bench/capture/run.ts (it needs an IPC channel)');
  process.exit(2);
}

process.on('message', (message: GeneratorRequest) => {
  void handle(message);
});
// The runner going away closes the channel: leave with it rather than linger as an orphan.
process.on('disconnect', () => process.exit(0));
