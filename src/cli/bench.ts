/**
 * `weir bench capture` benchmarks a capture endpoint and writes its result (JSON with the HDR histograms)
 * and a latency plot (SVG); `weir bench compare` prints two results side by side. The command parses its
 * own flags (bench-options.ts) and prints its own usage, since none of the server flags apply to it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRecord, RecordError, type BenchRecord } from '../loadgen/bench-record.ts';
import { compareText, summaryText } from '../loadgen/bench-text.ts';
import { runCaptureBench } from '../loadgen/capture-bench.ts';
import { latencyPlot } from '../loadgen/latency-plot.ts';
import { BENCH_USAGE, BenchUsageError, parseCaptureOptions, parseCompareOptions } from './bench-options.ts';

const PLOT_TITLE = 'Capture latency by percentile, open loop (from due time)';

/** Files named by mode and start time, so a second run beside the first never overwrites it. */
function fileStem(record: BenchRecord): string {
  const stamp = record.startedAt.replace(/:/g, '').replace(/\.\d+Z$/, 'Z');
  return `capture-${record.parameters.mode}-${stamp}`;
}

function plotOf(records: readonly BenchRecord[]): string | undefined {
  return latencyPlot(
    PLOT_TITLE,
    records.map((r) => ({ label: r.label, histogram: r.histograms.latency })),
  );
}

async function capture(args: readonly string[]): Promise<number> {
  const options = parseCaptureOptions(args);
  if (options === 'help') {
    process.stdout.write(BENCH_USAGE);
    return 0;
  }
  const { spec, outDir } = options;
  mkdirSync(outDir, { recursive: true });
  const record = await runCaptureBench(spec, (line) => process.stderr.write(`${line}\n`));
  const stem = join(outDir, fileStem(record));
  const written = [`${stem}.json`];
  writeFileSync(`${stem}.json`, `${JSON.stringify(record, null, 2)}\n`);
  const plot = plotOf([record]);
  if (plot !== undefined) {
    writeFileSync(`${stem}.svg`, plot);
    written.push(`${stem}.svg`);
  }
  process.stdout.write(`${summaryText(record)}\nwrote ${written.join(', ')}\n`);
  // Nothing answered at all is a failed benchmark, not a figure: a script running it should notice.
  return record.figures.sent > 0 && Object.keys(record.figures.statuses).length > 0 ? 0 : 1;
}

function compare(args: readonly string[]): number {
  const options = parseCompareOptions(args);
  if (options === 'help') {
    process.stdout.write(BENCH_USAGE);
    return 0;
  }
  const a = readRecord(options.a);
  const b = readRecord(options.b);
  process.stdout.write(`${compareText(a, b)}\n`);
  if (options.plot !== undefined) {
    const plot = plotOf([
      { ...a, label: `A: ${a.label}` },
      { ...b, label: `B: ${b.label}` },
    ]);
    if (plot !== undefined) {
      writeFileSync(options.plot, plot);
      process.stdout.write(`wrote ${options.plot}\n`);
    }
  }
  return 0;
}

/** Runs `weir bench …` (the arguments after `bench`); resolves with the exit code. */
export async function runBench(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case 'capture':
        return await capture(rest);
      case 'compare':
        return compare(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(BENCH_USAGE);
        return sub === undefined ? 2 : 0;
      default:
        throw new BenchUsageError(`unknown bench command '${sub}' (capture or compare)`);
    }
  } catch (err) {
    if (err instanceof BenchUsageError) {
      process.stderr.write(`weir bench: ${err.message}\n\n${BENCH_USAGE}`);
      return 2;
    }
    if (err instanceof RecordError) {
      process.stderr.write(`weir bench compare: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
