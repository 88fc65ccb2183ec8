/**
 * `npm run bench:capture -- --bus jetstream`: issue 3's benchmark. For each mode, on a fresh nats-server:
 * the raw JetStream ceiling first (nothing else running), then Weir's roles (one `weir ingest`, one
 * `weir capture`) measured like the embedded Weir — first sight, fixed rate, max-throughput search. In
 * batch mode the end-to-end lag is sampled during the fixed-rate run and read from the store once ingest
 * has stopped.
 */
import os from 'node:os';
import { measureCeiling } from './jetstream-ceiling.ts';
import { jetStreamConsoleReport, writeJetStreamResults } from './jetstream-report.ts';
import {
  ceilingRatio,
  checkJetStreamTargets,
  type JetStreamBenchResults,
  type JetStreamModeResults,
} from './jetstream-results.ts';
import { startWeirJetStream } from './jetstream-target.ts';
import type { BenchContext } from './measure.ts';
import { startNats } from './nats-server.ts';
import type { NatsSync } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import { commandLine, machineInfo, weirRevision } from './results.ts';
import { measureRoles } from './scenario-roles.ts';

async function measureMode(bench: BenchContext, mode: Mode, sync: NatsSync): Promise<JetStreamModeResults> {
  const { options } = bench;
  const nats = await startNats(sync);
  try {
    bench.progress(`nats-server ${nats.version}, sync ${sync}: raw JetStream ceiling, ${mode} messages`);
    const ceiling = await measureCeiling(bench, nats, mode, options.ceilingMs);
    bench.progress(
      `  ceiling   ${Math.round(ceiling.publishesPerSecond)} acked publishes/s of ${Math.round(ceiling.meanMessageBytes)} B ` +
        `(${ceiling.megabytesPerSecond.toFixed(1)} MB/s, ${Math.round(ceiling.eventsPerSecond)} events/s), ` +
        `ack p99 ${ceiling.ackLatency.p99} ms, cpu publisher ${ceiling.publisherCpuCores.toFixed(2)} ` +
        `nats ${ceiling.natsCpuCores?.toFixed(2)} other ${ceiling.otherCpuCores?.toFixed(2)}`,
    );
    bench.progress(`Weir over JetStream (weir capture + weir ingest), ${mode} mode`);
    const weir = await startWeirJetStream(nats);
    try {
      const roles = await measureRoles(bench, weir, mode, (sql) => weir.sql(sql));
      return {
        mode,
        sync,
        natsVersion: nats.version,
        ceiling,
        ...roles,
        ratio: ceilingRatio(roles.weir, ceiling),
      };
    } finally {
      weir.removeData();
    }
  } finally {
    await nats.stop();
  }
}

/** Runs the JetStream mode and writes its results; resolves with the exit code. */
export async function benchJetStream(
  bench: BenchContext,
  args: readonly string[],
  startedAt: string,
): Promise<number> {
  const loadAtStart = os.loadavg()[0] ?? 0;
  const modes: JetStreamModeResults[] = [];
  for (const mode of bench.options.modes)
    for (const sync of bench.options.natsSync) modes.push(await measureMode(bench, mode, sync));
  const results: JetStreamBenchResults = {
    bus: 'jetstream',
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    loadAverage: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
    weirRevision: weirRevision(),
    options: bench.options,
    modes,
    targets: checkJetStreamTargets(modes, bench.options),
  };
  const files = writeJetStreamResults(results, bench.options.outDir);
  console.log(`\n${jetStreamConsoleReport(results)}\n\nwrote ${files.json}\n      ${files.md}`);
  return 0;
}
