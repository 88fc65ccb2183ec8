/**
 * The flags of `weir bench capture` and `weir bench compare`, parsed with node:util parseArgs and checked
 * before anything is sent, so a typo fails at once with the flag it is about rather than after a run.
 */
import { parseArgs } from 'node:util';
import type { CaptureBenchSpec } from '../loadgen/capture-bench.ts';
import { EVENTS_PER_BATCH } from '../loadgen/payloads.ts';

export const BENCH_USAGE = `usage: weir bench capture --url URL --api-key KEY [options]
       weir bench compare A.json B.json [--plot FILE.svg]

capture: benchmarks a PostHog-compatible capture endpoint (/i/v0/e/, /batch/) with an open-loop load
generator (latency from each request's due time, so coordinated omission is corrected)
  --url URL            the capture endpoint's base URL, http or https (e.g. http://127.0.0.1:8000)
  --api-key KEY        the project API key (phc_…) every event carries
  --rate R             requests per second, fixed, open loop (default 100)
  --max                instead of --rate: search the highest rate sustained with p99 within --max-p99
  --duration S         seconds of the run, or of each step of --max (default 10; with --max 3)
  --connections C      keep-alive connections, one request in flight on each (default 256)
  --mode single|batch  one event per request to /i/v0/e/, or batches to /batch/ (default single)
  --batch-size N       events per batch request (default ${EVENTS_PER_BATCH})
  --max-p99 MS         the p99 bound of --max (default 100)
  --label NAME         what compare and the plot call this run (default host and mode)
  --out DIR            where the result JSON (with the HDR histograms) and the SVG plot go (default .)

compare: two result files side by side, B against A, with the differences
  --plot FILE.svg      also plot both latency distributions in one SVG
`;

/** A bad flag or argument: the CLI prints it with the usage and exits 2. */
export class BenchUsageError extends Error {}

export interface CaptureOptions {
  readonly spec: CaptureBenchSpec;
  readonly outDir: string;
}

function number(
  flag: string,
  raw: string | undefined,
  fallback: number,
  max: number,
  integer = false,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0 || n > max || (integer && !Number.isInteger(n)))
    throw new BenchUsageError(
      `--${flag} must be a ${integer ? 'whole number' : 'number'} in (0, ${max}], got '${raw}'`,
    );
  return n;
}

/** parseArgs, with its errors (unknown flag, missing value) turned into usage errors naming the flag. */
function parse<R>(run: () => R): R {
  try {
    return run();
  } catch (err) {
    throw new BenchUsageError(err instanceof Error ? err.message : String(err));
  }
}

export function parseCaptureOptions(args: readonly string[]): CaptureOptions | 'help' {
  const { values, positionals } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        'api-key': { type: 'string' },
        rate: { type: 'string' },
        max: { type: 'boolean' },
        duration: { type: 'string' },
        connections: { type: 'string' },
        mode: { type: 'string' },
        'batch-size': { type: 'string' },
        'max-p99': { type: 'string' },
        label: { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }),
  );
  if (values.help) return 'help';
  if (positionals.length > 0)
    throw new BenchUsageError(`capture takes no arguments, got '${positionals.join(' ')}'`);
  if (values.url === undefined)
    throw new BenchUsageError('--url is required: the capture endpoint, e.g. http://127.0.0.1:8000');
  let url: URL;
  try {
    url = new URL(values.url);
  } catch {
    throw new BenchUsageError(`--url must be an http or https URL, got '${values.url}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new BenchUsageError(`--url must be an http or https URL, got '${values.url}'`);
  const apiKey = values['api-key'];
  if (apiKey === undefined || apiKey.trim() === '')
    throw new BenchUsageError('--api-key is required: the project API key (phc_…) the events carry');
  if (values.max && values.rate !== undefined)
    throw new BenchUsageError(
      '--rate and --max exclude each other: a fixed rate, or the search for the highest',
    );
  const mode = values.mode ?? 'single';
  if (mode !== 'single' && mode !== 'batch')
    throw new BenchUsageError(`--mode must be single or batch, got '${mode}'`);
  if (values['batch-size'] !== undefined && mode !== 'batch')
    throw new BenchUsageError('--batch-size applies to --mode batch only');
  const max = values.max ?? false;
  return {
    spec: {
      url,
      apiKey,
      mode,
      batchSize: number('batch-size', values['batch-size'], EVENTS_PER_BATCH, 10_000, true),
      rate: max ? null : number('rate', values.rate, 100, 1_000_000),
      durationMs: number('duration', values.duration, max ? 3 : 10, 3600) * 1000,
      connections: number('connections', values.connections, 256, 10_000, true),
      maxP99Ms: number('max-p99', values['max-p99'], 100, 60_000),
      label: values.label ?? `${url.host} ${mode}`,
    },
    outDir: values.out ?? '.',
  };
}

export interface CompareOptions {
  readonly a: string;
  readonly b: string;
  readonly plot: string | undefined;
}

export function parseCompareOptions(args: readonly string[]): CompareOptions | 'help' {
  const { values, positionals } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: true,
      options: { plot: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }),
  );
  if (values.help) return 'help';
  if (positionals.length !== 2)
    throw new BenchUsageError(`compare takes two result files (A.json B.json), got ${positionals.length}`);
  return { a: positionals[0]!, b: positionals[1]!, plot: values.plot };
}
