/**
 * The processes the benchmark starts (Weir, the bare uWS ceiling, the load generator): spawned on loopback,
 * tracked in one set, and killed whatever way the runner ends — a benchmark that leaves a server behind
 * skews the next run on a 2-core machine.
 */
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The repository root, so the bench runs the same from any working directory. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const tracked = new Set<ChildProcess>();

function killAll(): void {
  for (const child of tracked)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

// 'exit' handlers must be synchronous, so a leftover child gets SIGKILL, not a graceful stop.
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

/** Spawns a child that is killed if the runner exits first. */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  tracked.add(child);
  child.once('exit', () => tracked.delete(child));
  return child;
}

/** Resolves with the exit code (or the signal name) once the child has exited. */
export function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
}

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`; resolves with how it ended. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<number | string> {
  if (child.exitCode !== null || child.signalCode !== null) return exited(child);
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<'killed'>((resolve) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('killed');
    }, graceMs);
  });
  const how = await Promise.race([exited(child), forced]);
  clearTimeout(timer);
  if (how === 'killed') await exited(child);
  return how;
}

/** A port free on 127.0.0.1 now (another process could take it before the child binds; fine for a bench). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** Polls `GET url` until it answers 200, failing if the child exits or `timeoutMs` passes. */
export async function waitUntilReady(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`process exited before ready (${child.exitCode ?? child.signalCode})`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // Not listening yet: keep polling until the deadline.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} was not ready within ${timeoutMs} ms`);
}

let clockTicks: number | undefined;

/**
 * CPU seconds (user + system, all threads) a process has used, from /proc — this counts chDB's own
 * threads in Weir, which process.cpuUsage() inside Weir would too but the runner cannot call. Undefined off
 * Linux.
 */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime + stime) ? (utime + stime) / clockTicks : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs a bench's `main` and exits with its code; a throw is printed and exits 1, and the 'exit' handler
 * above kills any server, nats-server or generator still running.
 */
export function runBench(main: () => Promise<number>): void {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
