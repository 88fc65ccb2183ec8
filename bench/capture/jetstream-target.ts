/**
 * Weir scaled out on one machine, as the benchmark's JetStream mode measures it: one `weir ingest` (owns a
 * fresh data directory and its chDB store; creates project 1 with the bench's key on its first start) and
 * one `weir capture` (reads that directory's catalog), both on loopback against the bench's nats-server.
 * The generator sends to capture; "stored" is ingest's `weir_ingest_events_total`; the server's CPU is the
 * three processes'. After `stop()` the data directory is kept for `sql()` until `removeData()`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { STREAM } from '../../src/bus/jetstream/streams.ts';
import { REPO_ROOT, freePort, processCpuSeconds } from './child-processes.ts';
import type { BenchNats } from './nats-server.ts';
import { API_KEY } from './bench-key.ts';
import {
  HOST,
  benchWeirEnv,
  benchWeirNodeArgs,
  nodeArgs,
  cleanEnv,
  startServer,
  type ServerProcess,
  type Target,
  WEIR_LAUNCH_NODE_ARGS,
} from './targets.ts';
import { readWeirCounters } from './weir-metrics.ts';

const WEIR = join(REPO_ROOT, 'bin/weir.js');
/** How often catching up is checked: it bounds how precisely a run's catch-up time is known. */
const SETTLE_POLL_MS = 20;

export interface JetStreamWeir extends Target {
  readonly dataDir: string;
  /** `weir sql` on the data directory, once stopped: one object per row. */
  sql<T>(sql: string): Promise<T[]>;
  removeData(): void;
}

export async function startWeirJetStream(nats: BenchNats): Promise<JetStreamWeir> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-bench-js-'));
  const removeData = (): void => rmSync(dataDir, { recursive: true, force: true });
  const env = (port: number): Record<string, string> => ({
    ...cleanEnv(),
    WEIR_HOST: HOST,
    WEIR_PORT: String(port),
    WEIR_DATA_DIR: dataDir,
    WEIR_NATS_URL: nats.url,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: API_KEY,
    WEIR_LOG_LEVEL: 'warn',
    ...benchWeirEnv(),
  });
  const started: ServerProcess[] = [];
  let nc: NatsConnection | undefined;
  try {
    const ingestPort = await freePort();
    // Ingest first: it creates the catalog (project 1, the bench's key) that capture waits for.
    // BENCH_WEIR_NODE_ARGS goes to the ingest role, the one that does most of the work;
    // BENCH_CAPTURE_NODE_ARGS to the capture role.
    const ingest = await startServer(
      'weir ingest',
      [...benchWeirNodeArgs(), WEIR, 'ingest'],
      env(ingestPort),
      ingestPort,
      '/_ready',
    );
    started.push(ingest);
    const capturePort = await freePort();
    const capture = await startServer(
      'weir capture',
      [...WEIR_LAUNCH_NODE_ARGS, ...nodeArgs('BENCH_CAPTURE_NODE_ARGS'), WEIR, 'capture'],
      env(capturePort),
      capturePort,
      '/_ready',
    );
    started.push(capture);
    nc = await connect({ servers: nats.url, name: 'bench' });
    return compose({
      ingest,
      capture,
      nats,
      nc,
      jsm: await jetstreamManager(nc),
      capturePort,
      dataDir,
      removeData,
    });
  } catch (err) {
    await nc?.close();
    for (const s of started.reverse()) await s.stop();
    removeData();
    throw err;
  }
}

interface Parts {
  readonly ingest: ServerProcess;
  readonly capture: ServerProcess;
  readonly nats: BenchNats;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly capturePort: number;
  readonly dataDir: string;
  readonly removeData: () => void;
}

function compose(p: Parts): JetStreamWeir {
  const roles = { capture: p.capture.pid, ingest: p.ingest.pid, nats: p.nats.pid };
  /** Messages in the work-queue stream: one leaves only when ingest acks it, after the store commit. */
  const backlog = async (): Promise<number> => (await p.jsm.streams.info(STREAM)).state.messages;
  return {
    kind: 'weir-jetstream',
    port: p.capturePort,
    pids: Object.values(roles),
    decoupled: true,
    dataDir: p.dataDir,
    async snapshot() {
      const cpuSecondsByRole: Record<string, number | undefined> = {};
      let total: number | undefined = 0;
      for (const [role, pid] of Object.entries(roles)) {
        const cpu = processCpuSeconds(pid);
        cpuSecondsByRole[role] = cpu;
        total = cpu === undefined || total === undefined ? undefined : total + cpu;
      }
      const [ingest, capture] = await Promise.all([
        readWeirCounters(p.ingest.baseUrl),
        readWeirCounters(p.capture.baseUrl),
      ]);
      // Stored, inserts and pending are ingest's; requests, drops and publishes are capture's.
      const weir = {
        ...ingest,
        requestsByStatus: capture.requestsByStatus,
        droppedEvents: capture.droppedEvents,
        publishedMessages: capture.publishedMessages,
      };
      return { cpuSeconds: total, cpuSecondsByRole, weir };
    },
    // Only the stream is polled, not ingest's /metrics: a scrape resets the event-loop lag it reports.
    async settle(timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        if ((await backlog()) === 0) return true;
        if (performance.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      }
    },
    log() {
      const logs = [p.capture.log(), p.ingest.log()];
      return {
        warnings: logs.reduce((n, l) => n + l.warnings, 0),
        samples: logs.flatMap((l) => l.samples),
      };
    },
    /** Capture first (it finishes its requests), then ingest (it commits and acks what it holds). */
    async stop() {
      await p.nc.close();
      const capture = await p.capture.stop();
      const ingest = await p.ingest.stop();
      return capture !== 0 ? `capture ${capture}` : ingest !== 0 ? `ingest ${ingest}` : 0;
    },
    async sql<T>(sql: string): Promise<T[]> {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [WEIR, 'sql', '--data-dir', p.dataDir, sql],
        {
          cwd: REPO_ROOT,
          env: cleanEnv(),
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      return stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as T);
    },
    removeData: p.removeData,
  };
}
