/**
 * Turns results into the console table, bench/results/capture-<date>.json and bench/results/capture.md.
 * The tables are built once as rows and rendered twice (padded text, Markdown) so the two never disagree.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './child-processes.ts';
import { contended, type Measurement } from './measure.ts';
import { latencyPlot, type PlotSeries } from '../../src/loadgen/latency-plot.ts';
import type { BenchResults, ModeResults, TargetCheck, TargetResults } from './results.ts';

export interface Table {
  readonly title: string;
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

export const int = (n: number | undefined): string =>
  n === undefined ? '–' : Math.round(n).toLocaleString('en-US');
export const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1));
export const cores = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(2));
export const times = (n: number | undefined): string => (n === undefined ? '–' : `${n.toFixed(2)}×`);
export const pct = (n: number | undefined): string => (n === undefined ? '–' : `${(n * 100).toFixed(1)}%`);

export function failures(m: Measurement): string {
  const l = m.load;
  const parts: string[] = [];
  if (l.unavailable) parts.push(`503×${l.unavailable}`);
  for (const [status, n] of Object.entries(l.otherStatus)) parts.push(`${status}×${n}`);
  if (l.connectionErrors) parts.push(`conn×${l.connectionErrors}`);
  if (l.timedOut) parts.push(`timeout×${l.timedOut}`);
  if (l.unsent) parts.push(`unsent×${l.unsent}`);
  return parts.length ? parts.join(' ') : '0';
}

/** A column: its header, its cell for one server, and its cell in the "Weir ÷ bare" row (blank if none). */
interface Column {
  readonly name: string;
  cell(t: TargetResults): string;
  readonly ratio?: string;
}

function comparison(title: string, r: ModeResults, columns: readonly Column[]): Table {
  return {
    title,
    header: ['server', ...columns.map((c) => c.name)],
    rows: [
      ['bare uWS', ...columns.map((c) => c.cell(r.bare))],
      ['Weir', ...columns.map((c) => c.cell(r.weir))],
      ['Weir ÷ bare', ...columns.map((c) => c.ratio ?? '')],
    ],
  };
}

function fixedTable(r: ModeResults): Table {
  const m = (t: TargetResults): Measurement => t.fixed.measurement;
  const q = r.ratios;
  const seconds = m(r.weir).load.spec.durationMs / 1000;
  return comparison(`${r.mode}: fixed rate, open loop, ${seconds} s (latency in ms from the due time)`, r, [
    { name: 'req/s offered', cell: (t) => int(t.fixed.rate) },
    { name: 'sent req/s', cell: (t) => int(m(t).load.sentPerSecond) },
    { name: 'ok req/s', cell: (t) => int(m(t).load.okPerSecond) },
    { name: 'events/s', cell: (t) => int(m(t).storedEventsPerSecond ?? m(t).okEventsPerSecond) },
    { name: 'p50', cell: (t) => ms(m(t).load.latency.p50), ratio: times(q.fixedP50) },
    { name: 'p99', cell: (t) => ms(m(t).load.latency.p99), ratio: times(q.fixedP99) },
    { name: 'p99.9', cell: (t) => ms(m(t).load.latency.p999), ratio: times(q.fixedP999) },
    { name: 'max', cell: (t) => ms(m(t).load.latency.max) },
    { name: 'service p99', cell: (t) => ms(m(t).load.service.p99) },
    { name: 'send lag p99', cell: (t) => ms(m(t).load.sendLag.p99) },
    { name: 'failed', cell: (t) => failures(m(t)) },
    { name: 'server cpu', cell: (t) => cores(m(t).serverCpuCores) },
    { name: 'gen cpu', cell: (t) => cores(m(t).load.generatorCpuCores) },
    { name: 'other cpu', cell: (t) => cores(m(t).otherCpuCores) },
    { name: 'steal', cell: (t) => cores(m(t).stealCpuCores) },
  ]);
}

function firstSightTable(r: ModeResults): Table | undefined {
  const f = (t: TargetResults): Measurement | undefined => t.fixed.firstSight;
  if (!f(r.weir) && !f(r.bare)) return undefined;
  const eventsPerSecond = (m: Measurement | undefined): number | undefined =>
    m ? (m.storedEventsPerSecond ?? m.okEventsPerSecond) : undefined;
  const w = eventsPerSecond(f(r.weir));
  const b = eventsPerSecond(f(r.bare));
  return comparison(`${r.mode}: first sight of every distinct id (warm-up, closed loop, each id once)`, r, [
    { name: 'requests', cell: (t) => int(f(t)?.load.sent) },
    { name: 'took s', cell: (t) => (f(t) ? (f(t)!.load.elapsedMs / 1000).toFixed(1) : '–') },
    { name: 'ok req/s', cell: (t) => int(f(t)?.load.okPerSecond) },
    {
      name: 'events/s',
      cell: (t) => int(eventsPerSecond(f(t))),
      ratio: pct(w !== undefined && b ? w / b : undefined),
    },
    { name: 'p50', cell: (t) => (f(t) ? ms(f(t)!.load.latency.p50) : '–') },
    { name: 'p99', cell: (t) => (f(t) ? ms(f(t)!.load.latency.p99) : '–') },
    { name: 'failed', cell: (t) => (f(t) ? failures(f(t)!) : '–') },
    { name: 'server cpu', cell: (t) => cores(f(t)?.serverCpuCores) },
  ]);
}

function maxTable(r: ModeResults): Table {
  const sat = (t: TargetResults): Measurement | undefined => t.max?.saturation;
  const s = (t: TargetResults): Measurement | undefined => t.max?.sustained?.measurement;
  const latency = (m: Measurement | undefined, p: 'p50' | 'p99' | 'p999'): string =>
    m ? ms(m.load.latency[p]) : '–';
  const title = `${r.mode}: max throughput (closed-loop probe, then the highest open-loop rate sustained)`;
  return comparison(title, r, [
    { name: 'probe ok req/s', cell: (t) => int(sat(t)?.load.okPerSecond), ratio: pct(r.ratios.saturation) },
    { name: 'probe p99', cell: (t) => latency(sat(t), 'p99') },
    {
      name: 'probe cpu srv/gen',
      cell: (t) => `${cores(sat(t)?.serverCpuCores)}/${cores(sat(t)?.load.generatorCpuCores)}`,
    },
    { name: 'sustained req/s', cell: (t) => int(t.max?.sustained?.rate), ratio: pct(r.ratios.sustained) },
    { name: 'events/s', cell: (t) => int(s(t)?.storedEventsPerSecond ?? s(t)?.okEventsPerSecond) },
    { name: 'p50', cell: (t) => latency(s(t), 'p50') },
    { name: 'p99', cell: (t) => latency(s(t), 'p99') },
    { name: 'p99.9', cell: (t) => latency(s(t), 'p999') },
    { name: 'server cpu', cell: (t) => cores(s(t)?.serverCpuCores) },
    { name: 'gen cpu', cell: (t) => cores(s(t)?.load.generatorCpuCores) },
    { name: 'other cpu', cell: (t) => cores(s(t)?.otherCpuCores) },
    { name: 'steal', cell: (t) => cores(s(t)?.stealCpuCores) },
  ]);
}

function tables(results: BenchResults): Table[] {
  const out: Table[] = [];
  for (const r of results.modes) {
    const first = firstSightTable(r);
    if (first) out.push(first);
    out.push(fixedTable(r));
    if (r.bare.max || r.weir.max) out.push(maxTable(r));
  }
  out.push(writerTable(results.modes.flatMap(weirRuns)));
  return out;
}

export function targetsTable(title: string, targets: readonly TargetCheck[]): Table {
  return {
    title,
    header: ['target', 'measured', 'met'],
    rows: targets.map((t) => [t.target, t.measured, t.met === undefined ? 'not run' : t.met ? 'yes' : 'NO']),
  };
}

export function renderText(t: Table): string {
  const widths = t.header.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [t.title, line(t.header), widths.map((w) => '-'.repeat(w)).join('  '), ...t.rows.map(line)].join(
    '\n',
  );
}

export function renderMarkdown(t: Table): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  const align = t.header.map((_, i) => (i === 0 ? '---' : '---:'));
  return [`### ${t.title}`, '', line(t.header), line(align), ...t.rows.map(line)].join('\n');
}

export function consoleReport(results: BenchResults): string {
  // Targets last: the verdict is what stays on screen when the run ends.
  return [...tables(results), targetsTable('targets (issue 2)', results.targets)]
    .map(renderText)
    .join('\n\n');
}

/** Weir's runs of one mode, named for the tables: first sight, fixed, probe, sustained. */
export function weirRuns(r: {
  readonly mode: string;
  readonly weir: TargetResults;
}): [string, Measurement | undefined][] {
  return [
    [`${r.mode}, first sight`, r.weir.fixed.firstSight],
    [`${r.mode}, fixed ${r.weir.fixed.rate} req/s`, r.weir.fixed.measurement],
    [`${r.mode}, closed-loop probe`, r.weir.max?.saturation],
    [`${r.mode}, sustained ${int(r.weir.max?.sustained?.rate)} req/s`, r.weir.max?.sustained?.measurement],
  ];
}

/** What Weir's group-commit writer did during each named run, from its /metrics. */
export function writerTable(runs: readonly (readonly [string, Measurement | undefined])[]): Table {
  const rows: string[][] = [];
  for (const [name, m] of runs) {
    const w = m?.weir;
    if (!m || !w) continue;
    const inserts = w.inserts['events'] ?? 0;
    const seconds = Object.values(w.insertSeconds).reduce((a, b) => a + b, 0);
    const others = Object.entries(w.inserts)
      .filter(([table]) => table !== 'events')
      .map(([table, n]) => `${table} ${n}`)
      .join(', ');
    rows.push([
      name,
      int(inserts),
      int(inserts ? (w.insertRows['events'] ?? 0) / inserts : undefined),
      inserts ? ms(((w.insertSeconds['events'] ?? 0) * 1000) / inserts) : '–',
      pct(seconds / (m.load.elapsedMs / 1000)),
      others || '–',
      String(w.insertErrors),
      `${ms(w.eventLoopLagP99 * 1000)}/${ms(w.eventLoopLagMax * 1000)}`,
    ]);
  }
  return {
    title: "Weir's group-commit writer during the runs (from its /metrics)",
    header: [
      'run',
      'events inserts',
      'rows/insert',
      'ms/insert',
      'writer busy',
      'other tables (inserts)',
      'insert errors',
      'loop lag p99/max ms',
    ],
    rows,
  };
}

export function allRuns(t: TargetResults): Measurement[] {
  return [
    ...(t.fixed.firstSight ? [t.fixed.firstSight] : []),
    t.fixed.measurement,
    ...(t.max ? [t.max.saturation, ...t.max.steps.map((s) => s.measurement)] : []),
  ];
}

/** Whether the generator, rather than the server, may have set the bare-uWS ceiling. */
function generatorNote(r: ModeResults): string | undefined {
  const runs = [r.bare.max?.saturation, r.bare.max?.sustained?.measurement].filter(
    (m): m is Measurement => m !== undefined,
  );
  if (runs.length === 0) return undefined;
  const figures = runs
    .map(
      (m) =>
        `${m.load.spec.rate === null ? 'closed-loop probe' : 'sustained'} ${int(m.load.sentPerSecond)} req/s ` +
        `(server ${cores(m.serverCpuCores)}, generator ${cores(m.load.generatorCpuCores)} cores)`,
    )
    .join('; ');
  const busiest = Math.max(...runs.map((m) => m.load.generatorCpuCores));
  const verdict =
    busiest >= 0.9
      ? 'the generator was near a full core, so the ceiling is partly set by the generator and the true ' +
        "bare-uWS ceiling is higher: Weir's ratios to it are flattering"
      : 'the generator had CPU to spare, so the server set the ceiling';
  return `- ${r.mode}, bare uWS: ${figures}; ${verdict}.`;
}

/** Notes on one server's runs: how it exited, what it logged, failed steps, stalls, contended runs. */
export function targetNotes(where: string, t: TargetResults): string[] {
  const out: string[] = [];
  if (t.exit !== 0) out.push(`- ${where}: exited with ${t.exit} on SIGTERM (expected 0).`);
  if (t.log.warnings > 0)
    out.push(`- ${where}: ${t.log.warnings} warn/error log lines, e.g. \`${t.log.samples[0] ?? ''}\``);
  const failedSteps = (t.max?.steps ?? []).filter((s) => !s.sustained);
  if (failedSteps.length > 0)
    out.push(
      `- ${where}, not sustained: ${failedSteps.map((s) => `${s.rate} req/s (${s.reasons.join('; ')})`).join(', ')}.`,
    );
  if (t.fixed.stalls.length > 0)
    out.push(
      `- ${where}, fixed rate: p99 of a typical second ${ms(t.fixed.typicalSecondP99 ?? 0)} ms, but ` +
        t.fixed.stalls.map((s) => `second ${s.second} ${ms(s.p99)} ms`).join(', ') +
        '.',
    );
  out.push(...contentionNotes(where, allRuns(t)));
  const behind = allRuns(t).filter((m) => m.startedBehind).length;
  if (behind > 0)
    out.push(
      `- ${where}: ${behind} run(s) began before the server had finished the previous run's work ` +
        '(it did not settle in time): their stored figures include some of it.',
    );
  return out;
}

/** A note when other processes on the machine took CPU during some of `runs`. */
export function contentionNotes(where: string, runs: readonly Measurement[]): string[] {
  const busy = runs.filter(contended);
  if (busy.length === 0) return [];
  const other = busy.map((m) => (m.otherCpuCores ?? 0) + (m.stealCpuCores ?? 0));
  return [
    `- ${where}: other processes on the machine, or other guests of the hypervisor (steal), took ` +
      `${cores(Math.min(...other))}–${cores(Math.max(...other))} cores during ${busy.length} of ${runs.length} runs ` +
      `(${runs.filter((m) => m.attempts > 1).length} made again).`,
  ];
}

function notes(results: BenchResults): string[] {
  const out: string[] = [];
  for (const r of results.modes) {
    const note = generatorNote(r);
    if (note) out.push(note);
  }
  for (const r of results.modes) {
    out.push(...targetNotes(`${r.mode}, bare uWS`, r.bare), ...targetNotes(`${r.mode}, Weir`, r.weir));
  }
  return out;
}

const PLOT_NAME = 'capture-latency.svg';
const PLOT_TITLE = 'Capture latency by percentile, fixed-rate open-loop runs (from due time)';

/** One line per server and mode: the fixed-rate runs' latency from due time. */
function plotSeries(results: BenchResults): PlotSeries[] {
  return results.modes.flatMap((r) =>
    (
      [
        ['bare uWS', r.bare],
        ['Weir', r.weir],
      ] as const
    ).map(([name, t]) => ({
      label: `${name}, ${r.mode}, ${t.fixed.rate} req/s`,
      histogram: t.fixed.measurement.load.latencyHistogram,
    })),
  );
}

function markdown(results: BenchResults, jsonName: string, withPlot: boolean): string {
  const machine = Object.entries(results.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const o = results.options;
  return [
    '# Capture benchmark (issue 2)',
    '',
    `Made by \`${results.command}\` on ${results.startedAt} (finished ${results.finishedAt}); Weir at ${results.weirRevision}.`,
    `Raw figures and HdrHistograms: [${jsonName}](${jsonName}).`,
    '',
    `Machine: ${machine}. Embedded Weir (chDB), loopback; generator, Weir and bare uWS share the machine's cores.`,
    '"Other cpu" is what processes other than the bench\'s own used during a run; "steal" is CPU the hypervisor gave',
    'other guests while this one had work (a virtual machine shares its cores with neighbours: 1-10% of the CPU',
    'was seen taken that way in runs minutes apart). A run where the two add up to over a quarter core is made again',
    "once, while the bench's few retries last.",
    '',
    `Method: one generator process, ${o.connections} keep-alive connections, one request in flight per connection,`,
    'pre-built request bytes. Open loop: request i is due at t0 + i/rate and its latency runs from that due time',
    '(coordinated omission corrected); "service" latency runs from the actual write. A 503 counts as a failure.',
    `"Stored" events are Weir's \`weir_ingest_events_total\` before and after each run. Max-throughput steps last ${o.stepMs / 1000} s`,
    `and count as sustained at ≥ 97% of the rate answered 200, ≤ 0.1% failed and p99 ≤ ${o.maxP99Ms} ms. The search`,
    'starts at 90% of the closed-loop probe, walks in steps of 5% of it (up to 100% while steps hold, down to 70%',
    'until one does), then tries the middle of the last gap: a figure is within 2.5% of the probe of the highest',
    'rate sustained.',
    'Before the fixed-rate run, a first-sight warm-up sends every distinct id once (closed loop): a new id makes',
    'Weir create a person, so the fixed-rate and max-throughput runs measure known users, and the warm-up',
    'measures how fast new users are taken in. Bare uWS and Weir run one at a time; Weir afresh for each mode.',
    `Bodies (mean): ${results.modes.map((r) => `${r.mode} ${r.bare.fixed.measurement.meanBodyBytes} bytes`).join(', ')}; ` +
      'a batch holds 100 events; 10,000 distinct ids in turn.',
    '',
    // Targets first: the verdict is what a reader of the summary looks for.
    ...[targetsTable('targets (issue 2)', results.targets), ...tables(results)].flatMap((t) => [
      renderMarkdown(t),
      '',
    ]),
    ...(withPlot ? [`![latency by percentile](${PLOT_NAME})`, ''] : []),
    `### p99 of each second of the fixed-rate runs (ms; seconds past ${o.durationMs / 1000} are the drain)`,
    '',
    ...results.modes.flatMap((r) =>
      (
        [
          ['bare uWS', r.bare],
          ['Weir', r.weir],
        ] as const
      ).map(
        ([name, t]) =>
          `- ${r.mode}, ${name}: ${t.fixed.measurement.load.timeline.map((s) => ms(s.p99)).join(' ')}`,
      ),
    ),
    '',
    '## Notes from this run',
    '',
    ...(notes(results).length
      ? notes(results)
      : ['- nothing to note: no failed steps, stalls, warnings or contention; clean exits.']),
    '',
  ].join('\n');
}

/** Where a run's results go: `<name>-<date>.json` beside `<name>.md`, in `outDir` (made if missing). */
export function resultFiles(
  outDir: string,
  name: string,
  startedAt: string,
): { dir: string; jsonName: string; json: string; md: string } {
  const dir = resolve(REPO_ROOT, outDir);
  mkdirSync(dir, { recursive: true });
  const stamp = startedAt.replace(/:/g, '').replace(/\.\d+Z$/, 'Z');
  const jsonName = `${name}-${stamp}.json`;
  return { dir, jsonName, json: join(dir, jsonName), md: join(dir, `${name}.md`) };
}

/** Writes capture-<date>.json, capture.md and capture-latency.svg; returns their paths. */
export function writeResults(
  results: BenchResults,
  outDir: string,
): { json: string; md: string; svg?: string } {
  const { dir, jsonName, json, md } = resultFiles(outDir, 'capture', results.startedAt);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  const plot = latencyPlot(PLOT_TITLE, plotSeries(results));
  const svg = plot === undefined ? undefined : join(dir, PLOT_NAME);
  if (svg !== undefined && plot !== undefined) writeFileSync(svg, plot);
  writeFileSync(md, markdown(results, jsonName, svg !== undefined));
  return { json, md, ...(svg === undefined ? {} : { svg }) };
}
