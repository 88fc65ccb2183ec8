/**
 * The JetStream mode's console tables, bench/results/capture-jetstream-<date>.json and
 * bench/results/capture-jetstream.md, built from the same table pieces as the embedded report.
 */
import { writeFileSync } from 'node:fs';
import type { CeilingResult } from './jetstream-ceiling.ts';
import {
  runName,
  type JetStreamBenchResults,
  type JetStreamModeResults,
  type LagMeasured,
} from './jetstream-results.ts';
import type { LatencySummary } from '../../src/loadgen/load-generator.ts';
import type { Measurement } from './measure.ts';
import {
  cores,
  failures,
  int,
  ms,
  pct,
  renderMarkdown,
  renderText,
  resultFiles,
  targetNotes,
  targetsTable,
  writerTable,
  type Table,
} from './report.ts';

const TARGETS_TITLE = 'targets (issue 3)';

function ceilingTable(results: JetStreamBenchResults): Table {
  const c = (r: JetStreamModeResults): CeilingResult => r.ceiling;
  return {
    title: `raw JetStream ceiling: js.publish of Weir's messages, ${results.modes[0]?.ceiling.inFlight ?? '–'} in flight, one connection`,
    header: [
      'mode',
      'msg bytes',
      'msgs/request',
      'events/msg',
      'acked publishes/s',
      'MB/s',
      'events/s',
      'ack p50',
      'ack p99',
      'failed',
      'publisher cpu',
      'nats cpu',
      'other cpu',
    ],
    rows: results.modes.map((r) => [
      runName(r),
      int(c(r).meanMessageBytes),
      c(r).messagesPerRequest.toFixed(2),
      c(r).eventsPerMessage.toFixed(2),
      int(c(r).publishesPerSecond),
      c(r).megabytesPerSecond.toFixed(1),
      int(c(r).eventsPerSecond),
      ms(c(r).ackLatency.p50),
      ms(c(r).ackLatency.p99),
      String(c(r).failed),
      cores(c(r).publisherCpuCores),
      cores(c(r).natsCpuCores),
      cores(c(r).otherCpuCores),
    ]),
  };
}

/** Every run against Weir's roles, one row each, in the order they ran. */
function runs(r: JetStreamModeResults): [string, Measurement][] {
  const out: [string, Measurement][] = [];
  const add = (name: string, m: Measurement | undefined): void => {
    if (m) out.push([`${runName(r)}, ${name}`, m]);
  };
  add('first sight', r.weir.fixed.firstSight);
  add(`fixed ${r.weir.fixed.rate} req/s${r.lag ? ' (lag sampled)' : ''}`, r.weir.fixed.measurement);
  add('closed-loop probe', r.weir.max?.saturation);
  for (const step of r.weir.max?.steps ?? [])
    add(`step ${step.rate} req/s ${step.sustained ? '✓' : '✗'}`, step.measurement);
  return out;
}

/** JetStream messages capture published per second of a run (its own counter), over the run and its catch-up. */
function publishesPerSecond(m: Measurement | undefined): number | undefined {
  if (!m?.weir) return undefined;
  return m.weir.publishedMessages / ((m.load.elapsedMs + (m.catchUpMs ?? 0)) / 1000);
}

function runsTable(r: JetStreamModeResults): Table {
  const role = (m: Measurement, name: string): string => cores(m.serverCpuByRole[name]);
  return {
    title:
      `${runName(r)}: Weir's roles over JetStream (latency in ms from the due time; stored = ingest's commits ` +
      'until it caught up, within a tenth of the run after it)',
    header: [
      'run',
      'req/s offered',
      'ok req/s',
      'events/s stored',
      'caught up ms',
      'p50',
      'p99',
      'p99.9',
      'failed',
      'msgs/s',
      'cpu capture',
      'cpu ingest',
      'cpu nats',
      'gen cpu',
      'other cpu',
      'steal',
    ],
    rows: runs(r).map(([name, m]) => [
      name,
      m.load.spec.rate === null ? 'closed' : int(m.load.spec.rate),
      int(m.load.okPerSecond),
      int(m.storedEventsPerSecond),
      m.caughtUp === false ? `> ${int(m.catchUpAllowanceMs)}` : int(m.catchUpMs),
      ms(m.load.latency.p50),
      ms(m.load.latency.p99),
      ms(m.load.latency.p999),
      failures(m),
      int(publishesPerSecond(m)),
      role(m, 'capture'),
      role(m, 'ingest'),
      role(m, 'nats'),
      cores(m.load.generatorCpuCores),
      cores(m.otherCpuCores),
      cores(m.stealCpuCores),
    ]),
  };
}

function ratioTable(results: JetStreamBenchResults): Table {
  return {
    title: "Weir's highest sustained rate against the raw JetStream ceiling",
    header: [
      'mode',
      'Weir sustained req/s',
      'Weir events/s stored',
      'Weir publishes/s',
      'ceiling publishes/s',
      'ceiling events/s',
      'Weir ÷ ceiling (events/s)',
    ],
    rows: results.modes.map((r) => {
      const s = r.weir.max?.sustained;
      return [
        runName(r),
        int(s?.rate),
        int(s?.measurement.storedEventsPerSecond),
        int(publishesPerSecond(s?.measurement)),
        int(r.ceiling.publishesPerSecond),
        int(r.ceiling.eventsPerSecond),
        pct(r.ratio),
      ];
    }),
  };
}

function lagTable(results: JetStreamBenchResults): Table | undefined {
  const rows: [string, LagMeasured][] = [];
  for (const r of results.modes) {
    if (r.lag) rows.push([`${runName(r)}, fixed ${r.weir.fixed.rate} req/s`, r.lag]);
    const s = r.weir.max?.sustained;
    if (s && r.sustainedLag) rows.push([`${runName(r)}, sustained ${s.rate} req/s`, r.sustainedLag]);
  }
  if (rows.length === 0) return undefined;
  const l = (s: LatencySummary | undefined, p: 'p50' | 'p90' | 'p99' | 'max'): string =>
    s && s.count > 0 ? ms(s[p]) : '–';
  return {
    title:
      'end-to-end lag (ms): capture 200 → row visible (`_inserted_at`), one tagged event every ' +
      `${rows[0]![1].intervalMs} ms during the run`,
    header: [
      'run',
      'samples',
      'acked',
      'visible',
      'lag p50',
      'lag p90',
      'lag p99',
      'lag max',
      'send→visible p99',
      'sampler capture p50/p99',
      'all events: received→visible p50/p99 (n)',
    ],
    rows: rows.map(([name, { result: x }]) => [
      name,
      String(x.sent),
      String(x.acked),
      String(x.visible),
      l(x.lag, 'p50'),
      l(x.lag, 'p90'),
      l(x.lag, 'p99'),
      l(x.lag, 'max'),
      l(x.sendToVisible, 'p99'),
      `${l(x.capture, 'p50')}/${l(x.capture, 'p99')}`,
      x.allEvents ? `${ms(x.allEvents.p50)}/${ms(x.allEvents.p99)} (${int(x.allEvents.count)})` : '–',
    ]),
  };
}

function tables(results: JetStreamBenchResults): Table[] {
  const lag = lagTable(results);
  return [
    ceilingTable(results),
    ...results.modes.map(runsTable),
    ratioTable(results),
    ...(lag ? [lag] : []),
    writerTable(results.modes.flatMap((r) => runs(r))),
  ];
}

export function jetStreamConsoleReport(results: JetStreamBenchResults): string {
  // Targets last: the verdict is what stays on screen when the run ends.
  return [...tables(results), targetsTable(TARGETS_TITLE, results.targets)].map(renderText).join('\n\n');
}

function notes(results: JetStreamBenchResults): string[] {
  const out: string[] = [];
  for (const r of results.modes) {
    out.push(...targetNotes(`${runName(r)}, Weir over JetStream`, r.weir));
    const c = r.ceiling;
    if ((c.otherCpuCores ?? 0) > 0.25)
      out.push(
        `- ${runName(r)}, ceiling: other processes used ${cores(c.otherCpuCores)} cores while it ran.`,
      );
    if (c.publisherCpuCores >= 0.9)
      out.push(
        `- ${runName(r)}, ceiling: the publisher used ${cores(c.publisherCpuCores)} cores: the JS client, not ` +
          'nats-server, may set this ceiling.',
      );
  }
  return out;
}

function markdown(results: JetStreamBenchResults, jsonName: string): string {
  const machine = Object.entries(results.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const o = results.options;
  const perSecond = results.modes.map(
    (r) =>
      `- ${runName(r)}, fixed ${r.weir.fixed.rate} req/s: ${r.weir.fixed.measurement.load.timeline.map((s) => ms(s.p99)).join(' ')}`,
  );
  const n = notes(results);
  return [
    '# Capture benchmark, JetStream mode (issue 3)',
    '',
    `Made by \`${results.command}\` on ${results.startedAt} (finished ${results.finishedAt}); Weir at ${results.weirRevision}.`,
    `Raw figures and HdrHistograms: [${jsonName}](${jsonName}).`,
    '',
    `Machine: ${machine}. Load average (1 min) ${results.loadAverage.start.toFixed(2)} at the start, ` +
      `${results.loadAverage.end.toFixed(2)} at the end; each run's "other cpu" is what processes other than ` +
      'the bench\'s own used while it ran, and "steal" what the hypervisor gave other guests while this one had work.',
    '',
    `Setup, all on loopback and sharing the 2 cores: nats-server ${[...new Set(results.modes.map((r) => r.natsVersion))].join(', ')} -js (temporary file store;`,
    'its default sync, every 2 minutes after acknowledging, unless a run says `sync always`: `sync_interval: always`,',
    'an fsync before each acknowledgement), one `weir ingest` (owns a fresh data directory, embedded chDB), one',
    '`weir capture` (reads its catalog), the load generator (its own process) and the runner (ceiling publisher,',
    'lag sampler). A fresh nats-server and roles per run.',
    '',
    `Method: the embedded bench's open-loop generator (${o.connections} keep-alive connections, latency from the`,
    'due time) sends to capture. "Stored" is ingest\'s `weir_ingest_events_total` (committed to the store\'s',
    'commit log) from before a run until ingest caught up (the EVENTS work queue empty) — at most a tenth of',
    "the run's length (≥ 250 ms) after it — divided by the run's time plus that catch-up. A max-throughput step",
    `is sustained at ≥ 97% of the rate answered 200, ≤ 0.1% failed, p99 ≤ ${o.maxP99Ms} ms and ingest caught up in that`,
    `allowance (${int(results.modes[0]?.weir.max?.steps[0]?.measurement.catchUpAllowanceMs)} ms for a step): it stored at least ~90% as fast as capture acknowledged. The search`,
    "starts from the probe's stored rate when ingest stored less than capture acknowledged, but never below",
    'the fixed rate when ingest kept up with it (a closed-loop probe starves ingest of CPU); when the first',
    'step (90%) holds, the rate climbs by half while steps hold (≤ 3 times), then bisects three times; when it',
    'fails, the search walks down in steps of 5% of the probe and halves the last gap, as the embedded bench does.',
    'End-to-end lag: during the batch fixed-rate run (and each max-throughput step) a sampler in the runner sends one tagged single event every',
    `${results.modes.find((r) => r.lag)?.lag?.intervalMs ?? '–'} ms (its own request) and records send and 200 times;`,
    "after ingest stopped, `weir sql` reads each tagged row's `_inserted_at` (when the store applied its block",
    'from the commit log to the table: the row visible), same machine, same clock. "All events" is the same',
    "for every generator event of that run, from capture's receive time (`created_at`, ms).",
    "Ceiling: the runner publishes the messages Weir's capture makes of the generator's requests one at a time",
    '(built by its capture service and bus encoding, a unique Nats-Msg-Id each) to the same stream config,',
    'nothing consuming, before Weir starts; the stream is deleted after. Under load capture puts several',
    'requests in one message (its flights); "msgs/s" is what it published, from its own counter.',
    '',
    ...[targetsTable(TARGETS_TITLE, results.targets), ...tables(results)].flatMap((t) => [
      renderMarkdown(t),
      '',
    ]),
    `### p99 of each second of the fixed-rate runs (ms; seconds past ${o.durationMs / 1000} are the drain)`,
    '',
    ...perSecond,
    '',
    '## Notes from this run',
    '',
    ...(n.length ? n : ['- nothing to note: no failed steps, stalls, warnings or contention; clean exits.']),
    '',
  ].join('\n');
}

/** Writes capture-jetstream-<date>.json and capture-jetstream.md; returns their paths. */
export function writeJetStreamResults(
  results: JetStreamBenchResults,
  outDir: string,
): { json: string; md: string } {
  const { jsonName, json, md } = resultFiles(outDir, 'capture-jetstream', results.startedAt);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(md, markdown(results, jsonName));
  return { json, md };
}
