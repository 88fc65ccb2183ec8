/**
 * Test harness: a real Weir (real uWS on loopback, real chDB) in the test process, on a free port and a
 * fresh data directory, with known keys. chDB allows one data directory per process, so a test file starts
 * one Weir; tests that need a separate process (signals, restarts) use `spawnWeir`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { LAUNCH_ENV, LAUNCH_NODE_ARGS } from '../../bin/launch-settings.js';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import type { Row } from '../../src/core/ports.ts';
import { chooseTransport } from '../../src/http/choose-transport.ts';
import type { TransportName } from '../../src/http/transport.ts';
import { startWeir, type Weir } from '../../src/main.ts';

export const PROJECT_API_KEY = 'phc_test_project_key_0000000000000000000000';
export const PERSONAL_API_KEY = 'phx_test_personal_key_000000000000000000000';

export interface TestWeir {
  readonly weir: Weir;
  readonly url: string;
  readonly dataDir: string;
  /** Runs ClickHouse SQL on the store and returns the rows. */
  rows<T = Row>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * The HTTP transport the tests' Weirs run on: `auto` (uWS where its binary loads), or what
 * WEIR_TEST_HTTP_TRANSPORT names, which test/helpers/node-http-rerun.ts sets to run the HTTP-facing
 * files again on Node's http.
 */
export const TEST_HTTP_TRANSPORT = (process.env['WEIR_TEST_HTTP_TRANSPORT'] ?? 'auto') as
  'auto' | 'uws' | 'node';

/** The transport `TEST_HTTP_TRANSPORT` comes to on this Node.js, for tests whose expectations differ. */
export function testTransport(): TransportName {
  return chooseTransport(TEST_HTTP_TRANSPORT).transport.name;
}

export function tempDir(prefix = 'weir-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startTestWeir(env: Record<string, string> = {}): Promise<TestWeir> {
  const dataDir = env['WEIR_DATA_DIR'] ?? tempDir();
  const config = loadConfig({
    WEIR_PORT: '0',
    WEIR_DATA_DIR: dataDir,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: PROJECT_API_KEY,
    WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_API_KEY,
    WEIR_LOG_LEVEL: process.env['WEIR_TEST_LOG_LEVEL'] ?? 'silent',
    WEIR_HTTP_TRANSPORT: TEST_HTTP_TRANSPORT,
    ...env,
  });
  const weir = await startWeir(config, createLogger(config.logLevel));
  let closed = false;
  return {
    weir,
    url: weir.url,
    dataDir,
    rows: (sql, params) => weir.store.query(sql, params),
    async close() {
      if (closed) return;
      closed = true;
      await weir.close();
      if (env['WEIR_DATA_DIR'] === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface HttpResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown;
}

export async function post(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<HttpResult> {
  const res = await fetch(url, { method: 'POST', body, headers });
  return toResult(res);
}

export async function request(url: string, init: RequestInit = {}): Promise<HttpResult> {
  return toResult(await fetch(url, init));
}

async function toResult(res: Response): Promise<HttpResult> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Node's arguments for `weir ARGS…` with the launch settings given, as the benches start it (with LAUNCH_ENV
 * in its environment): the launcher then runs Weir in the process spawned, whose PID and signals are Weir's.
 * test/e2e/launcher.test.ts starts it without them.
 */
export function weirArgs(args: readonly string[]): string[] {
  return [...LAUNCH_NODE_ARGS, join(import.meta.dirname, '../../bin/weir.js'), ...args];
}
export { LAUNCH_ENV };

export interface SpawnedWeir {
  readonly child: ChildProcess;
  readonly url: string;
  readonly dataDir: string;
  /** stderr and stdout so far, for failure messages. */
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Starts `weir start` as a child process (for signal and restart tests) and waits until it is ready. */
export async function spawnWeir(
  dataDir: string,
  env: Record<string, string> = {},
  options: { bootstrapKeys?: boolean } = {},
): Promise<SpawnedWeir> {
  const keys =
    options.bootstrapKeys === false
      ? {}
      : {
          WEIR_BOOTSTRAP_PROJECT_API_KEY: PROJECT_API_KEY,
          WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_API_KEY,
        };
  const child = spawn(process.execPath, weirArgs(['start']), {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      ...LAUNCH_ENV,
      WEIR_PORT: '0',
      WEIR_DATA_DIR: dataDir,
      WEIR_HTTP_TRANSPORT: TEST_HTTP_TRANSPORT,
      ...keys,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let url: string;
  try {
    url = await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`weir exited early (${child.exitCode}):\n${out}`);
        return Promise.resolve(/"url":"(http:\/\/[^"]+)"/.exec(out)?.[1]);
      },
      60_000,
      'weir to start',
    );
  } catch (err) {
    // A Weir that never came up (a store it cannot open, say) must not outlive the test that started it.
    if (child.exitCode === null) child.kill('SIGKILL');
    throw err;
  }
  return { child, url, dataDir, output: () => out, exited };
}

/** Runs `weir ARGS…` to its exit, with only PATH, HOME and `env` in its environment. */
export function runWeir(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, weirArgs(args), {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '',
        ...LAUNCH_ENV,
        WEIR_HTTP_TRANSPORT: TEST_HTTP_TRANSPORT,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `weir sql` as the operator would and returns its exit code, stdout and stderr. */
export function weirSql(
  dataDir: string,
  sql: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runWeir(['sql', '--data-dir', dataDir, sql]);
}
