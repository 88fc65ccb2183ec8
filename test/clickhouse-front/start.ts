/**
 * Starts the ClickHouse front (test-only, README.md beside this file) for a test, or names the real server the
 * test was told to use instead: `WEIR_TEST_CLICKHOUSE_URL`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ClickHouseForTest {
  /** The HTTP interface's URL (with credentials when a real server's URL carried them). */
  readonly url: string;
  /** The password of user `default` the front was started with (undefined for a real server). */
  readonly password: string | undefined;
  /** True when the tests run against the real server of `WEIR_TEST_CLICKHOUSE_URL`. */
  readonly external: boolean;
  /** Stops the front (SIGTERM) and removes its data directory; the exit code, or null for a real server. */
  stop(): Promise<number | null>;
}

export interface FrontOptions {
  /** The data directory; a fresh one of its own (removed by `stop`) when not given. */
  readonly dataDir?: string;
  readonly password?: string;
  /** How long it may take to print `ready`. */
  readonly timeoutMs?: number;
}

/**
 * The command of the `clickhouse-front` npm script, run without npm: npm does not pass SIGTERM on to the
 * script, and the exit code seen is then the front's own.
 */
function frontCommand(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const [node, ...args] = pkg.scripts['clickhouse-front']!.split(/\s+/);
  if (node !== 'node')
    throw new Error(`unexpected clickhouse-front script: ${pkg.scripts['clickhouse-front']}`);
  return [process.execPath, ...args];
}

/** A front this test started, which it can also take away: for tests of a ClickHouse that stops answering. */
export interface StartedFront extends ClickHouseForTest {
  /** SIGKILL: gone at once, connections refused; its data directory stays (unless it is the front's own). */
  kill(): Promise<void>;
  /** Freezes it (SIGSTOP) and waits until it is stopped: connections are accepted, nothing is answered. */
  pause(): Promise<void>;
  /** Thaws a paused front (SIGCONT). */
  resume(): void;
}

/** Starts a front on a port the system chooses; resolves once it printed `ready 127.0.0.1:PORT`. */
export async function startFront(options: FrontOptions = {}): Promise<StartedFront> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'weir-clickhouse-front-'));
  const [exe, ...args] = frontCommand();
  const child = spawn(
    exe!,
    [
      ...args,
      '--port',
      '0',
      '--data-dir',
      dataDir,
      ...(options.password !== undefined ? ['--password', options.password] : []),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`clickhouse-front did not print ready in time:\n${stdout}${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const ready = /^ready (\S+)$/m.exec(stdout);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`clickhouse-front exited (${code}) before ready:\n${stdout}${stderr}`));
    });
  });
  let stopped: Promise<number | null> | undefined;
  return {
    url: `http://${address}`,
    password: options.password,
    external: false,
    stop: () =>
      (stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const code = await exited;
        if (ownDir) rmSync(dataDir, { recursive: true, force: true });
        return code;
      })()),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async pause() {
      child.kill('SIGSTOP');
      // The signal takes effect when the kernel next schedules the process: wait until /proc says stopped.
      const deadline = Date.now() + 5_000;
      while (!/^\d+ \(.*\) T/.test(readFileSync(`/proc/${child.pid}/stat`, 'utf8'))) {
        if (Date.now() > deadline) throw new Error('clickhouse-front did not stop on SIGSTOP');
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    resume: () => void child.kill('SIGCONT'),
  };
}

/** The real server of `WEIR_TEST_CLICKHOUSE_URL` when it is set, else a front started for the test. */
export async function clickHouseForTest(options: FrontOptions = {}): Promise<ClickHouseForTest> {
  const url = process.env['WEIR_TEST_CLICKHOUSE_URL'];
  if (!url) return startFront(options);
  return { url, password: undefined, external: true, stop: () => Promise.resolve(null) };
}

/** The server's URL without credentials and the user and password apart, as the server store is configured. */
export function serverAccess(ch: ClickHouseForTest): {
  url: string;
  user: string;
  password: string | undefined;
} {
  const at = new URL(ch.url);
  const user = decodeURIComponent(at.username) || 'default';
  const password = decodeURIComponent(at.password) || ch.password;
  at.username = '';
  at.password = '';
  return { url: at.toString().replace(/\/$/, ''), user, password };
}
