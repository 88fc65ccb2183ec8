/**
 * Weir's roles as separate processes against a real nats-server: `weir capture` and `weir ingest` (or
 * `weir start`) spawned from bin/weir.js, the JetStream stream watched from the test, load generators that
 * record what was answered 200, and the store read back with `weir sql` once ingest has stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { Test } from 'tap';
import { startNatsServer } from './nats-server.ts';
import {
  LAUNCH_ENV,
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  TEST_HTTP_TRANSPORT,
  tempDir,
  waitFor,
  weirArgs,
  weirSql,
} from './weir.ts';

export type RoleCommand = 'start' | 'capture' | 'ingest' | 'query';

export interface RoleProcess {
  readonly command: RoleCommand;
  readonly child: ChildProcess;
  readonly url: string;
  readonly pid: number;
  /** stdout and stderr so far, for failure messages. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no drain, no commit, no ack. */
  kill9(): Promise<void>;
  /** Text of GET /metrics. */
  metrics(): Promise<string>;
}

/** Runs `weir <command>` and resolves once it logs that it listens (or rejects with its output). */
export async function spawnRole(
  command: RoleCommand,
  env: Record<string, string>,
  args: string[] = [],
): Promise<RoleProcess> {
  const child = spawn(process.execPath, weirArgs([command, ...args]), {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      ...LAUNCH_ENV,
      WEIR_PORT: '0',
      WEIR_LOG_LEVEL: 'info',
      WEIR_BOOTSTRAP_PROJECT_API_KEY: PROJECT_API_KEY,
      WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_API_KEY,
      WEIR_HTTP_TRANSPORT: TEST_HTTP_TRANSPORT,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await waitFor(
    () => {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`weir ${command} exited early (${child.exitCode ?? child.signalCode}):\n${out}`);
      return Promise.resolve(/"url":"(http:\/\/[^"]+)"/.exec(out)?.[1]);
    },
    90_000,
    `weir ${command} to start`,
  );
  return {
    command,
    child,
    url,
    pid: child.pid!,
    output: () => out,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async metrics() {
      return (await fetch(`${url}/metrics`)).text();
    },
  };
}

/** Sum of a Prometheus counter or gauge over the series matching `labels` (e.g. `lane="overflow"`). */
export function metricValue(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (labels && !rest.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Waits until the EVENTS stream is empty: its retention is a work queue, so a message leaves the stream
 * only when ingest has acknowledged it, which it does after the store commit.
 */
export async function waitStreamDrained(natsUrl: string, timeoutMs = 60_000): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    // Not checked at once: a cluster that has just restarted answers its API only once it has a leader.
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    let last = -1;
    try {
      await waitFor(
        async () => {
          const info = await jsm.streams.info('EVENTS').catch(() => undefined);
          if (info === undefined) return undefined;
          last = info.state.messages;
          return last === 0 ? true : undefined;
        },
        timeoutMs,
        'the EVENTS stream to drain',
      );
    } catch (err) {
      // The count as last seen, not as it was when the wait began.
      throw new Error(`${(err as Error).message} (last seen ${last} messages)`, { cause: err });
    }
  } finally {
    await nc.close();
  }
}

/** Runs `weir sql` on a stopped owner's data directory and returns the rows. */
export async function sqlRows<T>(dataDir: string, sql: string): Promise<T[]> {
  const res = await weirSql(dataDir, sql);
  if (res.code !== 0) throw new Error(`weir sql failed (${res.code}): ${res.stderr}`);
  return res.stdout
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as T);
}

export interface StoredCounts {
  /** Rows as stored (a duplicate would count twice). */
  readonly rows: number;
  /** Distinct uuids. */
  readonly uuids: number;
  /** Rows after ReplacingMergeTree collapsing (FINAL). */
  readonly final: number;
}

/** Rows, distinct uuids and FINAL rows of one event name: rows = uuids = final means each is stored once. */
export async function storedCounts(dataDir: string, event: string): Promise<StoredCounts> {
  const e = event.replaceAll("'", "\\'");
  const [row] = await sqlRows<{ rows: string; uuids: string; final: string }>(
    dataDir,
    `SELECT (SELECT count() FROM events WHERE event = '${e}') AS rows,
            (SELECT uniqExact(uuid) FROM events WHERE event = '${e}') AS uuids,
            (SELECT count() FROM events FINAL WHERE event = '${e}') AS final`,
  );
  return { rows: Number(row!.rows), uuids: Number(row!.uuids), final: Number(row!.final) };
}

/** The stored uuids of one event name. */
export async function storedUuids(dataDir: string, event: string): Promise<Set<string>> {
  const rows = await sqlRows<{ u: string }>(
    dataDir,
    `SELECT toString(uuid) AS u FROM events WHERE event = '${event.replaceAll("'", "\\'")}'`,
  );
  return new Set(rows.map((r) => r.u));
}

export interface LoadOptions {
  /** Capture URLs; client c sends to urls[c % urls.length]. */
  readonly urls: readonly string[];
  readonly event: string;
  readonly clients: number;
  /** Requests per client. */
  readonly requests: number;
  readonly eventsPerRequest: number;
  /** Retry a 503 or a refused connection (same body, same uuids) until it is answered 200. */
  readonly retry: boolean;
  /** Called after each answered request, for tests that act mid-stream. */
  readonly onProgress?: (acked: number) => void;
}

export interface LoadResult {
  /** uuids answered 200. */
  readonly acked: Set<string>;
  /** Every uuid sent at least once. */
  readonly attempted: Set<string>;
  /** Answers by status (0: the connection failed). */
  readonly statuses: Map<number, number>;
  /** 503 answers that carried Retry-After and code `unavailable`. */
  readonly wellFormed503s: number;
}

/**
 * Closed-loop load: each client posts /batch/ requests one after another; with `retry`, a refused request
 * is sent again (as PostHog SDKs do) after a short pause until it is answered 200.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const load = startLoad(options);
  await load.done;
  return load;
}

export interface RunningLoad extends LoadResult {
  /** When each request was answered 200, and the index in `urls` of the server that answered it. */
  readonly acks: readonly { readonly at: number; readonly server: number }[];
  /** Resolves when every client has sent its requests (or, after `stop`, finished the one it was sending). */
  readonly done: Promise<void>;
  /** Has each client finish the request it is sending (retrying it as it would) and send no more. */
  stop(): Promise<void>;
}

/** `runLoad`, its figures readable while it runs, and stoppable: for tests that act during a load. */
export function startLoad(options: LoadOptions): RunningLoad {
  const acked = new Set<string>();
  const attempted = new Set<string>();
  const statuses = new Map<number, number>();
  const acks: { at: number; server: number }[] = [];
  let wellFormed503s = 0;
  let stopping = false;
  const client = async (c: number): Promise<void> => {
    const server = c % options.urls.length;
    const url = `${options.urls[server]}/batch/`;
    for (let r = 0; r < options.requests && !stopping; r++) {
      const uuids = Array.from({ length: options.eventsPerRequest }, () => randomUUID());
      const body = JSON.stringify({
        api_key: PROJECT_API_KEY,
        batch: uuids.map((uuid, i) => ({
          event: options.event,
          uuid,
          properties: { distinct_id: `${options.event}-${c}-${i % 10}`, c, r, i },
        })),
      });
      for (const u of uuids) attempted.add(u);
      for (;;) {
        let status: number;
        try {
          const res = await fetch(url, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json' },
          });
          status = res.status;
          const json = (await res.json()) as { code?: string };
          if (status === 503 && json.code === 'unavailable' && res.headers.get('retry-after') === '1')
            wellFormed503s++;
        } catch {
          status = 0;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 200) {
          for (const u of uuids) acked.add(u);
          acks.push({ at: Date.now(), server });
          options.onProgress?.(acked.size);
          break;
        }
        if (!options.retry || (status !== 503 && status !== 0)) break;
        // A client's back-off (SDKs wait Retry-After); not a synchronisation.
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const done = Promise.all(Array.from({ length: options.clients }, (_, c) => client(c))).then(
    () => undefined,
  );
  return {
    acked,
    attempted,
    statuses,
    acks,
    get wellFormed503s() {
      return wellFormed503s;
    },
    done,
    async stop() {
      stopping = true;
      await done;
    },
  };
}

export interface CaptureOverJetStream {
  readonly ingest: RoleProcess;
  readonly capture: RoleProcess;
  readonly dataDir: string;
}

/**
 * A nats-server, `weir ingest` (the owner: it writes the catalog `weir capture` reads the keys from), then
 * `weir capture`, all stopped when `t` ends. `captureEnv` is the capture process's own settings.
 */
export async function captureOverJetStream(
  t: Pick<Test, 'teardown'>,
  captureEnv: Record<string, string> = {},
): Promise<CaptureOverJetStream> {
  const nats = await startNatsServer();
  t.teardown(() => nats.close());
  const dataDir = tempDir();
  const env = { WEIR_NATS_URL: nats.url, WEIR_DATA_DIR: dataDir };
  const running: RoleProcess[] = [];
  t.teardown(async () => {
    await Promise.all(running.map((r) => r.stop()));
  });
  const ingest = await spawnRole('ingest', env);
  running.push(ingest);
  const capture = await spawnRole('capture', { ...env, ...captureEnv });
  running.push(capture);
  return { ingest, capture, dataDir };
}
