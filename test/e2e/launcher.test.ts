/**
 * `node bin/weir.js` started as a systemd unit, `npx` or a process manager starts it: with none of the launch
 * settings (bin/launch-settings.js) in its environment or on its command line. The process that serves has
 * them all the same (the launcher's own where node has process.execve, else its child), and a signal to the
 * launcher stops Weir as it would stop Weir itself: one drain, Weir's exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { LAUNCH_ENV, LAUNCH_NODE_ARGS } from '../../bin/launch-settings.js';
import { tempDir, waitFor } from '../helpers/weir.ts';

const BIN = join(import.meta.dirname, '../../bin/weir.js');
/** Where node can replace its process image, the launcher becomes Weir, keeping its PID. */
const IN_PLACE = 'execve' in process;
const START_MS = 60_000;
const STOP_MS = 30_000;
/** Long enough that a signal passed on twice would reach Weir before its shutdown ends. */
const SHUTDOWN_TIMEOUT_MS = '1500';

interface Launched {
  readonly launcher: ChildProcess;
  /** The PID of the process that serves, from its log. */
  readonly pid: number;
  readonly url: string;
  output(): string;
}

const launchers: ChildProcess[] = [];
const pids: number[] = [];
const dirs: string[] = [];
const sockets: Socket[] = [];
t.teardown(() => {
  for (const s of sockets) s.destroy();
  for (const l of launchers) if (l.exitCode === null && l.signalCode === null) l.kill('SIGKILL');
  for (const pid of pids) if (running(pid)) process.kill(pid, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Whether `pid` is a Weir still running (not gone, not a zombie, not the PID reused by another program). */
function running(pid: number): boolean {
  try {
    if (/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
    return cmdline(pid).some((arg) => arg.endsWith('bin/weir.js'));
  } catch {
    return false;
  }
}

function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}

/** The environment `pid` started with. */
function environ(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'))
    if (kv.includes('=')) env[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
  return env;
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** `weir start` with only PATH, HOME and `env` in its environment, once the process that serves is ready. */
async function launch(env: Record<string, string> = {}, detached = false): Promise<Launched> {
  const dataDir = tempDir('weir-launcher-');
  dirs.push(dataDir);
  const launcher = spawn(process.execPath, [BIN, 'start', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', WEIR_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  launchers.push(launcher);
  let out = '';
  launcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
  launcher.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const ready = await waitFor(
    () => {
      if (launcher.exitCode !== null || launcher.signalCode !== null)
        throw new Error(`weir exited early (${launcher.exitCode ?? launcher.signalCode}):\n${out}`);
      const line = out.split('\n').find((l) => /^\{.*"url":"http:/.test(l));
      return Promise.resolve(
        line === undefined ? undefined : (JSON.parse(line) as { pid: number; url: string }),
      );
    },
    START_MS,
    'weir to be ready',
  );
  pids.push(ready.pid);
  return { launcher, pid: ready.pid, url: ready.url, output: () => out };
}

/** Polls for the launcher's exit; its exit code, or the signal that ended it. */
async function ended(l: Launched): Promise<number | string> {
  const { launcher } = l;
  await waitFor(
    () => Promise.resolve(launcher.exitCode !== null || launcher.signalCode !== null ? true : undefined),
    STOP_MS,
    `the launcher to exit; its output:\n${l.output().slice(-4000)}`,
  );
  return launcher.exitCode ?? launcher.signalCode!;
}

/** The signal of each shutdown Weir logged it began. */
function shutdowns(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"msg":"shutting down"'))
    .map((l) => (JSON.parse(l) as { signal: string }).signal);
}

/**
 * Sends part of a capture request, so Weir's shutdown waits for it (WEIR_SHUTDOWN_TIMEOUT_MS), once Weir
 * has read what was sent: the connection's receive queue in /proc/net/tcp is empty.
 */
async function requestInProgress(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    'POST /batch/ HTTP/1.1\r\nHost: weir\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"api_key":',
  );
  const hex = (n: number): string => n.toString(16).toUpperCase().padStart(4, '0');
  const unread = (): number | undefined => {
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(`:${hex(socket.remotePort!)}`) && f[2]?.endsWith(`:${hex(socket.localPort!)}`))
        return parseInt(f[4]!.split(':')[1]!, 16);
    }
    return undefined;
  };
  await waitFor(() => Promise.resolve(unread() === 0 ? true : undefined), 10_000, 'Weir to read the request');
  return socket;
}

/** Runs `weir ARGS…` without the settings, to its exit. */
function runBare(args: string[]): Promise<number | null> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

await t.test('without the settings, the Weir that serves has them, and SIGTERM drains it', async (t) => {
  const l = await launch();
  const env = environ(l.pid);
  for (const [key, value] of Object.entries(LAUNCH_ENV)) t.equal(env[key], value, `${key}=${value}`);
  for (const arg of LAUNCH_NODE_ARGS) t.ok(cmdline(l.pid).includes(arg), `node ${arg}`);
  if (IN_PLACE) t.equal(l.pid, l.launcher.pid, 'in place: the PID its supervisor started');
  else t.equal(parentOf(l.pid), l.launcher.pid, 'the child of the launcher');
  t.equal((await fetch(`${l.url}/_ready`)).status, 200, 'it serves');
  l.launcher.kill('SIGTERM');
  t.equal(await ended(l), 0, 'the launcher exits 0, as Weir did');
  t.same(shutdowns(l.output()), ['SIGTERM'], 'Weir drained once');
  t.notOk(running(l.pid), 'Weir is gone');
});

await t.test('a signal to the launcher and Weir at once (Ctrl-C, systemd) is one to Weir', async (t) => {
  const l = await launch({ WEIR_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_TIMEOUT_MS }, true);
  await requestInProgress(l.url);
  // The launcher leads a process group of its own, Weir in it: a terminal's Ctrl-C signals the whole group.
  process.kill(-l.launcher.pid!, 'SIGINT');
  t.equal(await ended(l), 0, 'exit 0: not a second signal cutting the shutdown short');
  t.same(shutdowns(l.output()), ['SIGINT'], 'Weir drained once');
  t.notMatch(l.output(), /again during the shutdown/);
});

await t.test('a second SIGTERM to the launcher cuts the shutdown short, as it does Weir', async (t) => {
  const l = await launch({ WEIR_SHUTDOWN_TIMEOUT_MS: '60000' });
  await requestInProgress(l.url);
  l.launcher.kill('SIGTERM');
  await waitFor(
    () => Promise.resolve(shutdowns(l.output()).length > 0 ? true : undefined),
    STOP_MS,
    'the shutdown to begin',
  );
  l.launcher.kill('SIGTERM');
  t.equal(await ended(l), 3, 'exit 3');
  t.match(l.output(), /"msg":"SIGTERM again during the shutdown: exiting/, 'Weir says why');
});

await t.test('Weir does not outlive a launcher killed with SIGKILL', async (t) => {
  const l = await launch();
  l.launcher.kill('SIGKILL');
  t.equal(await ended(l), 'SIGKILL');
  await waitFor(() => Promise.resolve(running(l.pid) ? undefined : true), STOP_MS, 'Weir to end');
  t.pass('Weir ended');
});

await t.test('settings a user gave are theirs, and WEIR_LAUNCH_SETTINGS=false adds none', async (t) => {
  const [own, off] = await Promise.all([
    launch({ MALLOC_ARENA_MAX: '4', NODE_OPTIONS: '--max-semi-space-size=32' }),
    launch({ WEIR_LAUNCH_SETTINGS: 'false' }),
  ]);
  t.equal(own.pid, own.launcher.pid, 'nothing to add: node starts once');
  t.equal(environ(own.pid)['MALLOC_ARENA_MAX'], '4');
  t.notOk(
    LAUNCH_NODE_ARGS.some((arg) => cmdline(own.pid).includes(arg)),
    'no semi-space flag beside the one the user gave',
  );
  t.equal(off.pid, off.launcher.pid, 'off: node starts once');
  t.notOk('MALLOC_ARENA_MAX' in environ(off.pid), 'without the arenas setting');
  t.notOk(
    LAUNCH_NODE_ARGS.some((arg) => cmdline(off.pid).includes(arg)),
    'and without the semi-space flag',
  );
  for (const l of [own, off]) l.launcher.kill('SIGTERM');
  t.equal(await ended(own), 0);
  t.equal(await ended(off), 0, 'Weir takes WEIR_LAUNCH_SETTINGS as no unknown setting');
});

await t.test('the exit codes of a command pass through the launcher', async (t) => {
  t.equal(await runBare(['--help']), 0, '--help: 0');
  t.equal(await runBare(['no-such-command']), 2, 'a usage error: 2');
  t.equal(await runBare([]), 2, 'no command: 2');
});
