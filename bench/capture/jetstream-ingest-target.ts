/**
 * Weir scaled out over ingest processes, as `--ingest N` measures it (issue 28): N `weir ingest` processes,
 * all started at once, sharing the bus partitions (leases in NATS KV) and one ClickHouse server store (the
 * bench's front, a fresh database), and one `weir capture`; every role keeps its catalog in NATS KV
 * (`WEIR_CATALOG=nats`), so they share no data directory — each gets an empty one of its own, removed at
 * the stop. The generator sends to capture; "stored" is the sum of every ingest's
 * `weir_ingest_events_total`; the server's CPU is every process's: capture, each ingest, nats-server, and
 * the front (the store).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { STREAM } from '../../src/bus/jetstream/streams.ts';
import { REPO_ROOT, freePort, processCpuSeconds } from './child-processes.ts';
import type { BenchNats } from './nats-server.ts';
import { API_KEY } from './bench-key.ts';
import {
  HOST,
  benchWeirEnv,
  benchWeirNodeArgs,
  cleanEnv,
  nodeArgs,
  startServer,
  type ServerProcess,
  type Target,
  WEIR_LAUNCH_NODE_ARGS,
} from './targets.ts';
import { readWeirCounters, type WeirCounters } from './weir-metrics.ts';

const WEIR = join(REPO_ROOT, 'bin/weir.js');
/** How often catching up is checked: it bounds how precisely a run's catch-up time is known. */
const SETTLE_POLL_MS = 20;
/**
 * Partitions per lane, the same for every role (capture and ingest must agree). Eight give two processes
 * four each, and any count up to eight at least one. BENCH_WEIR_ENV may set another WEIR_BUS_PARTITIONS.
 */
export const BENCH_PARTITIONS = 8;
/** How long the processes get to divide the partitions among themselves before the first run. */
const SHARE_TIMEOUT_MS = 30_000;

/** The store settings the ingest processes get (the server store), or none (the embedded store). */
export type StoreEnv = Readonly<Record<string, string>>;

export interface ScaledWeir extends Target {
  /**
   * Live-lane partitions each ingest process holds now (`weir_bus_partitions_held{lane="live"}`; the
   * historical lane is one more, held by one process); undefined where the metric is missing.
   */
  partitionsHeld(): Promise<(number | undefined)[]>;
  /** `weir_ingest_events_total` of each ingest process since it started. */
  storedByProcess(): Promise<number[]>;
  /** The WEIR_BUS_PARTITIONS every role was given. */
  readonly partitions: number;
}

/**
 * One process's `/metrics` summed over one metric's series (those whose labels include `label`, e.g.
 * `lane="live"`); undefined when the process reports none.
 */
async function metric(baseUrl: string, name: string, label = ''): Promise<number | undefined> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const series = line.startsWith(`${name} `) || line.startsWith(`${name}{`);
    if (series && line.slice(0, line.lastIndexOf(' ')).includes(label))
      sum = (sum ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Starts the roles. `store`: the ingests' store settings. `others`: processes by role name (the front) whose
 * CPU is the server's too.
 */
export async function startWeirScaled(
  nats: BenchNats,
  ingests: number,
  store: StoreEnv,
  others: Readonly<Record<string, number>>,
): Promise<ScaledWeir> {
  const dirs: string[] = [];
  const removeDirs = (): void => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  const env = (port: number): Record<string, string> => {
    const dataDir = mkdtempSync(join(tmpdir(), 'weir-bench-scaled-'));
    dirs.push(dataDir);
    return {
      ...cleanEnv(),
      WEIR_HOST: HOST,
      WEIR_PORT: String(port),
      WEIR_DATA_DIR: dataDir,
      WEIR_NATS_URL: nats.url,
      WEIR_CATALOG: 'nats',
      WEIR_BUS_PARTITIONS: String(BENCH_PARTITIONS),
      WEIR_BOOTSTRAP_PROJECT_API_KEY: API_KEY,
      WEIR_LOG_LEVEL: 'warn',
      ...benchWeirEnv(),
    };
  };
  const partitions = Number(benchWeirEnv()['WEIR_BUS_PARTITIONS'] ?? BENCH_PARTITIONS);
  const started: ServerProcess[] = [];
  try {
    // All at once, as an operator's deployment starts them: they race for the catalog's bootstrap, the
    // schema's migrations and the partitions' leases, which is part of what is measured to work.
    const ports = await Promise.all(Array.from({ length: ingests }, () => freePort()));
    const starts = await Promise.allSettled(
      ports.map((port, i) =>
        startServer(
          `weir ingest ${i + 1}`,
          [...benchWeirNodeArgs(), WEIR, 'ingest'],
          { ...env(port), ...store },
          port,
          '/_ready',
        ),
      ),
    );
    for (const s of starts) if (s.status === 'fulfilled') started.push(s.value);
    const failed = starts.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    // Capture after ingest: the KV catalog has project 1 (the bench's key) once an ingest is ready.
    const capturePort = await freePort();
    const capture = await startServer(
      'weir capture',
      [...WEIR_LAUNCH_NODE_ARGS, ...nodeArgs('BENCH_CAPTURE_NODE_ARGS'), WEIR, 'capture'],
      env(capturePort),
      capturePort,
      '/_ready',
    );
    started.push(capture);
    const weir = await compose({
      nats,
      capture,
      ingests: started.slice(0, ingests),
      others,
      capturePort,
      partitions,
      removeDirs,
    });
    await awaitShares(weir);
    return weir;
  } catch (err) {
    await Promise.all(started.map((s) => s.stop()));
    removeDirs();
    throw err;
  }
}

/**
 * Waits (bounded) until every ingest process holds partitions: processes started together may come up one
 * holding them all until the leases are divided, and a run in that state would measure fewer processes than
 * it says. A build without the metric is not waited for. Runs go ahead either way: the report shows what each
 * held (runner: partitionsHeld) and notes a process that held none.
 */
async function awaitShares(weir: ScaledWeir): Promise<void> {
  const deadline = performance.now() + SHARE_TIMEOUT_MS;
  for (;;) {
    const held = await weir.partitionsHeld();
    if (held.some((h) => h === undefined) || held.every((h) => (h ?? 0) > 0)) return;
    if (performance.now() >= deadline) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Sums the ingest processes' counters (stored, inserts, pending); the event-loop lag is the worst one's. */
function sumIngest(list: readonly WeirCounters[]): WeirCounters {
  const add = (a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>) => {
    const out: Record<string, number> = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  return list.reduce((a, b) => ({
    ...a,
    storedEvents: a.storedEvents + b.storedEvents,
    storedByLane: add(a.storedByLane, b.storedByLane),
    inserts: add(a.inserts, b.inserts),
    insertRows: add(a.insertRows, b.insertRows),
    insertSeconds: add(a.insertSeconds, b.insertSeconds),
    insertErrors: a.insertErrors + b.insertErrors,
    pendingEvents: a.pendingEvents + b.pendingEvents,
    eventLoopLagP99: Math.max(a.eventLoopLagP99, b.eventLoopLagP99),
    eventLoopLagMax: Math.max(a.eventLoopLagMax, b.eventLoopLagMax),
  }));
}

interface Parts {
  readonly nats: BenchNats;
  readonly capture: ServerProcess;
  readonly ingests: readonly ServerProcess[];
  readonly others: Readonly<Record<string, number>>;
  readonly capturePort: number;
  readonly partitions: number;
  readonly removeDirs: () => void;
}

async function compose(p: Parts): Promise<ScaledWeir> {
  const { nats, capture, ingests, capturePort, partitions, removeDirs } = p;
  const nc = await connect({ servers: nats.url, name: 'bench' });
  const jsm = await jetstreamManager(nc);
  /** Messages in the work-queue stream: one leaves only when an ingest acks it, after the store commit. */
  const backlog = async (): Promise<number> => (await jsm.streams.info(STREAM)).state.messages;
  /** The one-process roles; the ingests are reported both summed ('ingest') and one by one. */
  const single: Record<string, number> = { capture: capture.pid, nats: nats.pid, ...p.others };
  const ingestPids = ingests.map((i) => i.pid);
  return {
    kind: 'weir-jetstream',
    port: capturePort,
    pids: [...Object.values(single), ...ingestPids],
    decoupled: true,
    partitions,
    async snapshot() {
      const bySingle = Object.entries(single).map(([role, pid]) => [role, processCpuSeconds(pid)] as const);
      const byIngest = ingestPids.map((pid) => processCpuSeconds(pid));
      const cpuSecondsByRole: Record<string, number | undefined> = Object.fromEntries(bySingle);
      const all = [...bySingle.map(([, s]) => s), ...byIngest];
      cpuSecondsByRole['ingest'] = byIngest.some((s) => s === undefined)
        ? undefined
        : byIngest.reduce((a, b) => a! + b!, 0);
      byIngest.forEach((s, i) => (cpuSecondsByRole[`ingest ${i + 1}`] = s));
      const cpuSeconds = all.some((s) => s === undefined) ? undefined : all.reduce((a, b) => a! + b!, 0);
      const [captured, ...stored] = await Promise.all([
        readWeirCounters(capture.baseUrl),
        ...ingests.map((i) => readWeirCounters(i.baseUrl)),
      ]);
      // Stored, inserts and pending are the ingests'; requests, drops and publishes are capture's.
      const weir = {
        ...sumIngest(stored),
        requestsByStatus: captured.requestsByStatus,
        droppedEvents: captured.droppedEvents,
        publishedMessages: captured.publishedMessages,
      };
      return { cpuSeconds, cpuSecondsByRole, weir };
    },
    // Only the stream is polled, not the ingests' /metrics: a scrape resets the event-loop lag they report.
    async settle(timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        if ((await backlog()) === 0) return true;
        if (performance.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      }
    },
    partitionsHeld: () =>
      Promise.all(ingests.map((i) => metric(i.baseUrl, 'weir_bus_partitions_held', 'lane="live"'))),
    storedByProcess: () =>
      Promise.all(ingests.map(async (i) => (await metric(i.baseUrl, 'weir_ingest_events_total')) ?? 0)),
    log() {
      const logs = [capture.log(), ...ingests.map((i) => i.log())];
      return {
        warnings: logs.reduce((n, l) => n + l.warnings, 0),
        samples: logs.flatMap((l) => l.samples),
      };
    },
    /** Capture first (it finishes its requests), then every ingest at once (each commits and acks). */
    async stop() {
      await nc.close();
      const captureExit = await capture.stop();
      const ingestExits = await Promise.all(ingests.map((i) => i.stop()));
      removeDirs();
      const bad = ingestExits.findIndex((e) => e !== 0);
      return captureExit !== 0
        ? `capture ${captureExit}`
        : bad >= 0
          ? `ingest ${bad + 1} ${ingestExits[bad]}`
          : 0;
    },
  };
}
