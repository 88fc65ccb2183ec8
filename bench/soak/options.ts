/**
 * The soak's command-line flags, parsed and checked before anything starts, so a typo fails at once
 * instead of after the max-rate search.
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';

export type SoakBus = 'embedded' | 'jetstream';

export interface SoakOptions {
  /** Length of each bus's soak, after its max-rate search. @default 10 */
  readonly minutes: number;
  /** The buses to soak, one after the other. @default both when nats-server is on PATH, else embedded */
  readonly buses: readonly SoakBus[];
  /** Share of the measured capacity offered, split evenly between single and batch. @default 0.7 */
  readonly fraction: number;
  /** The report; the memory plot goes beside it (`soak.md` → `soak-memory.svg`). @default bench/results/soak.md */
  readonly out: string;
  /** Length of each load-generator run the soak is made of. @default 30 */
  readonly runSeconds: number;
  /** Length of the probe and of each step of the max-rate search. @default 3 */
  readonly stepSeconds: number;
  /** p99 bound of a sustained step of the search, ms. @default 100 (as bench:capture) */
  readonly maxP99Ms: number;
  /** Keep-alive connections of each generator. @default 256 (as bench:capture) */
  readonly connections: number;
  /** Memory sampling interval. @default 10 */
  readonly sampleSeconds: number;
  /**
   * Search on one Weir, soak a fresh one at the rates found, so the search's saturation does not leave the
   * soaked Weir with a high-water mark of memory to grow into unseen. @default false
   */
  readonly fresh: boolean;
  /**
   * Requests/s of each mode given outright (`--rates single=N,batch=M`): no search, so a soak can be repeated
   * at one load, as a change is compared against the rates of an earlier report. @default undefined (search)
   */
  readonly rates: Readonly<Record<'single' | 'batch', number>> | undefined;
}

export const USAGE = `usage: npm run soak -- [flags]
  --minutes N                   soak length per bus, after the max-rate search (default 10)
  --bus embedded|jetstream|both which Weir to soak (default both when nats-server is on
                                PATH, else embedded); jetstream: weir start over a local
                                nats-server
  --fraction F                  share of the measured max offered, half single, half
                                batch (default 0.7)
  --out FILE                    the report (default bench/results/soak.md); the memory
                                plot and the samples go beside it
  --run-seconds S               length of each generator run of the soak (default 30)
  --step SECONDS                probe and each step of the max-rate search (default 3)
  --max-p99 MS                  p99 bound of the search (default 100)
  --connections N               keep-alive connections per generator (default 256)
  --sample-seconds S            memory sampling interval (default 10)
  --fresh                       search on one Weir, soak a fresh one at the rates found
                                (default: soak the Weir the search ran on)
  --rates single=N,batch=M      soak at these requests/s (a batch is 100 events) with no
                                search, e.g. the rates of an earlier report`;

/** Whether `nats-server` can be run from PATH. */
export function natsServerOnPath(): boolean {
  try {
    execFileSync('nats-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function number(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= min || n > max)
    throw new Error(`--${name} must be a number in (${min}, ${max}], got '${raw}'`);
  return n;
}

/** Parses `args` (without node and the script); throws with a usage-worthy message on anything wrong. */
export function parseSoakOptions(
  args: readonly string[],
  hasNats = natsServerOnPath(),
): SoakOptions | 'help' {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      minutes: { type: 'string' },
      bus: { type: 'string' },
      fraction: { type: 'string' },
      out: { type: 'string' },
      'run-seconds': { type: 'string' },
      step: { type: 'string' },
      'max-p99': { type: 'string' },
      connections: { type: 'string' },
      'sample-seconds': { type: 'string' },
      fresh: { type: 'boolean' },
      rates: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const bus = values.bus ?? (hasNats ? 'both' : 'embedded');
  if (bus !== 'embedded' && bus !== 'jetstream' && bus !== 'both')
    throw new Error(`--bus must be embedded, jetstream or both, got '${bus}'`);
  if (bus !== 'embedded' && !hasNats) throw new Error(`--bus ${bus} needs nats-server on PATH`);
  return {
    minutes: number('minutes', values.minutes, 10, 0, 24 * 60),
    buses: bus === 'both' ? ['embedded', 'jetstream'] : [bus],
    fraction: number('fraction', values.fraction, 0.7, 0, 1),
    out: values.out ?? 'bench/results/soak.md',
    runSeconds: number('run-seconds', values['run-seconds'], 30, 0, 600),
    stepSeconds: number('step', values.step, 3, 0, 600),
    maxP99Ms: number('max-p99', values['max-p99'], 100, 0, 60_000),
    connections: Math.round(number('connections', values.connections, 256, 0, 10_000)),
    sampleSeconds: number('sample-seconds', values['sample-seconds'], 10, 0, 600),
    fresh: values.fresh ?? false,
    rates: values.rates === undefined ? undefined : parseRates(values.rates),
  };
}

/** `single=N,batch=M`: both modes, each a positive number of requests/s. */
function parseRates(raw: string): Readonly<Record<'single' | 'batch', number>> {
  const rates: Partial<Record<'single' | 'batch', number>> = {};
  for (const part of raw.split(',')) {
    const [mode, value, ...rest] = part.split('=');
    if ((mode !== 'single' && mode !== 'batch') || value === undefined || rest.length > 0 || mode in rates)
      throw new Error(`--rates must be single=N,batch=M, got '${raw}'`);
    rates[mode] = Math.round(number('rates', value, 0, 0, 1_000_000));
  }
  if (rates.single === undefined || rates.batch === undefined)
    throw new Error(`--rates must name both modes (single=N,batch=M), got '${raw}'`);
  return { single: rates.single, batch: rates.batch };
}
