/**
 * The Weir a soak runs against: a fresh `weir start` (chDB, embedded store) on its own data directory, with
 * the embedded bus or, given a nats-server, over JetStream in the same process. It is a bench/capture
 * Target, so the capture bench's max-rate search runs on it unchanged, plus what the soak needs besides:
 * its pid (for /proc), its base URL (for /metrics) and a row count through the query API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { STREAM } from '../../src/bus/jetstream/streams.ts';
import { API_KEY } from '../capture/bench-key.ts';
import { REPO_ROOT, freePort, processCpuSeconds } from '../capture/child-processes.ts';
import type { BenchNats } from '../capture/nats-server.ts';
import {
  HOST,
  benchWeirEnv,
  benchWeirNodeArgs,
  cleanEnv,
  startServer,
  type ServerProcess,
  type Target,
} from '../capture/targets.ts';
import { readWeirCounters } from '../capture/weir-metrics.ts';
import type { SoakBus } from './options.ts';

/** The personal API key of the soak's Weir: the final row count goes through the query API with it. */
const PERSONAL_KEY = 'phx_soak';
/** How often catching up is polled: it bounds how late a caught-up store is noticed. */
const SETTLE_POLL_MS = 50;

export interface SoakWeir extends Target {
  readonly bus: SoakBus;
  readonly pid: number;
  readonly baseUrl: string;
  /** `SELECT count() FROM events` through the query API (project 1, the bench's key). */
  countEvents(): Promise<number>;
}

export async function startSoakWeir(bus: SoakBus, nats: BenchNats | undefined): Promise<SoakWeir> {
  if (bus === 'jetstream' && nats === undefined) throw new Error('the JetStream soak needs a nats-server');
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-soak-'));
  const removeData = (): void => rmSync(dataDir, { recursive: true, force: true });
  const port = await freePort();
  const env: Record<string, string> = {
    ...cleanEnv(),
    WEIR_HOST: HOST,
    WEIR_PORT: String(port),
    WEIR_DATA_DIR: dataDir,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: API_KEY,
    WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_KEY,
    WEIR_LOG_LEVEL: 'warn',
    ...(bus === 'jetstream' ? { WEIR_NATS_URL: nats!.url } : {}),
    ...benchWeirEnv(),
  };
  let server: ServerProcess | undefined;
  let nc: NatsConnection | undefined;
  try {
    server = await startServer(
      bus === 'jetstream' ? 'weir start (jetstream)' : 'weir start',
      [...benchWeirNodeArgs(), join(REPO_ROOT, 'bin/weir.js'), 'start'],
      env,
      port,
      '/_ready',
    );
    if (bus === 'jetstream') nc = await connect({ servers: nats!.url, name: 'soak' });
  } catch (err) {
    await server?.stop();
    removeData();
    throw err;
  }
  return compose(bus, server, port, nc, nats, removeData);
}

function compose(
  bus: SoakBus,
  server: ServerProcess,
  port: number,
  nc: NatsConnection | undefined,
  nats: BenchNats | undefined,
  removeData: () => void,
): SoakWeir {
  const { pid, baseUrl } = server;
  /** Messages in the work-queue stream: one leaves only when ingest acks it, after the store commit. */
  const backlog = async (): Promise<number> =>
    nc === undefined ? 0 : (await (await jetstreamManager(nc)).streams.info(STREAM)).state.messages;
  const caughtUp = async (): Promise<boolean> =>
    nc === undefined ? (await readWeirCounters(baseUrl)).pendingEvents === 0 : (await backlog()) === 0;
  return {
    kind: bus === 'jetstream' ? 'weir-jetstream' : 'weir',
    bus,
    port,
    pid,
    baseUrl,
    // nats-server's CPU is the server's too: it is not "other" load on the machine.
    pids: nats === undefined ? [pid] : [pid, nats.pid],
    // Over JetStream a 200 means published, not stored: the search then waits for ingest after each step.
    decoupled: bus === 'jetstream',
    async snapshot() {
      const cpuSecondsByRole: Record<string, number | undefined> =
        nats === undefined ? {} : { weir: processCpuSeconds(pid), nats: processCpuSeconds(nats.pid) };
      return { cpuSeconds: processCpuSeconds(pid), cpuSecondsByRole, weir: await readWeirCounters(baseUrl) };
    },
    async settle(timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        if (await caughtUp()) return true;
        if (performance.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      }
    },
    log: () => server.log(),
    async stop() {
      await nc?.close();
      const how = await server.stop();
      removeData();
      return how;
    },
    async countEvents() {
      const res = await fetch(`${baseUrl}/api/projects/1/query/`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${PERSONAL_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'SELECT count() FROM events' } }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`the query API answered ${res.status}: ${text.slice(0, 300)}`);
      const body = JSON.parse(text) as { results?: unknown[][] };
      const count = Number(body.results?.[0]?.[0]);
      if (!Number.isFinite(count))
        throw new Error(`the query API's count is not a number: ${text.slice(0, 300)}`);
      return count;
    },
  };
}
