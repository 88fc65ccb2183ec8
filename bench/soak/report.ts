/**
 * The soak's report: a Markdown file (bench/results/soak.md by default) with every figure the verdict rests
 * on, the memory plot beside it (`<name>-memory.svg`) and the raw memory samples it was drawn from
 * (`<name>-memory.json`), so the plot can be checked or redrawn.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CONTENDED_CORES } from '../capture/machine-load.ts';
import { WEIR_LAUNCH_ENV, WEIR_LAUNCH_NODE_ARGS } from '../capture/targets.ts';
import { memoryPlot } from './memory-plot.ts';
import type { Trend } from './memory.ts';
import type { SoakOptions } from './options.ts';
import { MAX_TREND_PERCENT_PER_MINUTE, type BusResult } from './soak-bus.ts';

export interface SoakResults {
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly weirRevision: string;
  readonly options: SoakOptions;
  readonly buses: readonly BusResult[];
}

const MB = 1024 * 1024;
const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number | undefined): string =>
  bytes === undefined ? '–' : `${(bytes / MB).toFixed(0)} MB`;
const cores = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(2));
const statuses = (s: Readonly<Record<string, number>>): string =>
  Object.keys(s).length === 0
    ? '–'
    : Object.entries(s)
        .map(([code, n]) => `${code}: ${int(n)}`)
        .join(', ');

export function passed(bus: BusResult): boolean {
  return bus.checks.stored && bus.checks.noErrors && bus.checks.memory;
}

function trendLine(name: string, trend: Trend | undefined): string {
  if (trend === undefined) return `- ${name}: too few samples for a trend`;
  return (
    `- ${name}: ${trend.percentPerMinute >= 0 ? '+' : ''}${trend.percentPerMinute.toFixed(2)}% ` +
    `± ${trend.standardErrorPercent.toFixed(2)} (standard error) of its mean per minute ` +
    `(${(trend.slopeBytesPerMinute / MB).toFixed(2)} MB/min around ${mb(trend.meanBytes)}; least squares over ` +
    `${trend.samples} samples from ${Math.round(trend.from)} s to ${Math.round(trend.to)} s of the soak)`
  );
}

function busSection(bus: BusResult, files: { svg: string; json: string }, sampleSeconds: number): string {
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');
  const soak = bus.samples.filter((s) => s.phase === 'soak');
  const rss = soak.map((s) => s.rssBytes).filter((v) => v !== undefined);
  const first = soak[0];
  const last = soak[soak.length - 1];
  const searchRows = bus.maxRates.map((m) => {
    const tried = m.steps.map((s) => `${s.rate}${s.sustained ? '✓' : '✗'}`).join(' ');
    const soakRate = bus.rates[m.mode];
    const events = m.mode === 'batch' ? soakRate * 100 : soakRate;
    return (
      `| ${m.mode} | ${int(m.probe)} | ${m.sustained === undefined ? 'none held' : int(m.sustained)} | ` +
      `${int(m.used)} | ${int(soakRate)} (${int(events)} events/s) | ${tried} |`
    );
  });
  const loadRows = bus.totals.map(
    (t) =>
      `| ${t.mode} | ${int(t.rate)} | ${t.runs} | ${int(t.scheduled)} | ${int(t.ok)} | ${statuses(t.statuses)} | ` +
      `${int(t.connectionErrors)} / ${int(t.timedOut)} / ${int(t.unsent)} | ${int(t.acknowledgedEvents)} | ` +
      `${t.worstP99} | ${t.max} |`,
  );
  const runRows = bus.runs.map(
    (r) =>
      `| ${r.startedAt} | ${r.mode} | ${int(r.rate)} | ${r.connections} | ${int(r.ok)} | ${r.failed} | ` +
      `${r.p50} | ${r.p99} | ${r.max} | ${r.generatorCpuCores.toFixed(2)} | ${r.firstConnectionError ?? ''} |`,
  );
  const s = bus.stored;
  return [
    `## ${bus.bus === 'jetstream' ? 'JetStream (weir start over a local nats-server)' : 'Embedded (weir start, chDB)'}: ${verdict(passed(bus))}`,
    '',
    `Started ${bus.startedAt}; the load ran ${bus.soakSeconds.toFixed(0)} s` +
      `${bus.freshWeir ? ' on a fresh Weir (the search ran on another, stopped before)' : ', on the Weir the search ran on'}. ` +
      `Weir exited ${bus.exit}; ` +
      `it logged ${bus.log.warnings} warnings or errors.`,
    '',
    '| check | verdict |',
    '| --- | --- |',
    `| every 200 stored exactly once (acknowledged = stored, both counts) | ${verdict(bus.checks.stored)} |`,
    `| no status but 200, no failed request, no insert error | ${verdict(bus.checks.noErrors)} |`,
    `| resident memory trend ≤ ${MAX_TREND_PERCENT_PER_MINUTE}%/min over the last part | ${verdict(bus.checks.memory)} |`,
    '',
    '### Rates',
    '',
    ...(bus.maxRates.length === 0
      ? [
          `Given with \`--rates\`, no search: single ${int(bus.rates.single)} req/s, batch ${int(bus.rates.batch)} ` +
            `req/s (${int(bus.rates.batch * 100)} events/s).`,
        ]
      : [
          '| mode | probe req/s | max sustained req/s | taken as max | soak rate req/s | search steps (req/s) |',
          '| --- | --: | --: | --: | --: | --- |',
          ...searchRows,
        ]),
    ...(bus.maxRates.some((m) => m.sustained === undefined)
      ? [
          '',
          'Where no step held, half the probe is taken as the max: the rate run is then a guess, not a share ' +
            'of a measured capacity, and the soak should be run again on a quieter machine.',
        ]
      : []),
    '',
    '### Load',
    '',
    '| mode | req/s | runs | requests due | 200 | statuses | lost / timed out / unsent | events acknowledged | worst p99 ms | max ms |',
    '| --- | --: | --: | --: | --: | --- | --- | --: | --: | --: |',
    ...loadRows,
    '',
    `Weir's own count of capture requests by status over the soak: ${statuses(bus.weir.requestsByStatus)}; ` +
      `events dropped ${int(bus.weir.droppedEvents)}, store insert errors ${int(bus.weir.insertErrors)}.`,
    '',
    '### Stored',
    '',
    `- events acknowledged (200 × events per request): **${int(s.acknowledgedEvents)}**`,
    `- stored by \`weir_ingest_events_total\`: **${int(s.storedByCounter)}**`,
    `- stored by \`SELECT count() FROM events\` (query API, after less before): **${s.storedByQuery === undefined ? `– (${s.queryError ?? 'no answer'})` : int(s.storedByQuery)}**`,
    `- the store ${s.caughtUp ? 'caught up' : 'had NOT caught up'} ${Math.round(s.catchUpMs)} ms after the load ended`,
    '',
    '### CPU',
    '',
    `Weir ${cores(bus.weirCpuCores)} cores${bus.natsCpuCores === undefined ? '' : `, nats-server ${cores(bus.natsCpuCores)}`}; ` +
      `other processes on the machine ${cores(bus.otherCpuCores)} cores, hypervisor steal ${cores(bus.stealCpuCores)} ` +
      '(over the soak; the generators and the runner are not "other").' +
      ((bus.otherCpuCores ?? 0) + (bus.stealCpuCores ?? 0) > CONTENDED_CORES
        ? ' **Contended**: other work shared the cores, so the max rates found and the latencies are the ' +
          "machine's that moment, not Weir's alone."
        : ''),
    '',
    '### Memory',
    '',
    `Resident memory at the soak's start ${mb(first?.rssBytes)}, at its end ${mb(last?.rssBytes)}, ` +
      `lowest ${mb(rss.length ? Math.min(...rss) : undefined)}, highest ${mb(rss.length ? Math.max(...rss) : undefined)}; ` +
      `of it anonymous (RssAnon) ${mb(first?.rssAnonBytes)} → ${mb(last?.rssAnonBytes)}, malloc's main heap ` +
      `(\`[heap]\`) ${mb(first?.brkHeapBytes)} → ${mb(last?.brkHeapBytes)}; ` +
      `JS heap used ${mb(first?.heapUsedBytes)} → ${mb(last?.heapUsedBytes)}, ` +
      `Node's external memory (Buffers) ${mb(first?.externalBytes)} → ${mb(last?.externalBytes)}` +
      `${last?.natsRssBytes === undefined ? '' : `; nats-server resident ${mb(first?.natsRssBytes)} → ${mb(last.natsRssBytes)}`}.`,
    '',
    trendLine('resident memory (VmRSS, every thread)', bus.trend),
    trendLine('anonymous resident memory (RssAnon: heaps and arenas, no mapped files)', bus.anonTrend),
    trendLine("malloc's main heap ([heap])", bus.brkTrend),
    trendLine('JS heap used', bus.heapTrend),
    '',
    `Plot: [${basename(files.svg)}](${basename(files.svg)}); samples every ${sampleSeconds} s: [${basename(files.json)}](${basename(files.json)}).`,
    '',
    '<details><summary>Each generator run</summary>',
    '',
    '| from s | mode | req/s | connections | 200 | failed | p50 ms | p99 ms | max ms | generator cores | first connection error |',
    '| --: | --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |',
    ...runRows,
    '',
    '</details>',
    ...(bus.log.samples.length === 0
      ? []
      : ['', "Weir's first warnings:", '', '```', ...bus.log.samples, '```']),
  ].join('\n');
}

/** What BENCH_WEIR_ENV / BENCH_WEIR_NODE_ARGS added, so a report run with either says so. */
function benchExtras(): string {
  const extra = [process.env['BENCH_WEIR_ENV'], process.env['BENCH_WEIR_NODE_ARGS']].filter((v) => v);
  return extra.length === 0
    ? ''
    : `, and from the bench's environment ${extra.map((v) => `\`${v}\``).join(', ')}`;
}

function method(options: SoakOptions): string {
  return [
    '## Method',
    '',
    "For each bus a fresh `weir start` (embedded store, chDB, fresh data directory; over JetStream with a fresh local nats-server). First the capture bench's max-rate search on that Weir, for single events and for batches of 100 (closed-loop probe, then open-loop steps of " +
      `${options.stepSeconds} s with p99 ≤ ${options.maxP99Ms} ms; bench/capture/scenario-max-throughput.ts). ` +
      `Then both modes at once, each from its own load-generator process, open loop: single at ${options.fraction / 2} of its max and batch at ${options.fraction / 2} of its, ` +
      `${options.fraction * 100}% of capacity together, for ${options.minutes} min, as consecutive runs of at most ${options.runSeconds} s` +
      (options.fresh
        ? ', on a second fresh Weir (`--fresh`): the search ran on one of its own, so its saturation set no high-water mark of memory for the soak.'
        : ', on the same Weir the search ran on.'),
    '',
    `Weir runs with the settings its launcher (bin/weir.js) gives it: ${Object.entries(WEIR_LAUNCH_ENV)
      .map(([k, v]) => `\`${k}=${v}\``)
      .join(', ')}, \`node ${WEIR_LAUNCH_NODE_ARGS.join(' ')}\` (docs/operations.md)` + `${benchExtras()}.`,
    ...(options.rates
      ? ['', 'This run gave the rates with `--rates`: no search ran, and the soak ran on the one fresh Weir.']
      : []),
    '',
    "Acknowledged events are the 200s × events per request. Stored events are counted once the store has caught up (polled with a deadline): Weir's `weir_ingest_events_total` and `SELECT count() FROM events` through the query API, each taken after the soak less before it (the search's events are stored before the soak begins). Any status but 200 — 503 included — any lost, timed-out or unsent request fails the soak.",
    '',
    `Weir's resident memory (VmRSS from /proc, every thread: chDB's allocations outside the JS heap count) and its JS heap (\`weir_nodejs_heap_size_used_bytes\` from /metrics) are sampled every ${options.sampleSeconds} s from Weir's start. ` +
      `The trend is the least-squares slope of resident memory over the soak's last 5 minutes (the last half of a shorter soak), in % of its mean per minute; it passes at ≤ ${MAX_TREND_PERCENT_PER_MINUTE}%/min.`,
  ].join('\n');
}

export interface WrittenFiles {
  readonly md: string;
  readonly svg: string;
  readonly json: string;
}

export function writeSoakReport(results: SoakResults): WrittenFiles {
  const md = results.options.out;
  const stem = join(dirname(md), basename(md).replace(/\.md$/, ''));
  const files = { md, svg: `${stem}-memory.svg`, json: `${stem}-memory.json` };
  mkdirSync(dirname(md), { recursive: true });
  const verdicts = results.buses.map((b) => `${b.bus} ${passed(b) ? 'PASS' : 'FAIL'}`).join(', ');
  const text = [
    '# Soak: does resident memory level off under a steady firehose? (issue 31)',
    '',
    `**${verdicts}**`,
    '',
    `- command: \`${results.command}\``,
    `- when: ${results.startedAt} → ${results.finishedAt}`,
    `- Weir: ${results.weirRevision}`,
    `- machine: ${Object.entries(results.machine)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    '',
    ...results.buses.map((b) => busSection(b, files, results.options.sampleSeconds) + '\n'),
    method(results.options),
    '',
  ].join('\n');
  writeFileSync(md, text);
  const svg = memoryPlot(
    `Weir's memory under a ${Math.round(results.options.fraction * 100)}% soak (${results.weirRevision})`,
    results.buses.map((b) => ({ bus: b.bus, samples: b.samples, soakSeconds: b.soakSeconds })),
  );
  if (svg !== undefined) writeFileSync(files.svg, svg);
  writeFileSync(
    files.json,
    `${JSON.stringify(
      {
        weirRevision: results.weirRevision,
        startedAt: results.startedAt,
        buses: results.buses.map((b) => ({
          bus: b.bus,
          soakSeconds: b.soakSeconds,
          trend: b.trend,
          anonTrend: b.anonTrend,
          brkTrend: b.brkTrend,
          heapTrend: b.heapTrend,
          samples: b.samples,
        })),
      },
      null,
      1,
    )}\n`,
  );
  return files;
}
