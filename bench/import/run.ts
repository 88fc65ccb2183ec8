/**
 * `npm run bench:import [-- --events N] [--batch-size N] [--concurrency N]`: a PostHog-style JSON-lines
 * export of N events (default 10M) imported with `weir import` into a fresh `weir start`, end to end: from
 * the import's start to its exit, and the events counted in the store afterwards (stored = rows read back,
 * not requests answered). The figure is set against the batch capture figure of bench/results/capture.md
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
  spawnTracked,
  stopChild,
  waitUntilReady,
} from '../capture/child-processes.ts';
import { OtherLoadProbe } from '../capture/machine-load.ts';
import { writeExport } from './generate.ts';

const KEY = 'phc_bench_import_key_00000000000000000000000';
const PERSONAL = 'phx_bench_import_key_00000000000000000000000';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    'batch-size': { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '1' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/import.md') },
  },
});
const events = Number(values.events);
const weirBin = join(REPO_ROOT, 'bin/weir.js');
const work = mkdtempSync(join(os.tmpdir(), 'weir-bench-import-'));

function captureFigure(): number | undefined {
  const md = readFileSync(join(REPO_ROOT, 'bench/results/capture.md'), 'utf8');
  const m = /batch mode[^|]*\|\s*([\d,]+) events\/s/.exec(md);
  return m ? Number(m[1]!.replace(/,/g, '')) : undefined;
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!;
  const file = join(work, 'events.jsonl');
  let t = Date.now();
  const bytes = await writeExport(file, events);
  process.stderr.write(
    `generated ${events} events, ${(bytes / 1e6).toFixed(0)} MB in ${((Date.now() - t) / 1000).toFixed(1)} s\n`,
  );

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const weir = spawnTracked(process.execPath, [weirBin, 'start'], {
    env: {
      ...process.env,
      WEIR_PORT: String(port),
      WEIR_DATA_DIR: join(work, 'data'),
      WEIR_BOOTSTRAP_PROJECT_API_KEY: KEY,
      WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL,
      WEIR_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitUntilReady(`${url}/_ready`, weir, 60_000);
    const probe = new OtherLoadProbe([weir.pid!]);
    t = Date.now();
    const args = [weirBin, 'import', file, '--url', url, '--api-key', KEY, '--no-checkpoint'];
    args.push('--batch-size', values['batch-size'], '--concurrency', values.concurrency);
    const importer = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let summary = '';
    importer.stdout.on('data', (d: Buffer) => (summary += d.toString()));
    const code = await exited(importer);
    const seconds = (Date.now() - t) / 1000;
    const otherCores = probe.otherCores();
    if (code !== 0) throw new Error(`weir import exited ${code}:\n${summary}`);
    const res = await fetch(`${url}/api/projects/1/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PERSONAL}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'SELECT count() FROM events' } }),
    });
    const stored = Number(((await res.json()) as { results: [[number]] }).results[0][0]);
    const rate = Math.round(stored / seconds);
    const capture = captureFigure();
    const share = capture === undefined ? undefined : rate / capture;
    const report = [
      '# Import benchmark (issue 29)',
      '',
      `Made by \`npm run bench:import -- --events ${events} --batch-size ${values['batch-size']} --concurrency ${values.concurrency}\` on ${new Date().toISOString()}.`,
      '',
      `Machine: ${os.cpus()[0]?.model ?? '?'}, ${os.cpus().length} cpus, node ${process.version}; load average ${load.toFixed(2)} before the run;` +
        ` processes other than Weir (the importer among them) used ${otherCores === undefined ? '?' : otherCores.toFixed(2)} cores during the import.`,
      ...(events < 10_000_000
        ? [
            '',
            `${events} events, not the 10M of issue 29: run with the machine shared (a load average over 1.5), kept short.`,
          ]
        : []),
      '',
      `Method: a PostHog-style JSON-lines export (${(bytes / 1e6).toFixed(0)} MB, ${events} events, 10,000 distinct ids, a uuid each)`,
      'streamed to disk, then `weir import` (a child process) into a fresh `weir start` (embedded, chDB) on loopback;',
      'time from the import\'s start to its exit; "stored" is `SELECT count() FROM events` through the query API afterwards.',
      '',
      '| events | stored | seconds | stored events/s | batch capture (capture.md) | share | target ≥ 70% |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      `| ${events} | ${stored} | ${seconds.toFixed(1)} | ${rate} | ${capture ?? '?'} | ${share === undefined ? '?' : `${(share * 100).toFixed(1)}%`} | ${share !== undefined && share >= 0.7 ? 'met' : 'not met'} |`,
      '',
      "The import's own summary:",
      '',
      '```',
      summary.trim(),
      '```',
      '',
    ].join('\n');
    writeFileSync(values.out, report);
    process.stdout.write(report);
  } finally {
    await stopChild(weir, 30_000);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
