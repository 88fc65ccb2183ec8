/**
 * Where a `--cpu-prof` profile's time went, for a report: self time by function and by source file, as
 * shares of the busy time (every sample but `(idle)`). Take the profile with
 * `BENCH_WEIR_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR'`; each thread writes one, thread 0 is the main one.
 * Usage: `node bin/run-ts.js bench/capture/cpu-profile-summary.ts FILE.cpuprofile [TOP] [--from S --to S]`,
 * where --from and --to keep the samples between those seconds of the profile (a run's span, say).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const IDLE = '(idle)';

/** The path of one of the repository's own files from its root, or undefined. */
function inRepo(url: string): string | undefined {
  if (url.includes('node_modules/')) return undefined;
  return /\/((?:src|bench|bin)\/.*)$/.exec(url.replace(/^file:\/\//, ''))?.[1];
}

/** A file as a reader knows it: node's own modules by name, the repository's by path from src/ or bench/. */
function fileOf(url: string): string {
  if (url === '') return '(native)';
  if (url.startsWith('node:')) return url;
  const path = url.replace(/^file:\/\//, '');
  const repoPath = inRepo(url);
  if (repoPath) return repoPath;
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  return inModules ? `${inModules[1]!} (npm)` : basename(path);
}

function functionOf(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  // tsx's output for the repository's own files does not keep their lines; node's and npm's modules do.
  const line = inRepo(frame.url) ? '' : `:${frame.lineNumber + 1}`;
  return `${name} ${fileOf(frame.url)}${line}`;
}

/** Microseconds of self time by key, between `fromUs` and `toUs` after the profile's start. */
function selfTime(
  profile: Profile,
  key: (frame: CallFrame) => string,
  fromUs: number,
  toUs: number,
): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const out = new Map<string, number>();
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample's time is the gap to the next one (V8 records the delta before each sample).
    at += profile.timeDeltas[i] ?? 0;
    const next = profile.timeDeltas[i + 1] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const frame = byId.get(profile.samples[i]!);
    if (frame === undefined) continue;
    const k = frame.functionName === IDLE ? IDLE : key(frame);
    out.set(k, (out.get(k) ?? 0) + next);
  }
  return out;
}

function table(title: string, times: Map<string, number>, top: number): string {
  const idle = times.get(IDLE) ?? 0;
  const total = [...times.values()].reduce((a, b) => a + b, 0);
  const busy = total - idle;
  const rows = [...times]
    .filter(([k]) => k !== IDLE)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, us]) => `| ${k.replace(/\|/g, '\\|')} | ${((us / busy) * 100).toFixed(1)}% |`);
  return [
    `${title}: busy ${(busy / 1e6).toFixed(1)} s of ${(total / 1e6).toFixed(1)} s sampled`,
    '',
    '| self time in | share of busy |',
    '| --- | ---: |',
    ...rows,
  ].join('\n');
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { from: { type: 'string' }, to: { type: 'string' } },
});
const [file, topArg] = positionals;
if (file === undefined) {
  console.error('usage: cpu-profile-summary.ts FILE.cpuprofile [TOP] [--from S --to S]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const top = Number(topArg ?? 25);
const fromUs = Number(values.from ?? 0) * 1e6;
const toUs = values.to === undefined ? Infinity : Number(values.to) * 1e6;
console.log(table('by function', selfTime(profile, functionOf, fromUs, toUs), top));
console.log('');
console.log(
  table(
    'by file',
    selfTime(profile, (f) => fileOf(f.url), fromUs, toUs),
    top,
  ),
);
