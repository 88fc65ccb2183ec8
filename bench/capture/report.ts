/**
 * Turns results into the console table, bench/results/capture-<date>.json and bench/results/capture.md.
 * The tables are built once as rows and rendered twice (padded text, Markdown) so the two never disagree.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './child-processes.ts';
import { contended, type Measurement } from './measure.ts';
import { latencyPlot, type PlotSeries } from '../../src/loadgen/latency-plot.ts';
import {
  computeRatios,
  sustainedEventsPerSecond,
  type BenchResults,
  type ModeResults,
  type Ratios,
  type TargetCheck,
  type TargetResults,
} from './results.ts';

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

/** A transport's two servers, as the tables name them, and their results by mode. */
interface Pair {
  readonly bare: string;
  readonly weir: string;
  readonly modes: readonly ModeResults[];
}

/**
 * The pairs measured, uWS's first. Results made before Node's http was measured hold uWS's pair alone, in
 * `modes`, as results made where uWS did not load hold an empty one.
 */
function pairsOf(results: BenchResults): Pair[] {
  const out: Pair[] = [];
  if (results.modes.length > 0) out.push({ bare: 'bare uWS', weir: 'Weir on uWS', modes: results.modes });
  if (results.nodeModes && results.nodeModes.length > 0)
    out.push({ bare: 'bare http', weir: "Weir on Node's http", modes: results.nodeModes });
  return out;
}

/** One pair's results in one mode. */
interface PairMode {
  readonly pair: Pair;
  readonly r: ModeResults;
}

/** Every mode measured, each with the pairs measured in it. */
function byMode(results: BenchResults): { mode: string; pairs: PairMode[] }[] {
  const out: { mode: string; pairs: PairMode[] }[] = [];
  for (const pair of pairsOf(results))
    for (const r of pair.modes) {
      let entry = out.find((e) => e.mode === r.mode);
      if (entry === undefined) out.push((entry = { mode: r.mode, pairs: [] }));
      entry.pairs.push({ pair, r });
    }
  return out;
}

/** A column: its header, its cell for one server, and its cell in a "Weir ÷ bare" row (blank if none). */
interface Column {
  readonly name: string;
  cell(t: TargetResults): string;
  ratio?(r: ModeResults): string;
}

/** Each pair's bare server, Weir on it, and Weir ÷ bare, pair after pair. */
function comparison(title: string, pairs: readonly PairMode[], columns: readonly Column[]): Table {
  return {
    title,
    header: ['server', ...columns.map((c) => c.name)],
    rows: pairs.flatMap(({ pair, r }) => [
      [pair.bare, ...columns.map((c) => c.cell(r.bare))],
      [pair.weir, ...columns.map((c) => c.cell(r.weir))],
      [`Weir ÷ ${pair.bare}`, ...columns.map((c) => c.ratio?.(r) ?? '')],
    ]),
  };
}

function fixedTable(mode: string, pairs: readonly PairMode[]): Table {
  const m = (t: TargetResults): Measurement => t.fixed.measurement;
  const seconds = m(pairs[0]!.r.weir).load.spec.durationMs / 1000;
  return comparison(`${mode}: fixed rate, open loop, ${seconds} s (latency in ms from the due time)`, pairs, [
    { name: 'req/s offered', cell: (t) => int(t.fixed.rate) },
    { name: 'sent req/s', cell: (t) => int(m(t).load.sentPerSecond) },
    { name: 'ok req/s', cell: (t) => int(m(t).load.okPerSecond) },
    { name: 'events/s', cell: (t) => int(m(t).storedEventsPerSecond ?? m(t).okEventsPerSecond) },
    { name: 'p50', cell: (t) => ms(m(t).load.latency.p50), ratio: (r) => times(r.ratios.fixedP50) },
    { name: 'p99', cell: (t) => ms(m(t).load.latency.p99), ratio: (r) => times(r.ratios.fixedP99) },
    { name: 'p99.9', cell: (t) => ms(m(t).load.latency.p999), ratio: (r) => times(r.ratios.fixedP999) },
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

function firstSightTable(mode: string, pairs: readonly PairMode[]): Table | undefined {
  const f = (t: TargetResults): Measurement | undefined => t.fixed.firstSight;
  if (!pairs.some(({ r }) => f(r.weir) || f(r.bare))) return undefined;
  const eventsPerSecond = (m: Measurement | undefined): number | undefined =>
    m ? (m.storedEventsPerSecond ?? m.okEventsPerSecond) : undefined;
  const ratio = (r: ModeResults): string => {
    const w = eventsPerSecond(f(r.weir));
    const b = eventsPerSecond(f(r.bare));
    return pct(w !== undefined && b ? w / b : undefined);
  };
  return comparison(`${mode}: first sight of every distinct id (warm-up, closed loop, each id once)`, pairs, [
    { name: 'requests', cell: (t) => int(f(t)?.load.sent) },
    { name: 'took s', cell: (t) => (f(t) ? (f(t)!.load.elapsedMs / 1000).toFixed(1) : '–') },
    { name: 'ok req/s', cell: (t) => int(f(t)?.load.okPerSecond) },
    { name: 'events/s', cell: (t) => int(eventsPerSecond(f(t))), ratio },
    { name: 'p50', cell: (t) => (f(t) ? ms(f(t)!.load.latency.p50) : '–') },
    { name: 'p99', cell: (t) => (f(t) ? ms(f(t)!.load.latency.p99) : '–') },
    { name: 'failed', cell: (t) => (f(t) ? failures(f(t)!) : '–') },
    { name: 'server cpu', cell: (t) => cores(f(t)?.serverCpuCores) },
  ]);
}

function maxTable(mode: string, pairs: readonly PairMode[]): Table {
  const sat = (t: TargetResults): Measurement | undefined => t.max?.saturation;
  const s = (t: TargetResults): Measurement | undefined => t.max?.sustained?.measurement;
  const latency = (m: Measurement | undefined, p: 'p50' | 'p99' | 'p999'): string =>
    m ? ms(m.load.latency[p]) : '–';
  const title = `${mode}: max throughput (closed-loop probe, then the highest open-loop rate sustained)`;
  return comparison(title, pairs, [
    {
      name: 'probe ok req/s',
      cell: (t) => int(sat(t)?.load.okPerSecond),
      ratio: (r) => pct(r.ratios.saturation),
    },
    { name: 'probe p99', cell: (t) => latency(sat(t), 'p99') },
    {
      name: 'probe cpu srv/gen',
      cell: (t) => `${cores(sat(t)?.serverCpuCores)}/${cores(sat(t)?.load.generatorCpuCores)}`,
    },
    {
      name: 'sustained req/s',
      cell: (t) => int(t.max?.sustained?.rate),
      ratio: (r) => pct(r.ratios.sustained),
    },
    {
      name: 'events/s',
      cell: (t) => int(sustainedEventsPerSecond(t)),
      ratio: (r) => pct(eventsRatio(r)),
    },
    { name: 'p50', cell: (t) => latency(s(t), 'p50') },
    { name: 'p99', cell: (t) => latency(s(t), 'p99') },
    { name: 'p99.9', cell: (t) => latency(s(t), 'p999') },
    { name: 'server cpu', cell: (t) => cores(s(t)?.serverCpuCores) },
    { name: 'gen cpu', cell: (t) => cores(s(t)?.load.generatorCpuCores) },
    { name: 'other cpu', cell: (t) => cores(s(t)?.otherCpuCores) },
    { name: 'steal', cell: (t) => cores(s(t)?.stealCpuCores) },
  ]);
}

/** Weir's sustained events/s ÷ its bare server's; computed afresh for results made before it was kept. */
function eventsRatio(r: ModeResults): number | undefined {
  return r.ratios.sustainedEvents ?? computeRatios(r.bare, r.weir).sustainedEvents;
}

/**
 * The figures a user compares transports by, every server in one table: single-event and batch max sustained
 * and p99 at the fixed rate, each Weir beside its own ceiling.
 */
function summaryTable(results: BenchResults): Table {
  const modes = byMode(results);
  const header = ['server'];
  for (const { mode, pairs } of modes) {
    const rate = int(pairs[0]!.r.weir.fixed.rate);
    header.push(
      `${mode} max ${mode === 'batch' ? 'events/s' : 'req/s'}`,
      '÷ own bare',
      `${mode} p99 ms at ${rate} req/s`,
      '÷ own bare',
    );
  }
  const rows: string[][] = [];
  for (const pair of pairsOf(results))
    for (const side of ['bare', 'weir'] as const) {
      const row = [pair[side]];
      for (const { mode } of modes) {
        const r = pair.modes.find((m) => m.mode === mode);
        const t = r?.[side];
        const max =
          mode === 'batch' ? sustainedEventsPerSecond : (x: TargetResults) => x.max?.sustained?.rate;
        const maxRatio = r && (mode === 'batch' ? eventsRatio(r) : r.ratios.sustained);
        row.push(
          int(t ? max(t) : undefined),
          side === 'weir' ? pct(maxRatio) : '',
          t ? ms(t.fixed.measurement.load.latency.p99) : '–',
          side === 'weir' ? times(r?.ratios.fixedP99) : '',
        );
      }
      rows.push(row);
    }
  return { title: 'both transports beside their ceilings', header, rows };
}

/** Node's http ÷ uWS: Weir on one against Weir on the other, and the two bare servers. */
function crossTable(results: BenchResults): Table | undefined {
  const cross = results.crossRatios ?? [];
  if (cross.length === 0) return undefined;
  const row = (name: string, q: Ratios): string[] => [
    name,
    pct(q.sustained),
    pct(q.sustainedEvents),
    pct(q.saturation),
    times(q.fixedP50),
    times(q.fixedP99),
    times(q.fixedP999),
  ];
  return {
    title: "Node's http ÷ uWS (max: higher is better; latency at the fixed rate: lower is better)",
    header: [
      'mode: servers',
      'sustained req/s',
      'events/s',
      'probe ok req/s',
      'fixed p50',
      'fixed p99',
      'fixed p99.9',
    ],
    rows: cross.flatMap((c) => [
      row(`${c.mode}: Weir on Node's http ÷ Weir on uWS`, c.weir),
      row(`${c.mode}: bare http ÷ bare uWS`, c.bare),
    ]),
  };
}

/** Issue 2's figures on Node's http, beside the bounds set for uWS: no target of its own, so no verdict. */
function nodeFiguresTable(figures: readonly TargetCheck[]): Table {
  return {
    title: "Node's http against issue 2's bounds (for comparison: no target is set for it)",
    header: ['bound (a target on uWS)', "measured on Node's http", 'within it'],
    rows: figures.map((t) => [t.target, t.measured, t.met === undefined ? 'not run' : t.met ? 'yes' : 'no']),
  };
}

function tables(results: BenchResults): Table[] {
  const out: Table[] = [];
  const pairs = pairsOf(results);
  if (pairs.length > 0) out.push(summaryTable(results));
  const cross = crossTable(results);
  if (cross) out.push(cross);
  for (const { mode, pairs: measured } of byMode(results)) {
    const first = firstSightTable(mode, measured);
    if (first) out.push(first);
    out.push(fixedTable(mode, measured));
    if (measured.some(({ r }) => r.bare.max || r.weir.max)) out.push(maxTable(mode, measured));
  }
  out.push(
    writerTable(
      pairs.flatMap((pair) =>
        pair.modes.flatMap((r) =>
          weirRuns(r).map(([name, m]): [string, Measurement | undefined] => [`${pair.weir}, ${name}`, m]),
        ),
      ),
    ),
  );
  return out;
}

/** The verdict tables: issue 2's targets on uWS (or why they were not judged), Node's figures beside them. */
function verdictTables(results: BenchResults): Table[] {
  const node = results.nodeFigures ? [nodeFiguresTable(results.nodeFigures)] : [];
  if (results.uwsSkipped !== undefined && results.targets.length === 0)
    return [
      {
        title: 'targets (issue 2)',
        header: ['target', 'measured', 'met'],
        rows: [['all three, on uWS', `not measured: uWS left out (${results.uwsSkipped})`, 'not run']],
      },
      ...node,
    ];
  return [targetsTable('targets (issue 2, on uWS)', results.targets), ...node];
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
  return [...tables(results), ...verdictTables(results)].map(renderText).join('\n\n');
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

/** Whether the generator, rather than the server, may have set a bare server's ceiling. */
function generatorNote(r: ModeResults, bare: string): string | undefined {
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
        `${bare} ceiling is higher: Weir's ratios to it are flattering`
      : 'the generator had CPU to spare, so the server set the ceiling';
  return `- ${r.mode}, ${bare}: ${figures}; ${verdict}.`;
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
  const pairs = pairsOf(results);
  for (const pair of pairs)
    for (const r of pair.modes) {
      const note = generatorNote(r, pair.bare);
      if (note) out.push(note);
    }
  for (const pair of pairs)
    for (const r of pair.modes)
      out.push(
        ...targetNotes(`${r.mode}, ${pair.bare}`, r.bare),
        ...targetNotes(`${r.mode}, ${pair.weir}`, r.weir),
      );
  return out;
}

/** Each server of each pair in one mode, named. */
function servers(results: BenchResults): { name: string; mode: string; t: TargetResults }[] {
  return pairsOf(results).flatMap((pair) =>
    pair.modes.flatMap((r) => [
      { name: pair.bare, mode: r.mode, t: r.bare },
      { name: pair.weir, mode: r.mode, t: r.weir },
    ]),
  );
}

const PLOT_NAME = 'capture-latency.svg';
const PLOT_TITLE = 'Capture latency by percentile, fixed-rate open-loop runs (from due time)';

/** One line per server and mode: the fixed-rate runs' latency from due time. */
function plotSeries(results: BenchResults): PlotSeries[] {
  return servers(results).map(({ name, mode, t }) => ({
    label: `${name}, ${mode}, ${t.fixed.rate} req/s`,
    histogram: t.fixed.measurement.load.latencyHistogram,
  }));
}

/** Which transports were measured, against what, and why uWS was not, when it was not. */
function transportsLine(results: BenchResults): string {
  const measured = pairsOf(results)
    .map((p) => `${p.weir} beside ${p.bare}`)
    .join(', then ');
  const skipped = results.uwsSkipped ? `; uWS left out: ${results.uwsSkipped}` : '';
  return `Transports: ${measured || 'none'}${skipped}. Each Weir's ratios are to its own bare server.`;
}

function markdown(results: BenchResults, jsonName: string, withPlot: boolean): string {
  const machine = Object.entries(results.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const o = results.options;
  return [
    '# Capture benchmark (issues 2 and 40)',
    '',
    `Made by \`${results.command}\` on ${results.startedAt} (finished ${results.finishedAt}); Weir at ${results.weirRevision}.`,
    `Raw figures and HdrHistograms: [${jsonName}](${jsonName}).`,
    '',
    `Machine: ${machine}. Embedded Weir (chDB), loopback; the generator and the server under test share the machine's cores.`,
    transportsLine(results),
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
    'measures how fast new users are taken in. Servers run one at a time, each pair as bare server then Weir;',
    'Weir afresh for each mode.',
    `Bodies (mean): ${(pairsOf(results)[0]?.modes ?? []).map((r) => `${r.mode} ${r.bare.fixed.measurement.meanBodyBytes} bytes`).join(', ')}; ` +
      'a batch holds 100 events; 10,000 distinct ids in turn.',
    '',
    // Targets first: the verdict is what a reader of the summary looks for.
    ...[...verdictTables(results), ...tables(results)].flatMap((t) => [renderMarkdown(t), '']),
    ...(withPlot ? [`![latency by percentile](${PLOT_NAME})`, ''] : []),
    `### p99 of each second of the fixed-rate runs (ms; seconds past ${o.durationMs / 1000} are the drain)`,
    '',
    ...servers(results).map(
      ({ name, mode, t }) =>
        `- ${mode}, ${name}: ${t.fixed.measurement.load.timeline.map((s) => ms(s.p99)).join(' ')}`,
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
