/**
 * The shape of a benchmark run's results (what bench/results/capture-*.json holds): for each HTTP transport,
 * Weir's figures as ratios to that transport's bare ceiling; Node's http's as ratios to uWS's; and issue 2's
 * targets checked against the uWS pair.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { REPO_ROOT } from './child-processes.ts';
import type { BenchOptions, BenchTransport } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import type { FixedRateResult } from './scenario-fixed-rate.ts';
import type { MaxThroughputResult } from './scenario-max-throughput.ts';
import type { ServerLog } from './targets.ts';

export interface TargetResults {
  readonly fixed: FixedRateResult;
  readonly max: MaxThroughputResult | undefined;
  readonly log: ServerLog;
  /** How the server ended on SIGTERM: 0 is a clean drain. */
  readonly exit: number | string;
}

/**
 * One server's figure divided by another's (throughput: higher is better; latency: lower is better): Weir's
 * by its bare ceiling's, or, across transports, Node's http's by uWS's.
 */
export interface Ratios {
  readonly fixedP50: number | undefined;
  readonly fixedP99: number | undefined;
  readonly fixedP999: number | undefined;
  readonly saturation: number | undefined;
  readonly sustained: number | undefined;
  /** Events/s at the highest rate sustained (stored for Weir, answered 200 for a bare server). */
  readonly sustainedEvents?: number | undefined;
}

export interface ModeResults {
  readonly mode: Mode;
  readonly bare: TargetResults;
  readonly weir: TargetResults;
  readonly ratios: Ratios;
}

export interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean | undefined;
}

/** Node's http against uWS in one mode: Weir on one against Weir on the other, and the bare servers. */
export interface CrossRatios {
  readonly mode: Mode;
  /** Weir on Node's http ÷ Weir on uWS. */
  readonly weir: Ratios;
  /** Bare http ÷ bare uWS. */
  readonly bare: Ratios;
}

export interface BenchResults {
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly weirRevision: string;
  readonly options: BenchOptions;
  /** The uWS pair, bare uWS and Weir on uWS, by mode; empty when uWS was not measured. */
  readonly modes: readonly ModeResults[];
  /** Issue 2's targets, judged on the uWS pair. */
  readonly targets: readonly TargetCheck[];
  /** The transports measured; absent in results made before Node's http was measured, which are uWS's alone. */
  readonly transports?: readonly BenchTransport[];
  /** Why uWS was left out (its binary does not load on this Node.js), when it was. */
  readonly uwsSkipped?: string;
  /** Node's pair, bare http and Weir on Node's http, by mode, when measured. */
  readonly nodeModes?: readonly ModeResults[];
  /** Node's http ÷ uWS by mode, when both were measured. */
  readonly crossRatios?: readonly CrossRatios[];
  /** The figures of issue 2's targets on Node's http: reported beside uWS's bounds, with no target of its own. */
  readonly nodeFigures?: readonly TargetCheck[];
}

function ratio(weir: number | undefined, bare: number | undefined): number | undefined {
  return weir === undefined || bare === undefined || bare === 0 ? undefined : weir / bare;
}

/** Events/s at the highest rate sustained: those stored where the server stores them, else those answered 200. */
export function sustainedEventsPerSecond(t: TargetResults): number | undefined {
  const m = t.max?.sustained?.measurement;
  return m === undefined ? undefined : (m.storedEventsPerSecond ?? m.okEventsPerSecond);
}

/** `weir`'s figures divided by `bare`'s: any two servers measured in one mode, the second over the first. */
export function computeRatios(bare: TargetResults, weir: TargetResults): Ratios {
  const b = bare.fixed.measurement.load.latency;
  const w = weir.fixed.measurement.load.latency;
  return {
    fixedP50: ratio(w.p50, b.p50),
    fixedP99: ratio(w.p99, b.p99),
    fixedP999: ratio(w.p999, b.p999),
    saturation: ratio(weir.max?.saturation.load.okPerSecond, bare.max?.saturation.load.okPerSecond),
    sustained: ratio(weir.max?.sustained?.rate, bare.max?.sustained?.rate),
    sustainedEvents: ratio(sustainedEventsPerSecond(weir), sustainedEventsPerSecond(bare)),
  };
}

/** Node's http ÷ uWS for every mode both pairs were measured in. */
export function computeCrossRatios(uws: readonly ModeResults[], node: readonly ModeResults[]): CrossRatios[] {
  return node.flatMap((n) => {
    const u = uws.find((m) => m.mode === n.mode);
    return u
      ? [{ mode: n.mode, weir: computeRatios(u.weir, n.weir), bare: computeRatios(u.bare, n.bare) }]
      : [];
  });
}

/**
 * The three targets of issue 2, each with the figure it was judged on. Undefined `met`: not measured.
 * `ceiling` names the bare server the ratio is to: the targets are uWS's, and Node's http is held to the same
 * bounds only for comparison.
 */
export function checkTargets(
  modes: readonly ModeResults[],
  options: BenchOptions,
  ceiling = 'bare uWS',
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const batch = modes.find((m) => m.mode === 'batch');
  const single = modes.find((m) => m.mode === 'single');
  if (batch) {
    const stored = batch.weir.max?.sustained?.measurement.storedEventsPerSecond;
    checks.push({
      target: 'batch mode ≥ 50,000 events/s stored (max sustained)',
      measured: stored === undefined ? 'no sustained rate found' : `${Math.round(stored)} events/s`,
      met: options.skipMax ? undefined : stored !== undefined && stored >= 50_000,
    });
  }
  if (single) {
    const r = single.ratios.sustained;
    checks.push({
      target: `single-event max throughput ≥ 40% of ${ceiling}`,
      measured:
        r === undefined
          ? 'not measured'
          : `${Math.round(single.weir.max!.sustained!.rate)} / ${Math.round(single.bare.max!.sustained!.rate)} req/s = ${(r * 100).toFixed(1)}%`,
      met: r === undefined ? (options.skipMax ? undefined : false) : r >= 0.4,
    });
    const m = single.weir.fixed.measurement;
    const clean = m.failed <= m.load.scheduled * 0.001;
    checks.push({
      target: 'single-event p99 ≤ 10 ms at 5,000 req/s',
      measured: `p99 ${m.load.latency.p99.toFixed(2)} ms at ${single.weir.fixed.rate} req/s, ${m.failed} failed`,
      met: single.weir.fixed.rate === 5000 ? m.load.latency.p99 <= 10 && clean : undefined,
    });
  }
  return checks;
}

export function machineInfo(): Record<string, string | number> {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuGeneration: cpuGeneration(),
    cpus: cpus.length,
    totalMemGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
  };
}

/**
 * The CPU's family and model numbers (Linux): a VM's model name is often just "AMD EPYC", and runs on two
 * generations of it differ by more than any change measured here (issue 2's figures moved 2-3× between
 * machines that both said "AMD EPYC").
 */
function cpuGeneration(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name: string): string | undefined =>
      new RegExp(`^${name}\\s*: (.*)$`, 'm').exec(info)?.[1]?.trim();
    return `family ${field('cpu family') ?? '?'} model ${field('model') ?? '?'}`;
  } catch {
    return 'unknown';
  }
}

/** The commit the measured Weir came from, marked dirty when src/ has uncommitted changes. */
export function weirRevision(): string {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--', 'src').length > 0 ? `${commit} (src/ modified)` : commit;
  } catch {
    return 'unknown';
  }
}

/** The command as the person ran it, so the results can be made again. */
export function commandLine(args: readonly string[]): string {
  const quoted = args.map((a) => (/^[\w./=:-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(' ');
  if (process.env['npm_lifecycle_event'] === 'bench:capture')
    return `npm run bench:capture${quoted ? ` -- ${quoted}` : ''}`;
  return `node bin/run-ts.js bench/capture/run.ts${quoted ? ` ${quoted}` : ''}`;
}
