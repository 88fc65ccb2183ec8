/**
 * `npm run bench:import [-- --events N] [--batch-size N] [--concurrency N,M…]`: a PostHog-style JSON-lines
 * export of N events (default 10M) imported with `weir import` into a fresh `weir start` for each concurrency
 * (default 1 and 2), end to end: from the import's start to its exit, and the events counted in the store
 * afterwards (stored = rows read back, not requests answered). The figure is set against the batch capture figure of bench/results/capture.md
 * (the target: ≥ 70% of it). Writes bench/results/import.md.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  REPO_ROOT,
  exited,
  freePort,
  processCpuSeconds,
  spawnTracked,
  stopChild,
  waitUntilReady,
} from '../capture/child-processes.ts';
import { OtherLoadProbe } from '../capture/machine-load.ts';
import { WEIR_LAUNCH_ENV, WEIR_LAUNCH_NODE_ARGS } from '../capture/targets.ts';
import { writeExport } from './generate.ts';

const KEY = 'phc_bench_import_key_00000000000000000000000';
const PERSONAL = 'phx_bench_import_key_00000000000000000000000';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    'batch-size': { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '1,2' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/import.md') },
  },
});
const events = Number(values.events);
const concurrencies = values.concurrency.split(',').map(Number);
const weirBin = join(REPO_ROOT, 'bin/weir.js');
const work = mkdtempSync(join(os.tmpdir(), 'weir-bench-import-'));

function captureFigure(): number | undefined {
  const md = readFileSync(join(REPO_ROOT, 'bench/results/capture.md'), 'utf8');
  const m = /batch mode[^|]*\|\s*([\d,]+) events\/s/.exec(md);
  return m ? Number(m[1]!.replace(/,/g, '')) : undefined;
}

interface Run {
  readonly concurrency: number;
  readonly stored: number;
  readonly seconds: number;
  readonly weirCpu: number | undefined;
  readonly importerCpu: number | undefined;
  readonly otherCores: number | undefined;
  readonly stealCores: number | undefined;
  readonly summary: string;
}

/** CPU seconds of this process's reaped children (cutime + cstime): the importer's, once it has exited. */
function reapedChildrenCpu(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return undefined;
  }
}

/** One import of `file` with `concurrency` streams into a fresh `weir start`. */
async function importOnce(file: string, concurrency: number): Promise<Run> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = join(work, `data-${concurrency}`);
  // With the launch settings given, each PID measured is the process that does the work, not a launcher.
  const weir = spawnTracked(process.execPath, [...WEIR_LAUNCH_NODE_ARGS, weirBin, 'start'], {
    env: {
      ...process.env,
      ...WEIR_LAUNCH_ENV,
      WEIR_PORT: String(port),
      WEIR_DATA_DIR: dataDir,
      WEIR_BOOTSTRAP_PROJECT_API_KEY: KEY,
      WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL,
      WEIR_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitUntilReady(`${url}/_ready`, weir, 60_000);
    const probe = new OtherLoadProbe([weir.pid!]);
    const weirCpu0 = processCpuSeconds(weir.pid!);
    const reaped0 = reapedChildrenCpu();
    const t = Date.now();
    const args = [
      ...WEIR_LAUNCH_NODE_ARGS,
      weirBin,
      'import',
      file,
      '--url',
      url,
      '--api-key',
      KEY,
      '--no-checkpoint',
    ];
    args.push('--batch-size', values['batch-size'], '--concurrency', String(concurrency));
    const importer = spawn(process.execPath, args, {
      env: { ...process.env, ...WEIR_LAUNCH_ENV },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let summary = '';
    importer.stdout.on('data', (d: Buffer) => (summary += d.toString()));
    const code = await exited(importer);
    const seconds = (Date.now() - t) / 1000;
    const weirCpu1 = processCpuSeconds(weir.pid!);
    const reaped1 = reapedChildrenCpu();
    // The probe counts the importer as another process: it is part of the run, so it is taken out.
    const others = probe.otherCores();
    const otherCores =
      others === undefined || reaped1 === undefined || reaped0 === undefined
        ? others
        : Math.max(0, others - (reaped1 - reaped0) / seconds);
    const stealCores = probe.stealCores();
    if (code !== 0) throw new Error(`weir import exited ${code}:\n${summary}`);
    const res = await fetch(`${url}/api/projects/1/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PERSONAL}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'SELECT count() FROM events' } }),
    });
    const stored = Number(((await res.json()) as { results: [[number]] }).results[0][0]);
    const minus = (a: number | undefined, b: number | undefined): number | undefined =>
      a === undefined || b === undefined ? undefined : a - b;
    return {
      concurrency,
      stored,
      seconds,
      weirCpu: minus(weirCpu1, weirCpu0),
      importerCpu: minus(reaped1, reaped0),
      otherCores,
      stealCores,
      summary: summary.trim(),
    };
  } finally {
    await stopChild(weir, 30_000);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const fixed = (n: number | undefined, digits: number): string => (n === undefined ? '?' : n.toFixed(digits));

async function main(): Promise<void> {
  const load = os.loadavg()[0]!;
  const file = join(work, 'events.jsonl');
  const t = Date.now();
  const bytes = await writeExport(file, events);
  process.stderr.write(
    `generated ${events} events, ${(bytes / 1e6).toFixed(0)} MB in ${((Date.now() - t) / 1000).toFixed(1)} s\n`,
  );
  const capture = captureFigure();
  const runs: Run[] = [];
  try {
    for (const c of concurrencies) runs.push(await importOnce(file, c));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const rows = runs.map((r) => {
    const rate = Math.round(r.stored / r.seconds);
    const share = capture === undefined ? undefined : rate / capture;
    const perEvent = (cpu: number | undefined): string =>
      cpu === undefined ? '?' : ((cpu / r.stored) * 1e6).toFixed(1);
    return (
      `| ${r.concurrency} | ${events} | ${r.stored} | ${r.seconds.toFixed(1)} | ${rate} | ` +
      `${share === undefined ? '?' : `${(share * 100).toFixed(1)}%`} | ${share !== undefined && share >= 0.7 ? 'met' : 'not met'} | ` +
      `${fixed(r.weirCpu, 1)} (${perEvent(r.weirCpu)} µs) | ${fixed(r.importerCpu, 1)} (${perEvent(r.importerCpu)} µs) | ` +
      `${fixed(r.otherCores, 2)} | ${fixed(r.stealCores, 2)} |`
    );
  });
  const report = [
    '# Import benchmark (issue 29)',
    '',
    `Made by \`npm run bench:import -- --events ${events} --batch-size ${values['batch-size']} --concurrency ${values.concurrency}\` on ${new Date().toISOString()}.`,
    '',
    `Machine: ${os.cpus()[0]?.model ?? '?'}, ${os.cpus().length} cpus, node ${process.version}; load average ${load.toFixed(2)} before the runs.`,
    ...(events < 10_000_000 ? ['', `${events} events, not the 10M of issue 29.`] : []),
    '',
    `Method: a PostHog-style JSON-lines export (${(bytes / 1e6).toFixed(0)} MB, ${events} events, 10,000 distinct ids, a uuid each)`,
    'streamed to disk, then for each `--concurrency` `weir import` (a child process) into a fresh `weir start` (embedded, chDB) on',
    'loopback; time from the import\'s start to its exit; "stored" is `SELECT count() FROM events` through the query API',
    `afterwards; the batch capture figure is bench/results/capture.md's (${capture ?? '?'} events/s). CPU: seconds of all of`,
    'Weir\'s threads (chDB\'s included) and of the importer over the import, and per stored event; "other" is the cores',
    'used by everything but Weir and the importer meanwhile, "steal" the cores the hypervisor gave to other guests.',
    '',
    '| concurrency | events | stored | seconds | stored events/s | share of batch capture | target ≥ 70% | Weir CPU s (per event) | importer CPU s (per event) | other cores | steal cores |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    ...runs.flatMap((r) => [
      `The import's own summary, concurrency ${r.concurrency}:`,
      '',
      '```',
      r.summary,
      '```',
      '',
    ]),
  ].join('\n');
  writeFileSync(values.out, report);
  process.stdout.write(report);
}

await main();
