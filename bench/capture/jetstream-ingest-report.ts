/**
 * `--ingest N`'s results (bench/results/capture-jetstream-ingest-<date>.json) and its report
 * (bench/results/capture-jetstream-ingest.md, and the console): ingest processes → stored events/s, p99,
 * CPU by role and whether the backlog was caught up, from the same table pieces as the other reports.
 */
import { writeFileSync } from 'node:fs';
import type { Measurement } from './measure.ts';
import type { BenchOptions } from './options.ts';
import type { Mode } from '../../src/loadgen/payloads.ts';
import {
  cores,
  failures,
  int,
  ms,
  renderMarkdown,
  renderText,
  resultFiles,
  targetNotes,
  writerTable,
  type Table,
} from './report.ts';
import type { RolesMeasured } from './scenario-roles.ts';

/** Rows of the events table once the roles had stopped, and how many distinct uuids they hold. */
export interface StoreCount {
  readonly rows: number;
  readonly uuids: number;
}

export interface IngestRun extends RolesMeasured {
  readonly ingests: number;
  readonly mode: Mode;
  readonly database: string;
  /** WEIR_BUS_PARTITIONS, partitions per lane, the same for every role. */
  readonly partitions: number;
  /** Live partitions each ingest held before the first run (undefined: not reported). */
  readonly partitionsHeld: readonly (number | undefined)[];
  /** Events each ingest stored over its whole life (empty when they could not be read at the stop). */
  readonly storedByProcess: readonly number[];
  /** Whether the EVENTS stream was empty when those were read (else the store may hold more by the stop). */
  readonly drainedAtStop: boolean;
  readonly storeCount: StoreCount;
  /** How the front ended on SIGTERM: 0 is a clean close of its chDB session. */
  readonly frontExit: number | string;
}

export interface JetStreamIngestResults {
  readonly bus: 'jetstream';
  /** What played the ClickHouse server: the test-only front over chDB, one process on the same cores. */
  readonly store: 'clickhouse-front';
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly weirRevision: string;
  readonly options: BenchOptions;
  readonly runs: readonly IngestRun[];
}

const name = (r: IngestRun): string => `${r.ingests} ingest, ${r.mode}`;

/** CPU of the ingests summed, then each process's: `1.10 (0.56+0.54)`. */
function ingestCpu(m: Measurement, ingests: number): string {
  const each = Array.from({ length: ingests }, (_, i) => cores(m.serverCpuByRole[`ingest ${i + 1}`]));
  return ingests === 1
    ? cores(m.serverCpuByRole['ingest'])
    : `${cores(m.serverCpuByRole['ingest'])} (${each.join('+')})`;
}

function caughtUp(m: Measurement): string {
  return m.caughtUp === false ? `no (> ${int(m.catchUpAllowanceMs)} ms)` : `${int(m.catchUpMs)} ms`;
}

const CPU_HEADER = ['cpu capture', 'cpu ingest (each)', 'cpu nats', 'cpu front (store)', 'cpu all roles'];

function cpuCells(m: Measurement, ingests: number): string[] {
  const role = (r: string): string => cores(m.serverCpuByRole[r]);
  return [role('capture'), ingestCpu(m, ingests), role('nats'), role('front'), cores(m.serverCpuCores)];
}

/** Ingest processes → one run's figures: the highest sustained step, or the fixed-rate run. */
function scalingTable(results: JetStreamIngestResults, which: 'sustained' | 'fixed'): Table {
  const rate = results.runs[0]?.weir.fixed.rate;
  return {
    title:
      which === 'sustained'
        ? 'ingest processes → highest rate sustained (stored events/s = every ingest’s commits until the backlog was caught up)'
        : `ingest processes → fixed rate ${int(rate)} req/s (lag sampled: capture 200 → row visible)`,
    header: [
      'ingest processes',
      'mode',
      'req/s',
      'events/s stored',
      'p99 ms',
      'backlog caught up',
      ...(which === 'fixed' ? ['lag p99 ms'] : []),
      ...CPU_HEADER,
      'other cpu',
    ],
    rows: results.runs.map((r) => {
      const m = which === 'sustained' ? r.weir.max?.sustained?.measurement : r.weir.fixed.measurement;
      const lag = r.lag?.result;
      const lagCell = lag && lag.visible > 0 ? ms(lag.lag.p99) : '–';
      if (!m)
        return [
          String(r.ingests),
          r.mode,
          'none sustained',
          ...Array<string>(CPU_HEADER.length + 4).fill('–'),
        ];
      return [
        String(r.ingests),
        r.mode,
        int(m.load.spec.rate ?? undefined),
        int(m.storedEventsPerSecond),
        ms(m.load.latency.p99),
        caughtUp(m),
        ...(which === 'fixed' ? [lagCell] : []),
        ...cpuCells(m, r.ingests),
        cores(m.otherCpuCores),
      ];
    }),
  };
}

/** Every run, in the order it ran. */
function allRuns(r: IngestRun): [string, Measurement][] {
  const out: [string, Measurement][] = [];
  const add = (what: string, m: Measurement | undefined): void => {
    if (m) out.push([`${name(r)}, ${what}`, m]);
  };
  add('first sight', r.weir.fixed.firstSight);
  add(`fixed ${r.weir.fixed.rate} req/s`, r.weir.fixed.measurement);
  add('closed-loop probe', r.weir.max?.saturation);
  for (const s of r.weir.max?.steps ?? [])
    add(`step ${s.rate} req/s ${s.sustained ? '✓' : '✗'}`, s.measurement);
  return out;
}

function runsTable(results: JetStreamIngestResults): Table {
  return {
    title: 'every run (latency in ms from the due time)',
    header: [
      'run',
      'req/s offered',
      'ok req/s',
      'events/s stored',
      'caught up',
      'p50',
      'p99',
      'p99.9',
      'failed',
      ...CPU_HEADER,
      'gen cpu',
      'other cpu',
      'steal',
    ],
    rows: results.runs.flatMap((r) =>
      allRuns(r).map(([run, m]) => [
        run,
        m.load.spec.rate === null ? 'closed' : int(m.load.spec.rate),
        int(m.load.okPerSecond),
        int(m.storedEventsPerSecond),
        caughtUp(m),
        ms(m.load.latency.p50),
        ms(m.load.latency.p99),
        ms(m.load.latency.p999),
        failures(m),
        ...cpuCells(m, r.ingests),
        cores(m.load.generatorCpuCores),
        cores(m.otherCpuCores),
        cores(m.stealCpuCores),
      ]),
    ),
  };
}

/** How the work was divided, and whether the store holds what the ingests counted. */
function divisionTable(results: JetStreamIngestResults): Table {
  return {
    title: 'division of the work and the store afterwards',
    header: [
      'ingest processes',
      'partitions per lane',
      'live partitions held at start (each)',
      'events stored (each, whole run)',
      'Σ stored',
      'backlog empty then',
      'rows in store',
      'distinct uuids',
      'exit roles / front',
    ],
    rows: results.runs.map((r) => {
      const total = r.storedByProcess.reduce((a, b) => a + b, 0);
      return [
        String(r.ingests),
        String(r.partitions),
        r.partitionsHeld.map((h) => (h === undefined ? '?' : String(h))).join(' / '),
        r.storedByProcess.length ? r.storedByProcess.map((n) => int(n)).join(' / ') : '–',
        r.storedByProcess.length ? int(total) : '–',
        r.drainedAtStop ? 'yes' : 'no',
        int(r.storeCount.rows),
        int(r.storeCount.uuids),
        `${r.weir.exit} / ${r.frontExit}`,
      ];
    }),
  };
}

function lagTable(results: JetStreamIngestResults): Table | undefined {
  const rows: string[][] = [];
  for (const r of results.runs)
    for (const [what, l] of [
      [`fixed ${r.weir.fixed.rate} req/s`, r.lag],
      [`sustained ${int(r.weir.max?.sustained?.rate)} req/s`, r.sustainedLag],
    ] as const) {
      if (!l) continue;
      const x = l.result;
      const seen = x.visible > 0;
      rows.push([
        `${name(r)}, ${what}`,
        String(x.acked),
        String(x.visible),
        seen ? ms(x.lag.p50) : '–',
        seen ? ms(x.lag.p99) : '–',
        seen ? ms(x.lag.max) : '–',
        x.allEvents ? `${ms(x.allEvents.p50)}/${ms(x.allEvents.p99)} (${int(x.allEvents.count)})` : '–',
      ]);
    }
  if (rows.length === 0) return undefined;
  return {
    title: 'end-to-end lag (ms): capture 200 → row visible (`_inserted_at`, set by the store at insert)',
    header: [
      'run',
      'acked',
      'visible',
      'lag p50',
      'lag p99',
      'lag max',
      'all events: received→visible p50/p99 (n)',
    ],
    rows,
  };
}

function tables(results: JetStreamIngestResults): Table[] {
  const lag = lagTable(results);
  return [
    scalingTable(results, 'sustained'),
    scalingTable(results, 'fixed'),
    divisionTable(results),
    runsTable(results),
    ...(lag ? [lag] : []),
    writerTable(results.runs.flatMap(allRuns)),
  ];
}

const CAVEAT =
  'On two cores this measures overhead, not scaling: every process (nats-server, capture, each ingest, the ' +
  'store, the load generator and the runner) shares the same two cores, so a second ingest process adds no ' +
  'CPU, only the cost of dividing the work (partition leases, persons in NATS KV, more HTTP inserts). And the ' +
  '"ClickHouse server" is not one: it is chDB behind the test-only HTTP front (test/clickhouse-front/), one ' +
  'Node process answering one statement at a time. The figures are the overhead of the multi-process path, ' +
  "not ClickHouse's speed.";

export function jetStreamIngestConsoleReport(results: JetStreamIngestResults): string {
  return [...tables(results).map(renderText), CAVEAT].join('\n\n');
}

function notes(results: JetStreamIngestResults): string[] {
  const out: string[] = [];
  for (const r of results.runs) {
    out.push(...targetNotes(name(r), r.weir));
    if (r.frontExit !== 0) out.push(`- ${name(r)}: the front exited with ${r.frontExit} on SIGTERM.`);
    if (r.partitionsHeld.some((h) => h === 0))
      out.push(`- ${name(r)}: a process held no partition at the start: ${r.partitionsHeld.join(' / ')}.`);
    const total = r.storedByProcess.reduce((a, b) => a + b, 0);
    if (!r.drainedAtStop)
      out.push(
        `- ${name(r)}: the last run's backlog was not all stored 30 s after it ended; the roles were stopped.`,
      );
    if (r.storedByProcess.length && r.drainedAtStop && total !== r.storeCount.rows)
      out.push(
        `- ${name(r)}: the ingests counted ${int(total)} events stored, the store holds ${int(r.storeCount.rows)} rows.`,
      );
    if (r.storeCount.uuids !== r.storeCount.rows)
      out.push(
        `- ${name(r)}: ${int(r.storeCount.rows - r.storeCount.uuids)} rows share a uuid with another (no FINAL).`,
      );
  }
  return out;
}

function markdown(results: JetStreamIngestResults, jsonName: string): string {
  const machine = Object.entries(results.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const o = results.options;
  const n = notes(results);
  return [
    '# Capture benchmark: ingest processes on the server store (issue 28)',
    '',
    `Made by \`${results.command}\` on ${results.startedAt} (finished ${results.finishedAt}); Weir at ${results.weirRevision}.`,
    `Raw figures and HdrHistograms: [${jsonName}](${jsonName}).`,
    '',
    `**Read this first.** ${CAVEAT}`,
    '',
    `Machine: ${machine}. Load average (1 min) ${results.loadAverage.start.toFixed(2)} at the start, ` +
      `${results.loadAverage.end.toFixed(2)} at the end; "other cpu" is what processes other than the bench's used during a run.`,
    '',
    'Setup, all on loopback: for each count of ingest processes in turn, a fresh nats-server -js, a fresh front',
    '(its own data directory, one database `weir_bench_<mode>_<count>`), the ingest processes started at once',
    `(\`WEIR_CLICKHOUSE_URL\` the front, \`WEIR_CATALOG=nats\`, \`WEIR_BUS_PARTITIONS=${results.runs[0]?.partitions ?? '–'}\` for every role,`,
    'each an empty data directory of its own), then one `weir capture`. The runs start once every ingest holds',
    'live partitions (`weir_bus_partitions_held{lane="live"}`). Each ingest warns once at its start that',
    "materializations are off (the KV catalog without S3): expected here, and counted in the notes' warnings.",
    '',
    `Method: as in [capture-jetstream.md](capture-jetstream.md): the open-loop generator (${o.connections} connections,`,
    `latency from the due time) sends batches of 100 events to capture; first sight, a fixed-rate run of ${o.durationMs / 1000} s with the`,
    `lag sampled, a closed-loop probe and the max-throughput search (${o.stepMs / 1000} s steps, p99 ≤ ${o.maxP99Ms} ms). "Stored" is the sum`,
    "of every ingest's `weir_ingest_events_total` until the EVENTS work queue was empty (the backlog caught up),",
    'within a tenth of the run after it. CPU: capture, each ingest (summed, then each), nats-server and the front,',
    'from /proc. The lag is read through the front with @clickhouse/client once the roles have stopped.',
    '',
    ...tables(results).flatMap((t) => [renderMarkdown(t), '']),
    '## Notes from this run',
    '',
    ...(n.length ? n : ['- nothing to note: no failed steps, stalls, warnings or contention; clean exits.']),
    '',
  ].join('\n');
}

/** Writes capture-jetstream-ingest-<date>.json and capture-jetstream-ingest.md; returns their paths. */
export function writeJetStreamIngestResults(
  results: JetStreamIngestResults,
  outDir: string,
): { json: string; md: string } {
  const { jsonName, json, md } = resultFiles(outDir, 'capture-jetstream-ingest', results.startedAt);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(md, markdown(results, jsonName));
  return { json, md };
}
