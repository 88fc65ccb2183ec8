/**
 * `npm run bench:capture -- --bus jetstream --ingest N`: issue 28's benchmark. For 1, 2, … N `weir ingest`
 * processes in turn, each on a fresh nats-server and a fresh ClickHouse front (the "server" store: chDB behind
 * the test-only HTTP front, clickhouse-front.ts) with a fresh database: all N ingests started at once, one
 * `weir capture`, then the JetStream mode's runs (first sight, fixed rate with the lag sampled, the
 * max-throughput search: scenario-roles.ts). No raw JetStream ceiling: it does not depend on the ingests,
 * and the JetStream report measures it. Everything shares this machine's cores, so on two cores the figures
 * are the overhead of the multi-process path, not scaling; the report says so.
 */
import os from 'node:os';
import { frontSql, startBenchFront, type BenchFront } from './clickhouse-front.ts';
import {
  jetStreamIngestConsoleReport,
  writeJetStreamIngestResults,
  type IngestRun,
  type JetStreamIngestResults,
  type StoreCount,
} from './jetstream-ingest-report.ts';
import { startWeirScaled, type ScaledWeir } from './jetstream-ingest-target.ts';
import type { SqlRunner } from './lag-sampler.ts';
import type { BenchContext } from './measure.ts';
import { startNats, type BenchNats } from './nats-server.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import { commandLine, machineInfo, weirRevision } from './results.ts';
import { measureRoles } from './scenario-roles.ts';

/** Every row in the store against every event the ingests counted: a gap is a lost or doubled event. */
async function countStore(sql: SqlRunner): Promise<StoreCount> {
  const [row] = await sql<{ rows: string; uuids: string }>(
    'SELECT toString(count()) AS rows, toString(uniqExact(uuid)) AS uuids FROM events',
  );
  return { rows: Number(row?.rows ?? 0), uuids: Number(row?.uuids ?? 0) };
}

/** How long the backlog of the last run may take to be stored before the processes' counts are read. */
const FINAL_SETTLE_MS = 30_000;

/** What the stop read from the processes before they were gone. */
interface Shares {
  /** Events each ingest stored over its life (empty when they could not be read). */
  stored: number[];
  /** Whether the EVENTS stream was empty when they were read, so the store held all there was. */
  drained: boolean;
}

/**
 * `weir` with its stop first letting the last run's backlog be stored (bounded), then reading each process's
 * stored events: that is the division of the work, and, set against the store's rows, a check that what
 * was counted stored is there once.
 */
function keepingShares(weir: ScaledWeir, into: Shares): ScaledWeir {
  return {
    ...weir,
    async stop() {
      into.drained = await weir.settle(FINAL_SETTLE_MS);
      // A process that no longer answers leaves the division unknown ('–' in the report), not the run failed.
      const shares = await weir.storedByProcess().catch((err: unknown) => {
        process.stderr.write(`  (events stored by each ingest not read: ${String(err)})\n`);
        return [];
      });
      into.stored.push(...shares);
      return weir.stop();
    },
  };
}

/** The roles on a running front: started, measured, stopped; then the store read through the front. */
async function onFront(
  bench: BenchContext,
  mode: Mode,
  ingests: number,
  nats: BenchNats,
  front: BenchFront,
): Promise<Omit<IngestRun, 'frontExit'>> {
  // The front is fresh for each count (no merges of an earlier run's parts competing), so is the database.
  const database = `weir_bench_${mode}_${ingests}`;
  const store = { WEIR_CLICKHOUSE_URL: front.url, WEIR_CLICKHOUSE_DATABASE: database };
  bench.progress(
    `Weir over JetStream on the server store (chDB behind the HTTP front): ${ingests} × weir ingest + ` +
      `weir capture, ${mode} mode`,
  );
  const weir = await startWeirScaled(nats, ingests, store, { front: front.pid });
  const partitionsHeld = await weir.partitionsHeld().catch(async (err: unknown) => {
    await weir.stop();
    throw err;
  });
  bench.progress(`  partitions held per ingest process: ${partitionsHeld.map((h) => h ?? '?').join(', ')}`);
  const shares: Shares = { stored: [], drained: false };
  const reader = frontSql(front.url, database);
  try {
    const roles = await measureRoles(bench, keepingShares(weir, shares), mode, reader.sql);
    const storeCount = await countStore(reader.sql);
    const { partitions } = weir;
    return {
      ingests,
      mode,
      database,
      partitions,
      partitionsHeld,
      storedByProcess: shares.stored,
      drainedAtStop: shares.drained,
      storeCount,
      ...roles,
    };
  } finally {
    await reader.close();
  }
}

async function measureIngests(bench: BenchContext, mode: Mode, ingests: number): Promise<IngestRun> {
  const nats = await startNats();
  try {
    const front = await startBenchFront();
    let measured: Omit<IngestRun, 'frontExit'>;
    try {
      measured = await onFront(bench, mode, ingests, nats, front);
    } catch (err) {
      await front.stop();
      throw err;
    }
    return { ...measured, frontExit: await front.stop() };
  } finally {
    await nats.stop();
  }
}

/** Runs the ingest counts and writes their results; resolves with the exit code. */
export async function benchJetStreamIngest(
  bench: BenchContext,
  args: readonly string[],
  startedAt: string,
): Promise<number> {
  const loadAtStart = os.loadavg()[0] ?? 0;
  const runs: IngestRun[] = [];
  for (let n = 1; n <= (bench.options.ingest ?? 1); n++)
    for (const mode of bench.options.modes) runs.push(await measureIngests(bench, mode, n));
  const results: JetStreamIngestResults = {
    bus: 'jetstream',
    store: 'clickhouse-front',
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    loadAverage: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
    weirRevision: weirRevision(),
    options: bench.options,
    runs,
  };
  const files = writeJetStreamIngestResults(results, bench.options.outDir);
  console.log(`\n${jetStreamIngestConsoleReport(results)}\n\nwrote ${files.json}\n      ${files.md}`);
  return 0;
}
