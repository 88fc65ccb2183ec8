/**
 * `npm run soak`: issue 31's question — under a steady firehose, does Weir's resident memory level off?
 * For each bus (embedded, then JetStream when nats-server is on PATH) a fresh `weir start`: its max rate
 * for single events and for batches measured first, then both at once at 70% of that capacity for 10
 * minutes, memory sampled every 10 s. The soak passes when every 200 was stored exactly once, nothing but
 * 200 was answered, and resident memory over the last 5 minutes grows by at most 1% a minute. Writes
 * bench/results/soak.md, the memory plot and the samples beside it; exits 1 when a bus fails.
 */
import { runBench } from '../capture/child-processes.ts';
import { GeneratorClient } from '../capture/generator-client.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { parseSoakOptions, USAGE, type SoakOptions } from './options.ts';
import { passed, writeSoakReport } from './report.ts';
import { soakBus, type BusResult } from './soak-bus.ts';

function commandLine(args: readonly string[]): string {
  const quoted = args.map((a) => (/^[\w./=:-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(' ');
  return `npm run soak${quoted ? ` -- ${quoted}` : ''}`;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  let options: SoakOptions | 'help';
  try {
    options = parseSoakOptions(args);
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const startedAt = new Date().toISOString();
  // One generator per mode, so the two loads never share an event loop; the search uses the first.
  const generators = { single: GeneratorClient.start(), batch: GeneratorClient.start() };
  const progress = (line: string): void => void process.stderr.write(`${line}\n`);
  const buses: BusResult[] = [];
  try {
    for (const bus of options.buses) buses.push(await soakBus({ options, generators, progress }, bus));
  } finally {
    await Promise.all([generators.single.stop(), generators.batch.stop()]);
  }
  const files = writeSoakReport({
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    weirRevision: weirRevision(),
    options,
    buses,
  });
  for (const b of buses) {
    const t = b.trend;
    console.log(
      `${b.bus}: ${passed(b) ? 'PASS' : 'FAIL'} — acknowledged ${b.stored.acknowledgedEvents}, stored ` +
        `${b.stored.storedByCounter} / ${b.stored.storedByQuery}; memory trend ` +
        `${t === undefined ? 'n/a' : `${t.percentPerMinute.toFixed(2)}%/min`}`,
    );
  }
  console.log(`wrote ${files.md}\n      ${files.svg}\n      ${files.json}`);
  return buses.every(passed) ? 0 : 1;
}

runBench(main);
