/**
 * `npm run bench:geoip`'s flags (geoip.ts), parsed once and validated before anything starts. The runs
 * themselves are the capture bench's (batch mode, the same scenarios), so its options are built here from
 * these through its own parser (options.ts) and checked the same way.
 */
import { parseArgs } from 'node:util';
import { BENCH_TRANSPORTS, parseOptions, type BenchOptions, type BenchTransport } from './options.ts';

/** A list of client addresses the events carry, and what it is called in the report. */
export interface AddressSet {
  /** `many` or `few`. */
  readonly name: string;
  /** Distinct addresses sent, each in turn. */
  readonly count: number;
}

export interface GeoipBenchOptions {
  /** The capture bench's options for every run: batch mode, the fixed rate, step and warm-up lengths. */
  readonly bench: BenchOptions;
  /** The address sets, each measured with GeoIP off and on. @default many (50,000), then few (100) */
  readonly sets: readonly AddressSet[];
  /**
   * Off/on pairs per set, alternating which comes first (off on, on off, …): two cancel a drift of the machine
   * over the run. @default 2 (1 with --quick)
   */
  readonly rounds: number;
  /** The HTTP transport Weir serves on. @default uws where it loads, else node (geoip.ts decides) */
  readonly transport: BenchTransport | undefined;
  /** A short run to check the harness, not to quote: 1 round, 3 s fixed-rate runs, 1.5 s steps. */
  readonly quick: boolean;
}

/** Addresses in the `many` set: five times Weir's GeoIP cache (10,000 addresses), so nearly every lookup misses it. */
export const MANY_ADDRESSES = 50_000;
/** Addresses in the `few` set: all of them stay in the cache, as a site with a few offices' worth of clients. */
export const FEW_ADDRESSES = 100;

/**
 * The fixed rate, batch requests/s (100 events each): 5,000 events/s, under half of what Weir sustained with
 * GeoIP on and 50,000 addresses on two cores (~11,000 events/s; ~88,000 off), so the latencies compared are
 * those of a Weir keeping up rather than of a queue.
 */
export const DEFAULT_BATCH_RATE = 50;

export const GEOIP_USAGE = `usage: npm run bench:geoip -- [flags]
  Batch capture (100 events a request) on embedded Weir with WEIR_GEOIP off and on, each
  on a fresh Weir, in one run: the max sustained events/s and latency at a fixed rate.
  --sets LIST             address sets: many, few or many,few (default many,few)
  --many N                addresses in the many set (default ${MANY_ADDRESSES})
  --few N                 addresses in the few set (default ${FEW_ADDRESSES})
  --rounds N              off/on pairs per set, alternating order (default 2: off on on off)
  --batch-rate REQ_PER_S  fixed-rate run's batch requests/s (default ${DEFAULT_BATCH_RATE})
  --duration SECONDS      each fixed-rate run (default 10)
  --step SECONDS          probe and each max-throughput step (default 3)
  --warmup SECONDS        time limit of the first-sight warm-up, 0 = skip (default 60)
  --connections N         keep-alive connections (default 256)
  --max-p99 MS            p99 bound for a sustained max-throughput step (default 100)
  --quiet-wait SECONDS    total wait for a quiet machine before runs, 0 = never (default 60)
  --transport uws|node    Weir's HTTP transport (default uws where it loads, else node)
  --out-dir DIR           results directory (default bench/results)
  --quick                 a short run to try the harness: 1 round, 3 s runs, 1.5 s steps`;

function whole(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`--${name} must be a whole number in ${min}..${max}, got '${raw}'`);
  return n;
}

function parseSets(raw: string, many: number, few: number): AddressSet[] {
  const names = raw.split(',').map((name) => name.trim());
  if (
    names.length === 0 ||
    new Set(names).size !== names.length ||
    names.some((n) => n !== 'many' && n !== 'few')
  )
    throw new Error(`--sets must be many, few, many,few or few,many, got '${raw}'`);
  return names.map((name) => ({ name, count: name === 'many' ? many : few }));
}

/** Parses `args` (without node and the script); throws with a usage-worthy message on anything wrong. */
export function parseGeoipOptions(args: readonly string[]): GeoipBenchOptions | 'help' {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      sets: { type: 'string' },
      many: { type: 'string' },
      few: { type: 'string' },
      rounds: { type: 'string' },
      'batch-rate': { type: 'string' },
      duration: { type: 'string' },
      step: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'max-p99': { type: 'string' },
      'quiet-wait': { type: 'string' },
      transport: { type: 'string' },
      'out-dir': { type: 'string' },
      quick: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const many = whole('many', values.many, MANY_ADDRESSES, 1, 1_000_000);
  const few = whole('few', values.few, FEW_ADDRESSES, 1, 1_000_000);
  const transport = values.transport;
  if (transport !== undefined && !(BENCH_TRANSPORTS as readonly string[]).includes(transport))
    throw new Error(`--transport must be uws or node, got '${transport}'`);
  // The capture bench's parser checks each number and fills in what is not given.
  const passed: [flag: string, value: string | undefined][] = [
    ['batch-rate', values['batch-rate'] ?? String(DEFAULT_BATCH_RATE)],
    ['duration', values.duration ?? (quick ? '3' : undefined)],
    ['step', values.step ?? (quick ? '1.5' : undefined)],
    ['warmup', values.warmup],
    ['connections', values.connections],
    ['max-p99', values['max-p99']],
    ['quiet-wait', values['quiet-wait'] ?? (quick ? '10' : '60')],
    ['out-dir', values['out-dir']],
  ];
  const benchArgs = ['--mode', 'batch'];
  for (const [flag, value] of passed) if (value !== undefined) benchArgs.push(`--${flag}`, value);
  const bench = parseOptions(benchArgs);
  if (bench === 'help') throw new Error('unreachable: --help is not passed on');
  return {
    bench,
    sets: parseSets(values.sets ?? 'many,few', many, few),
    rounds: whole('rounds', values.rounds, quick ? 1 : 2, 1, 10),
    transport: transport as BenchTransport | undefined,
    quick,
  };
}
