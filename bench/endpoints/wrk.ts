/**
 * The endpoints benchmark's second set of callers: `wrk` (a C load generator, Debian's `wrk` package), when
 * it is on PATH. Its callers cost less CPU per request than Node's on the same two cores, so its figures are
 * closer to what the server alone can do; the Node callers (load.ts) stay the benchmark's own, dependable
 * ones. One thread, `connections` keep-alive connections, each a closed-loop caller, for `seconds`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  readonly requests: number;
  readonly perSecond: number;
  /** Milliseconds, from wrk's latency distribution and thread stats. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Responses that were not 2xx or 3xx. */
  readonly non2xx: number;
  readonly seconds: number;
}

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** POSTs `body` to `url` with `headers` from `connections` callers for `seconds`; wrk's own figures. */
export async function runWrk(options: {
  readonly url: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
}): Promise<WrkResult> {
  const script = join(tmpdir(), `weir-bench-wrk-${process.pid}.lua`);
  const lua = [
    'wrk.method = "POST"',
    `wrk.body = ${luaString(options.body)}`,
    ...Object.entries(options.headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
  ].join('\n');
  writeFileSync(script, `${lua}\n`);
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        'wrk',
        ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--latency', '-s', script, options.url],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (text += d));
      child.once('error', reject);
      child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk: ${text}`))));
    });
    return parseWrk(out, options.seconds);
  } finally {
    rmSync(script, { force: true });
  }
}

/** A Lua string literal of any text (JSON bodies have quotes and backslashes). */
function luaString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** wrk's durations (`685.00us`, `2.85ms`, `1.02s`) in milliseconds. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`wrk: cannot read the duration '${text}'`);
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

export function parseWrk(out: string, seconds: number): WrkResult {
  const percentile = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out);
    if (!m) throw new Error(`wrk: no ${p}% latency in:\n${out}`);
    return ms(m[1]!);
  };
  const stats = /^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)/m.exec(out);
  const total = /(\d+) requests in ([\d.]+)(\w+)/.exec(out);
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!stats || !total || !rate) throw new Error(`wrk: unexpected output:\n${out}`);
  return {
    requests: Number(total[1]),
    perSecond: Number(rate[1]),
    p50: percentile('50'),
    p99: percentile('99'),
    max: ms(stats[3]!),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    seconds,
  };
}
