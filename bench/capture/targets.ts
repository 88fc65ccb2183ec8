/**
 * The servers under test, each a child process on 127.0.0.1: Weir (`node bin/weir.js start` on a fresh
 * data directory, on either HTTP transport) and the bare ceiling of each transport (uWS, Node's http);
 * jetstream-target.ts adds Weir's roles over NATS. All expose the same handle so a scenario never asks which
 * one it is measuring.
 */
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAUNCH_ENV, LAUNCH_NODE_ARGS } from '../../bin/launch-settings.js';
import {
  REPO_ROOT,
  freePort,
  processCpuSeconds,
  spawnTracked,
  stopChild,
  waitUntilReady,
} from './child-processes.ts';
import { API_KEY } from './bench-key.ts';
import type { BenchTransport } from './options.ts';
import { readWeirCounters, type WeirCounters } from './weir-metrics.ts';

/** `weir` is Weir on uWS, `weir-node` Weir on Node's http; `bare-http` the bare server on Node's http. */
export type TargetKind = 'weir' | 'bare-uws' | 'weir-node' | 'bare-http' | 'weir-jetstream';

/** The kinds whose /metrics are Weir's. */
const WEIR_KINDS: ReadonlySet<TargetKind> = new Set(['weir', 'weir-node', 'weir-jetstream']);

export const HOST = '127.0.0.1';

export interface TargetSnapshot {
  /** CPU seconds used by the server's processes so far (all threads), if /proc is readable. */
  readonly cpuSeconds: number | undefined;
  /** The same by process, when the target is more than one (capture, ingest, nats-server). */
  readonly cpuSecondsByRole: Readonly<Record<string, number | undefined>>;
  /** Weir's counters; undefined for the bare server. */
  readonly weir: WeirCounters | undefined;
}

export interface ServerLog {
  /** Lines the server logged at warn or above (Weir runs with WEIR_LOG_LEVEL=warn). */
  readonly warnings: number;
  /** The first few of them, cut short. */
  readonly samples: readonly string[];
}

export interface Target {
  readonly kind: TargetKind;
  readonly port: number;
  /** Every process of the server under test: its CPU is the server's, not "other" load. */
  readonly pids: readonly number[];
  /**
   * Whether a 200 comes before the events are stored (a bus between capture and ingest): then a run's stored
   * events are counted once ingest has caught up, and a rate is sustained only if it does.
   */
  readonly decoupled: boolean;
  snapshot(): Promise<TargetSnapshot>;
  /**
   * Waits (at most `timeoutMs`) until work left from an earlier run is done — an overloaded Weir still
   * commits what it accepted after the clients gave up — so it is not billed to the next run. Resolves
   * whether it was done in time.
   */
  settle(timeoutMs: number): Promise<boolean>;
  log(): ServerLog;
  /** Stops the server (SIGTERM) and resolves with its exit code, or the signal that ended it. */
  stop(): Promise<number | string>;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 20_000;
const LOG_SAMPLES = 5;

/** The environment without any WEIR_* variable of the caller's: Weir refuses unknown ones. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('WEIR_')) env[key] = value;
  return env;
}

/**
 * Counts a server's warn/error log lines and keeps a few. With `BENCH_SERVER_LOG_DIR` set, everything the
 * server writes also goes to `DIR/NAME-PID.log` (for `--trace-gc` and the like in BENCH_WEIR_NODE_ARGS).
 */
function collectLog(name: string, child: ChildProcess): () => ServerLog {
  const dir = process.env['BENCH_SERVER_LOG_DIR'];
  if (dir) {
    const file = createWriteStream(join(dir, `${name}-${child.pid ?? 'unknown'}.log`));
    child.stdout?.pipe(file, { end: false });
    child.stderr?.pipe(file, { end: false });
    child.once('exit', () => file.end());
  }
  let warnings = 0;
  const samples: string[] = [];
  let rest = '';
  const onChunk = (chunk: Buffer): void => {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const level = /"level":(\d+)/.exec(line)?.[1];
      // pino levels: 40 warn, 50 error, 60 fatal. Non-JSON lines (the bootstrap banner) are not warnings.
      if (level === undefined || Number(level) < 40) continue;
      warnings++;
      if (samples.length < LOG_SAMPLES) samples.push(line.slice(0, 400));
    }
  };
  child.stdout?.on('data', onChunk);
  child.stderr?.on('data', onChunk);
  return () => ({ warnings, samples: [...samples] });
}

/** One server process on 127.0.0.1, started and answering 200 on its ready path. */
export interface ServerProcess {
  readonly pid: number;
  readonly baseUrl: string;
  log(): ServerLog;
  stop(): Promise<number | string>;
}

/** Spawns `node ARGS` and waits until `readyPath` answers 200; a server that does not start is stopped. */
export async function startServer(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
): Promise<ServerProcess> {
  const child = spawnTracked(process.execPath, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = collectLog(name, child);
  const baseUrl = `http://${HOST}:${port}`;
  try {
    await waitUntilReady(`${baseUrl}${readyPath}`, child, READY_TIMEOUT_MS);
  } catch (err) {
    await stopChild(child, 2000);
    throw new Error(`${name} did not start: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return { pid: child.pid!, baseUrl, log, stop: () => stopChild(child, STOP_GRACE_MS) };
}

async function startChild(
  kind: TargetKind,
  args: readonly string[],
  env: Record<string, string>,
  port: number,
  onStopped: () => void,
): Promise<Target> {
  let server: ServerProcess;
  try {
    server = await startServer(kind, args, env, port, '/_ready');
  } catch (err) {
    onStopped();
    throw err;
  }
  const { pid, baseUrl } = server;
  const weir = WEIR_KINDS.has(kind);
  return {
    kind,
    port,
    pids: [pid],
    decoupled: false,
    async snapshot() {
      return {
        cpuSeconds: processCpuSeconds(pid),
        cpuSecondsByRole: {},
        weir: weir ? await readWeirCounters(baseUrl) : undefined,
      };
    },
    async settle(timeoutMs) {
      if (!weir) return true;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if ((await readWeirCounters(baseUrl)).pendingEvents === 0) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    log: () => server.log(),
    async stop() {
      const how = await server.stop();
      onStopped();
      return how;
    },
  };
}

/** The bare uWS ceiling server. */
export function startBareUws(): Promise<Target> {
  return startBare('bare-uws', 'bench/capture/bare-uws-server.ts');
}

/** The bare ceiling server on Node's http. */
export function startBareHttp(): Promise<Target> {
  return startBare('bare-http', 'bench/capture/bare-http-server.ts');
}

/** The bare ceiling of a transport: what its Weir is measured against. */
export function startBareFor(transport: BenchTransport): Promise<Target> {
  return transport === 'uws' ? startBareUws() : startBareHttp();
}

async function startBare(kind: TargetKind, script: string): Promise<Target> {
  const port = await freePort();
  const args = [join(REPO_ROOT, 'bin/run-ts.js'), join(REPO_ROOT, script), String(port)];
  return startChild(kind, args, cleanEnv(), port, () => undefined);
}

/**
 * The allocator and heap settings Weir's launcher (bin/weir.js) runs it with (docs/operations.md), so a bench
 * measures what users run. Given here, they are in effect already and the launcher runs Weir in the process
 * the bench spawned, whose PID the bench measures.
 */
export const WEIR_LAUNCH_ENV = LAUNCH_ENV;
export const WEIR_LAUNCH_NODE_ARGS = LAUNCH_NODE_ARGS;

/**
 * The launch settings, then settings to try without editing the code:
 * BENCH_WEIR_ENV='WEIR_STORE_FSYNC=false WEIR_CAPTURE_THREADS=0' (a variable given there wins).
 */
export function benchWeirEnv(): Record<string, string> {
  return {
    ...WEIR_LAUNCH_ENV,
    ...extraWeirEnv(),
  };
}

function extraWeirEnv(): Record<string, string> {
  return Object.fromEntries(
    (process.env['BENCH_WEIR_ENV'] ?? '')
      .split(' ')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/**
 * Node flags for Weir alone (`BENCH_WEIR_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR'`, GC tracing), not for the
 * generator or the bare server.
 */
export function benchWeirNodeArgs(): string[] {
  return [...WEIR_LAUNCH_NODE_ARGS, ...nodeArgs('BENCH_WEIR_NODE_ARGS')];
}

/** Node flags from an environment variable, split on spaces. */
export function nodeArgs(variable: string): string[] {
  return (process.env[variable] ?? '').split(' ').filter((a) => a !== '');
}

/**
 * Weir, embedded, on a fresh data directory that is removed when it stops; on the transport given, or the
 * one Weir chooses itself (WEIR_HTTP_TRANSPORT=auto). `env` is the scenario's own settings (WEIR_GEOIP=on):
 * applied after BENCH_WEIR_ENV, so a scenario's variable is what it measures.
 */
export async function startWeir(
  transport?: BenchTransport,
  env: Readonly<Record<string, string>> = {},
): Promise<Target> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-bench-'));
  const childEnv = {
    ...cleanEnv(),
    WEIR_HOST: HOST,
    WEIR_PORT: String(port),
    WEIR_DATA_DIR: dataDir,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: API_KEY,
    WEIR_LOG_LEVEL: 'warn',
    ...benchWeirEnv(),
    ...env,
    // After BENCH_WEIR_ENV: the report names the transport, so nothing may run Weir on another. Named, uWS
    // refuses to start where it does not load rather than fall back to Node's http.
    ...(transport === undefined ? {} : { WEIR_HTTP_TRANSPORT: transport }),
  };
  const removeData = (): void => rmSync(dataDir, { recursive: true, force: true });
  return startChild(
    transport === 'node' ? 'weir-node' : 'weir',
    [...benchWeirNodeArgs(), join(REPO_ROOT, 'bin/weir.js'), 'start'],
    childEnv,
    port,
    removeData,
  );
}
