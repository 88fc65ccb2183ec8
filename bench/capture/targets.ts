/**
 * The servers under test, each a child process on 127.0.0.1: Weir (`node bin/weir.js start` on a fresh
 * data directory) and the bare uWS ceiling. Both expose the same handle so a scenario never asks which
 * one it is measuring.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  REPO_ROOT,
  freePort,
  processCpuSeconds,
  spawnTracked,
  stopChild,
  waitUntilReady,
} from './child-processes.ts';
import { API_KEY } from './payloads.ts';
import { readWeirCounters, type WeirCounters } from './weir-metrics.ts';

export type TargetKind = 'weir' | 'bare-uws';

export const HOST = '127.0.0.1';

export interface TargetSnapshot {
  /** CPU seconds used by the server process so far (all threads), if /proc is readable. */
  readonly cpuSeconds: number | undefined;
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
  readonly pid: number;
  snapshot(): Promise<TargetSnapshot>;
  /**
   * Waits (at most `timeoutMs`) until work left from an earlier run is done — an overloaded Weir still
   * commits what it accepted after the clients gave up — so it is not billed to the next run.
   */
  settle(timeoutMs: number): Promise<void>;
  log(): ServerLog;
  /** Stops the server (SIGTERM) and resolves with its exit code, or the signal that ended it. */
  stop(): Promise<number | string>;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 20_000;
const LOG_SAMPLES = 5;

/** The environment without any WEIR_* variable of the caller's: Weir refuses unknown ones. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('WEIR_')) env[key] = value;
  return env;
}

function collectLog(child: ChildProcess): () => ServerLog {
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

async function startChild(
  kind: TargetKind,
  args: readonly string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
  onStopped: () => void,
): Promise<Target> {
  const child = spawnTracked(process.execPath, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = collectLog(child);
  const baseUrl = `http://${HOST}:${port}`;
  try {
    await waitUntilReady(`${baseUrl}${readyPath}`, child, READY_TIMEOUT_MS);
  } catch (err) {
    await stopChild(child, 2000);
    onStopped();
    throw new Error(`${kind} did not start: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  const pid = child.pid!;
  return {
    kind,
    port,
    pid,
    async snapshot() {
      return {
        cpuSeconds: processCpuSeconds(pid),
        weir: kind === 'weir' ? await readWeirCounters(baseUrl) : undefined,
      };
    },
    async settle(timeoutMs) {
      if (kind !== 'weir') return;
      const deadline = Date.now() + timeoutMs;
      while ((await readWeirCounters(baseUrl)).pendingEvents > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
    },
    log,
    async stop() {
      const how = await stopChild(child, STOP_GRACE_MS);
      onStopped();
      return how;
    },
  };
}

/** The bare uWS ceiling server. */
export async function startBareUws(): Promise<Target> {
  const port = await freePort();
  const args = [
    join(REPO_ROOT, 'bin/run-ts.js'),
    join(REPO_ROOT, 'bench/capture/bare-uws-server.ts'),
    String(port),
  ];
  return startChild('bare-uws', args, cleanEnv(), port, '/_ready', () => undefined);
}

/** Weir, embedded, on a fresh data directory that is removed when it stops. */
export async function startWeir(): Promise<Target> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-bench-'));
  const env = {
    ...cleanEnv(),
    WEIR_HOST: HOST,
    WEIR_PORT: String(port),
    WEIR_DATA_DIR: dataDir,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: API_KEY,
    WEIR_LOG_LEVEL: 'warn',
  };
  const removeData = (): void => rmSync(dataDir, { recursive: true, force: true });
  return startChild('weir', [join(REPO_ROOT, 'bin/weir.js'), 'start'], env, port, '/_ready', removeData);
}
