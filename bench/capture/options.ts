/**
 * The benchmark's command-line flags, parsed once with node:util parseArgs and validated before anything
 * starts, so a typo fails in a second instead of after a five-minute run.
 */
import { parseArgs } from 'node:util';
import type { Mode } from '../../src/loadgen/payloads.ts';

export type BusKind = 'embedded' | 'jetstream';

/** The HTTP transports embedded Weir is measured on, each beside a bare server of its own. */
export type BenchTransport = 'uws' | 'node';

export const BENCH_TRANSPORTS: readonly BenchTransport[] = ['uws', 'node'];

export interface BenchOptions {
  /** Embedded Weir (`weir start`) against bare uWS, or Weir's roles over NATS JetStream. @default 'embedded' */
  readonly bus: BusKind;
  /** Modes to run. @default ['single', 'batch'] (JetStream: ['batch']) */
  readonly modes: readonly Mode[];
  /** Length of each fixed-rate run. @default 10000 */
  readonly durationMs: number;
  /** Single-event fixed rate, requests/s. @default 5000 (the latency target) */
  readonly singleRate: number;
  /**
   * Batch fixed rate, requests/s of 100 events. @default 500 embedded (50,000 events/s, issue 2's target);
   * 200 on JetStream (20,000 events/s, where issue 3 bounds the end-to-end lag, measured in this run)
   */
  readonly batchRate: number;
  /** Keep-alive connections the generator holds open, one request in flight on each. @default 256 */
  readonly connections: number;
  /** Length of the closed-loop probe and of each max-throughput step. @default 3000 */
  readonly stepMs: number;
  /** Longest the first-sight warm-up (every distinct id once) may run; 0 skips it. @default 60000 */
  readonly warmupMs: number;
  /** p99 bound for a max-throughput step to count as sustained, ms. @default 100 */
  readonly maxP99Ms: number;
  /** How long requests may still finish after a run's schedule ends. @default 3000 */
  readonly drainMs: number;
  /** Total time the runner may spend waiting for other work on the machine to stop. @default 30000 */
  readonly quietWaitMs: number;
  /** Skip the max-throughput search (fixed-rate runs only). @default false */
  readonly skipMax: boolean;
  /** Where results go. @default 'bench/results' */
  readonly outDir: string;
  /** JetStream mode: length of the raw JetStream ceiling's run. @default 5000 */
  readonly ceilingMs: number;
  /**
   * JetStream mode on the ClickHouse server store (issue 28): measure with 1, 2, … this many `weir ingest`
   * processes sharing the bus partitions, instead of the one embedded ingest and the raw ceiling.
   * @default undefined (the embedded-store JetStream bench)
   */
  readonly ingest: number | undefined;
  /**
   * Embedded mode: the transports to measure, uWS (beside bare uWS) before Node's http (beside bare http).
   * @default undefined: both where uWS loads, Node's http alone where it does not
   */
  readonly transports: readonly BenchTransport[] | undefined;
  /**
   * JetStream mode: the server's JetStream sync settings to measure, each on a fresh server: its default
   * (`interval`, every 2 minutes, after acknowledging) and/or `sync_interval: always`. @default ['interval']
   */
  readonly natsSync: readonly NatsSync[];
}

export type NatsSync = 'interval' | 'always';

/** Most ingest processes `--ingest` starts: each is a Node process on the same 2 cores. */
export const MAX_INGEST = 8;

/** The rate of a mode's fixed-rate run. */
export function fixedRate(options: BenchOptions, mode: Mode): number {
  return mode === 'single' ? options.singleRate : options.batchRate;
}

export const USAGE = `usage: npm run bench:capture -- [flags]
  --bus embedded|jetstream  embedded Weir vs bare uWS (default), or capture and ingest
                            as separate processes over a local nats-server vs raw JetStream
  --mode single|batch|all   which modes to run (default all; jetstream batch)
  --duration SECONDS        each fixed-rate run (default 10)
  --rate REQ_PER_S          single-event fixed rate (default 5000)
  --batch-rate REQ_PER_S    batch fixed rate, 100 events per request (default 500;
                            jetstream 200, with the end-to-end lag sampled during it)
  --connections N           keep-alive connections (default 256)
  --step SECONDS            closed-loop probe and each max-throughput step (default 3)
  --warmup SECONDS          time limit of the first-sight warm-up, 0 = skip (default 60)
  --max-p99 MS              p99 bound for a sustained max-throughput step (default 100)
  --drain SECONDS           grace for in-flight requests after a run (default 3)
  --quiet-wait SECONDS      total wait for a quiet machine before runs, 0 = never (default 30)
  --skip-max                fixed-rate runs only
  --out-dir DIR             results directory (default bench/results)
  --transports LIST         embedded: Weir's HTTP transports to measure, each beside
                            its own bare server: uws, node or uws,node (default both
                            where uWebSockets.js loads, node alone where it does not)
  --ceiling SECONDS         jetstream: length of the raw JetStream ceiling run (default 5)
  --ingest N                jetstream: on the ClickHouse server store (the test-only
                            front over chDB), with 1, 2, … N weir ingest processes
                            sharing the partitions (1..8); no raw ceiling run
  --nats-sync interval|always|both
                            jetstream: the server's default sync (every 2 min, after
                            acknowledging), sync_interval: always, or both in turn
                            (default interval; always needs nats-server 2.10+:
                            scripts/fetch-nats-server.sh)`;

function positive(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > max)
    throw new Error(`--${name} must be a number in (0, ${max}], got '${raw}'`);
  return n;
}

/** Parses `args` (without node and the script); throws with a usage-worthy message on anything wrong. */
export function parseOptions(args: readonly string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      mode: { type: 'string' },
      duration: { type: 'string' },
      rate: { type: 'string' },
      'batch-rate': { type: 'string' },
      connections: { type: 'string' },
      step: { type: 'string' },
      warmup: { type: 'string' },
      'max-p99': { type: 'string' },
      drain: { type: 'string' },
      'quiet-wait': { type: 'string' },
      'skip-max': { type: 'boolean' },
      'out-dir': { type: 'string' },
      bus: { type: 'string' },
      ceiling: { type: 'string' },
      ingest: { type: 'string' },
      transports: { type: 'string' },
      'nats-sync': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const bus = values.bus ?? 'embedded';
  if (bus !== 'embedded' && bus !== 'jetstream')
    throw new Error(`--bus must be embedded or jetstream, got '${bus}'`);
  // On JetStream the targets are about batches, and single-event first sight (10,000 new persons, one
  // message each) alone takes minutes to ingest: single mode only when asked for.
  const mode = values.mode ?? (bus === 'jetstream' ? 'batch' : 'all');
  if (mode !== 'single' && mode !== 'batch' && mode !== 'all')
    throw new Error(`--mode must be single, batch or all, got '${mode}'`);
  const ingest = values.ingest === undefined ? undefined : Number(values.ingest);
  if (ingest !== undefined && bus !== 'jetstream')
    throw new Error('--ingest measures ingest processes over JetStream: it needs --bus jetstream');
  if (ingest !== undefined && !(Number.isInteger(ingest) && ingest >= 1 && ingest <= MAX_INGEST))
    throw new Error(`--ingest must be a whole number in 1..${MAX_INGEST}, got '${values.ingest}'`);
  if (values.transports !== undefined && bus !== 'embedded')
    throw new Error("--transports picks embedded Weir's HTTP transport: it needs --bus embedded");
  const transports = values.transports === undefined ? undefined : parseTransports(values.transports);
  const natsSync = values['nats-sync'] ?? 'interval';
  if (natsSync !== 'interval' && natsSync !== 'always' && natsSync !== 'both')
    throw new Error(`--nats-sync must be interval, always or both, got '${natsSync}'`);
  if (values['nats-sync'] !== undefined && bus !== 'jetstream')
    throw new Error('--nats-sync is a setting of the JetStream server: it needs --bus jetstream');
  const warmup = values.warmup === '0' ? 0 : positive('warmup', values.warmup, 60, 600);
  const quietWait = values['quiet-wait'] === '0' ? 0 : positive('quiet-wait', values['quiet-wait'], 30, 3600);
  return {
    bus,
    modes: mode === 'all' ? ['single', 'batch'] : [mode],
    durationMs: positive('duration', values.duration, 10, 600) * 1000,
    singleRate: positive('rate', values.rate, 5000, 1_000_000),
    batchRate: positive('batch-rate', values['batch-rate'], bus === 'jetstream' ? 200 : 500, 100_000),
    connections: Math.round(positive('connections', values.connections, 256, 10_000)),
    stepMs: positive('step', values.step, 3, 600) * 1000,
    warmupMs: warmup * 1000,
    maxP99Ms: positive('max-p99', values['max-p99'], 100, 60_000),
    drainMs: positive('drain', values.drain, 3, 600) * 1000,
    quietWaitMs: quietWait * 1000,
    skipMax: values['skip-max'] ?? false,
    outDir: values['out-dir'] ?? 'bench/results',
    ceilingMs: positive('ceiling', values.ceiling, 5, 600) * 1000,
    ingest,
    transports,
    natsSync: natsSync === 'both' ? ['interval', 'always'] : [natsSync],
  };
}

/** `node,uws` → ['uws', 'node']: always uWS first, so runs of either order measure in the same order. */
function parseTransports(raw: string): BenchTransport[] {
  const names = raw.split(',').map((name) => name.trim());
  const known = (name: string): name is BenchTransport => (BENCH_TRANSPORTS as string[]).includes(name);
  if (!names.every(known) || new Set(names).size !== names.length)
    throw new Error(`--transports must be uws, node or uws,node, got '${raw}'`);
  return BENCH_TRANSPORTS.filter((t) => names.includes(t));
}

/** The transports a run measures, and why uWS is left out when it is. */
export interface TransportPlan {
  readonly transports: readonly BenchTransport[];
  readonly uwsSkipped: string | undefined;
}

/**
 * What `--transports` comes to on this Node.js, given why uWS does not load (undefined: it loads). Left to
 * the default, a uWS that does not load is left out and the report says why; asked for by name, it is
 * refused before anything starts, as Weir refuses WEIR_HTTP_TRANSPORT=uws there.
 */
export function planTransports(
  asked: readonly BenchTransport[] | undefined,
  uwsUnavailable: string | undefined,
): TransportPlan {
  if (uwsUnavailable === undefined) return { transports: asked ?? BENCH_TRANSPORTS, uwsSkipped: undefined };
  if (asked?.includes('uws')) throw new Error(`--transports uws: ${uwsUnavailable}`);
  return { transports: asked ?? ['node'], uwsSkipped: uwsUnavailable };
}
