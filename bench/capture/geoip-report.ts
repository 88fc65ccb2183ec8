/**
 * The GeoIP bench's results (geoip.ts): each Weir's runs, what each address set comes to with GeoIP off and
 * on, the tables printed and bench/results/geoip.md with geoip-<date>.json beside it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64 } from 'hdr-histogram-js';
import { latencyPlot } from '../../src/loadgen/latency-plot.ts';
import { DISTINCT_IDS } from '../../src/loadgen/payloads.ts';
import type { GeoipBenchOptions } from './geoip-options.ts';
import type { StoredCheck } from './geoip-check.ts';
import type { LookupCost } from './geoip-lookup.ts';
import { contended } from './measure.ts';
import {
  allRuns,
  cores,
  failures,
  int,
  ms,
  pct,
  renderMarkdown,
  renderText,
  resultFiles,
  targetNotes,
  type Table,
} from './report.ts';
import { sustainedEventsPerSecond, type TargetResults } from './results.ts';

/** One address set as sent: the same bodies, from the same generator, to every Weir of the set. */
export interface SetInfo {
  readonly name: string;
  readonly addresses: number;
  readonly ipv6: number;
  /** Share of the addresses (and so of the events) the database has a country for. */
  readonly knownShare: number;
  /** Events in one cycle of requests, and requests in it. */
  readonly cycleEvents: number;
  readonly cycleRequests: number;
  /** sha256 of the cycle's bodies in order: the same for GeoIP off and on. */
  readonly bodiesSha256: string;
  readonly meanBodyBytes: number;
}

/** One fresh Weir: its runs, its memory and what it stored. */
export interface GeoipRun {
  readonly set: string;
  readonly geoip: boolean;
  /** 1-based; odd rounds run GeoIP off first, even ones on first. */
  readonly round: number;
  /** From spawning Weir to its first 200 on /_ready. */
  readonly startupMs: number;
  /** weir_process_resident_memory_bytes once ready, and after the last run (everything settled). */
  readonly rssReadyBytes: number | undefined;
  readonly rssEndBytes: number | undefined;
  /**
   * weir_store_pending_bytes (committed, not yet applied to the tables) as the fixed-rate run and the highest
   * step sustained ended: past a few blocks' worth, the store was falling behind and the rate would not last.
   */
  readonly backlogAtFixedBytes: number | undefined;
  readonly backlogAtMaxBytes: number | undefined;
  readonly results: TargetResults;
  readonly stored: StoredCheck | undefined;
  /** Why the stored events could not be read back, when they could not. */
  readonly storedError: string | undefined;
}

interface Figures {
  readonly runs: number;
  /** Stored events/s at the highest rate sustained, each run's, and their mean. */
  readonly eachEventsPerSecond: readonly (number | undefined)[];
  readonly eventsPerSecond: number | undefined;
  /** Weir's CPU (cores) during the highest step sustained, mean of the runs. */
  readonly cpuAtMax: number | undefined;
  /** Stored events/s of the closed-loop probe (saturation), each run's mean: no bound on latency. */
  readonly saturationEventsPerSecond: number | undefined;
  /** Means over the runs of the fixed-rate run's percentiles, ms. */
  readonly p50: number | undefined;
  readonly p99: number | undefined;
  readonly rssEndMiB: number | undefined;
  /** Stored events with `$geoip_country_code`, over all of the set's runs of this kind. */
  readonly storedShare: number | undefined;
}

export interface SetSummary {
  readonly set: string;
  readonly addresses: number;
  readonly off: Figures;
  readonly on: Figures;
  /** With GeoIP ÷ without. */
  readonly eventsRatio: number | undefined;
  readonly saturationRatio: number | undefined;
  readonly p99Ratio: number | undefined;
}

export interface GeoipBenchResults {
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly durationS: number;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly weirRevision: string;
  readonly transport: string;
  readonly database: string;
  readonly options: GeoipBenchOptions;
  readonly sets: readonly SetInfo[];
  readonly runs: readonly GeoipRun[];
  /** Weir's Geoip.enrich alone, in the runner's process, over each set's addresses. */
  readonly lookups: readonly LookupCost[];
  readonly summary: readonly SetSummary[];
}

function mean(values: readonly (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : known.reduce((a, b) => a + b, 0) / known.length;
}

/** What the closed-loop probe stored per second: the throughput at saturation, whatever the latency. */
function saturationEventsPerSecond(t: TargetResults): number | undefined {
  const m = t.max?.saturation;
  return m === undefined ? undefined : (m.storedEventsPerSecond ?? m.okEventsPerSecond);
}

/** The mean of the runs that found a sustained rate, saying how many did when not all of them did. */
function sustainedCell(f: Figures): string {
  const found = f.eachEventsPerSecond.filter((v) => v !== undefined).length;
  return found === f.runs ? int(f.eventsPerSecond) : `${int(f.eventsPerSecond)} (${found} of ${f.runs} runs)`;
}

function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

function figures(runs: readonly GeoipRun[]): Figures {
  const latency = runs.map((r) => r.results.fixed.measurement.load.latency);
  const stored = runs.map((r) => r.stored).filter((s): s is StoredCheck => s !== undefined);
  const events = stored.reduce((n, s) => n + s.events, 0);
  return {
    runs: runs.length,
    eachEventsPerSecond: runs.map((r) => sustainedEventsPerSecond(r.results)),
    eventsPerSecond: mean(runs.map((r) => sustainedEventsPerSecond(r.results))),
    saturationEventsPerSecond: mean(runs.map((r) => saturationEventsPerSecond(r.results))),
    cpuAtMax: mean(runs.map((r) => r.results.max?.sustained?.measurement.serverCpuCores)),
    p50: mean(latency.map((l) => l.p50)),
    p99: mean(latency.map((l) => l.p99)),
    rssEndMiB: mean(runs.map((r) => (r.rssEndBytes === undefined ? undefined : r.rssEndBytes / 2 ** 20))),
    storedShare: events === 0 ? undefined : stored.reduce((n, s) => n + s.withCountry, 0) / events,
  };
}

export function summarize(sets: readonly SetInfo[], runs: readonly GeoipRun[]): SetSummary[] {
  return sets.map((set) => {
    const off = figures(runs.filter((r) => r.set === set.name && !r.geoip));
    const on = figures(runs.filter((r) => r.set === set.name && r.geoip));
    return {
      set: set.name,
      addresses: set.addresses,
      off,
      on,
      eventsRatio: ratio(on.eventsPerSecond, off.eventsPerSecond),
      saturationRatio: ratio(on.saturationEventsPerSecond, off.saturationEventsPerSecond),
      p99Ratio: ratio(on.p99, off.p99),
    };
  });
}

const mib = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(0));

/** A quarter of the store's default bound on unapplied bytes (256 MiB, WEIR_STORE_MAX_PENDING_MB). */
const BACKLOG_NOTE_BYTES = 64 * 2 ** 20;
const latency = (n: number | undefined): string => (n === undefined ? '–' : ms(n));

function throughputTable(results: GeoipBenchResults): Table {
  return {
    title:
      "GeoIP off vs on: batch events/s stored, means of each Weir's: at the highest rate sustained, and " +
      'at saturation (the closed-loop probe, no latency bound)',
    header: [
      'addresses',
      'sustained off',
      'sustained on',
      'on ÷ off',
      'saturation off',
      'saturation on',
      'on ÷ off',
    ],
    rows: results.summary.map((s) => [
      `${s.set} (${int(s.addresses)})`,
      sustainedCell(s.off),
      sustainedCell(s.on),
      pct(s.eventsRatio),
      int(s.off.saturationEventsPerSecond),
      int(s.on.saturationEventsPerSecond),
      pct(s.saturationRatio),
    ]),
  };
}

function latencyTable(results: GeoipBenchResults): Table {
  const rate = results.options.bench.batchRate;
  return {
    title:
      `GeoIP off vs on: latency at ${int(rate)} req/s (${int(rate * 100)} events/s; ms from the due time, ` +
      'means), RSS after the runs, stored events with $geoip_country_code',
    header: [
      'addresses',
      'p50 off',
      'p50 on',
      'p99 off',
      'p99 on',
      'RSS MiB off',
      'RSS MiB on',
      'share off',
      'share on',
    ],
    rows: results.summary.map((s) => [
      `${s.set} (${int(s.addresses)})`,
      latency(s.off.p50),
      latency(s.on.p50),
      latency(s.off.p99),
      latency(s.on.p99),
      mib(s.off.rssEndMiB),
      mib(s.on.rssEndMiB),
      pct(s.off.storedShare),
      pct(s.on.storedShare),
    ]),
  };
}

/**
 * The lookup alone beside the Weirs: µs per event, what that comes to in cores at the events/s Weir stored
 * without GeoIP, and the CPU µs Weir spent per event at its highest sustained step, off and on (cores used
 * ÷ events/s): the gap beyond the lookup is what follows it.
 */
function lookupTable(results: GeoipBenchResults): Table {
  return {
    title:
      "Weir's Geoip.enrich alone (this process, no HTTP, ingest or store), beside what GeoIP cost the Weirs",
    header: [
      'addresses',
      'enrich µs/event',
      'cores at events/s off',
      'enriched props chars',
      'Weir CPU µs/event off',
      'Weir CPU µs/event on',
    ],
    rows: results.lookups.map((l) => {
      const s = results.summary.find((x) => x.set === l.set);
      const perEvent = (f: Figures | undefined): number | undefined =>
        f?.eventsPerSecond === undefined || f.cpuAtMax === undefined
          ? undefined
          : (f.cpuAtMax * 1e6) / f.eventsPerSecond;
      const micros = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(1));
      return [
        `${l.set} (${int(s?.addresses)})`,
        l.microsPerEvent.toFixed(2),
        s?.off.eventsPerSecond === undefined ? '–' : cores((l.microsPerEvent * s.off.eventsPerSecond) / 1e6),
        int(l.enrichedChars),
        micros(perEvent(s?.off)),
        micros(perEvent(s?.on)),
      ];
    }),
  };
}

function runsTable(results: GeoipBenchResults): Table {
  return {
    title: 'Each Weir, in the order run',
    header: [
      'set',
      'round',
      'GeoIP',
      'ready s',
      'max events/s',
      'cpu at max',
      'backlog MiB',
      'saturation ev/s',
      'fixed ok req/s',
      'p50',
      'p99',
      'p99.9',
      'RSS ready',
      'RSS end',
      'stored',
      '$geoip share',
      'loopback $ip',
      'props chars',
      'person props chars',
      'sample agrees',
      'contended',
    ],
    rows: results.runs.map((r) => {
      const fixed = r.results.fixed.measurement;
      const max = r.results.max?.sustained?.measurement;
      const s = r.stored;
      const agrees = s?.sample.filter((e) => e.country === e.expected).length;
      const measured = allRuns(r.results);
      return [
        r.set,
        String(r.round),
        r.geoip ? 'on' : 'off',
        (r.startupMs / 1000).toFixed(1),
        int(sustainedEventsPerSecond(r.results)),
        cores(max?.serverCpuCores),
        mib(r.backlogAtMaxBytes === undefined ? undefined : r.backlogAtMaxBytes / 2 ** 20),
        int(saturationEventsPerSecond(r.results)),
        int(fixed.load.okPerSecond),
        ms(fixed.load.latency.p50),
        ms(fixed.load.latency.p99),
        ms(fixed.load.latency.p999),
        mib(r.rssReadyBytes === undefined ? undefined : r.rssReadyBytes / 2 ** 20),
        mib(r.rssEndBytes === undefined ? undefined : r.rssEndBytes / 2 ** 20),
        s ? int(s.events) : (r.storedError ?? '–'),
        s ? pct(s.events === 0 ? undefined : s.withCountry / s.events) : '–',
        s ? int(s.loopback) : '–',
        s ? int(s.meanPropertiesChars) : '–',
        s ? int(s.meanPersonPropertiesChars) : '–',
        s ? `${agrees}/${s.sample.length}` : '–',
        `${measured.filter(contended).length}/${measured.length}`,
      ];
    }),
  };
}

function setsTable(results: GeoipBenchResults): Table {
  return {
    title: 'Address sets (the same requests with GeoIP off and on)',
    header: [
      'set',
      'addresses',
      'IPv6',
      'in the database',
      'events a cycle',
      'requests a cycle',
      'mean body',
      'bodies sha256',
    ],
    rows: results.sets.map((s) => [
      s.name,
      int(s.addresses),
      int(s.ipv6),
      pct(s.knownShare),
      int(s.cycleEvents),
      int(s.cycleRequests),
      `${int(s.meanBodyBytes)} B`,
      s.bodiesSha256.slice(0, 16),
    ]),
  };
}

/** What a reader should not miss: GeoIP that did nothing, failed read-backs, odd exits, contention. */
export function notes(results: GeoipBenchResults): string[] {
  const out: string[] = [];
  for (const r of results.runs) {
    const where = `${r.set}, round ${r.round}, GeoIP ${r.geoip ? 'on' : 'off'}`;
    const s = r.stored;
    if (r.storedError !== undefined) out.push(`- ${where}: stored events not read back: ${r.storedError}`);
    if (s !== undefined) {
      const share = s.events === 0 ? 0 : s.withCountry / s.events;
      const known = results.sets.find((set) => set.name === r.set)?.knownShare ?? 0;
      if (r.geoip && share < known * 0.9)
        out.push(
          `- ${where}: only ${pct(share)} of the stored events have $geoip_country_code, where ` +
            `${pct(known)} of the addresses sent have a country: GeoIP did not run on every event (is the ` +
            'GeoIP wiring in this Weir?), so this run did not measure its cost.',
        );
      if (!r.geoip && s.withCountry > 0)
        out.push(`- ${where}: ${int(s.withCountry)} events have $geoip_country_code with GeoIP off.`);
      if (s.loopback > 0)
        out.push(`- ${where}: ${int(s.loopback)} events were stored with a loopback $ip, not the one sent.`);
      const wrong = s.sample.filter((e) => e.country !== e.expected);
      if (wrong.length > 0)
        out.push(
          `- ${where}: sampled events whose country is not the database's: ` +
            wrong
              .map((e) => `${e.ip} stored ${e.country ?? 'none'}, database ${e.expected ?? 'none'}`)
              .join('; '),
        );
    }
    const set = results.sets.find((info) => info.name === r.set);
    const sent = r.results.fixed.measurement.meanBodyBytes;
    if (set !== undefined && sent !== set.meanBodyBytes)
      out.push(
        `- ${where}: the generator's bodies averaged ${sent} bytes, not the ${set.meanBodyBytes} of the set.`,
      );
    if (r.results.max !== undefined && r.results.max.sustained === undefined) {
      const probe = r.results.max.saturation;
      out.push(
        `- ${where}: no rate sustained; the closed-loop probe got ${int(probe.load.okPerSecond)} req/s ` +
          `answered 200 (${failures(probe)} failed).`,
      );
    }
    for (const [what, bytes] of [
      ['fixed-rate run', r.backlogAtFixedBytes],
      ['highest step sustained', r.backlogAtMaxBytes],
    ] as const)
      if (bytes !== undefined && bytes > BACKLOG_NOTE_BYTES)
        out.push(
          `- ${where}: ${mib(bytes / 2 ** 20)} MiB committed and not yet applied as the ${what} ended: the ` +
            'store was falling behind, and the rate would not have held for long.',
        );
    out.push(...targetNotes(where, r.results));
  }
  return out;
}

/** Each kind's fixed-rate histograms, merged over its rounds: one line per set and GeoIP setting. */
function plot(results: GeoipBenchResults): string | undefined {
  const lines = results.sets.flatMap((set) =>
    [false, true].map((geoip) => {
      const merged = build({ numberOfSignificantValueDigits: 3, autoResize: true });
      for (const r of results.runs)
        if (r.set === set.name && r.geoip === geoip)
          merged.add(decodeFromCompressedBase64(r.results.fixed.measurement.load.latencyHistogram));
      return {
        label: `${set.name} (${int(set.addresses)}), GeoIP ${geoip ? 'on' : 'off'}`,
        histogram: encodeIntoCompressedBase64(merged),
      };
    }),
  );
  return latencyPlot(
    `Batch capture latency at ${results.options.bench.batchRate} req/s, GeoIP off and on (from due time)`,
    lines,
  );
}

export function consoleReport(results: GeoipBenchResults): string {
  const n = notes(results);
  return [
    renderText(setsTable(results)),
    renderText(runsTable(results)),
    renderText(throughputTable(results)),
    renderText(latencyTable(results)),
    renderText(lookupTable(results)),
    ...(n.length > 0 ? [`notes:\n${n.join('\n')}`] : []),
  ].join('\n\n');
}

const PLOT_NAME = 'geoip-latency.svg';

/** Weir's GeoIP cache: two generations of 5,000 addresses (src/capture/geoip.ts). */
const CACHE_ADDRESSES = 10_000;

function addressesLine(results: GeoipBenchResults): string {
  const sets = results.sets
    .map((s) => {
      const where =
        s.addresses > CACHE_ADDRESSES
          ? `${(s.addresses / CACHE_ADDRESSES).toFixed(1)}× what the cache holds, so nearly every lookup misses it`
          : 'all of them stay in the cache';
      return `${s.name}, ${int(s.addresses)} addresses: ${where}`;
    })
    .join('; ');
  return (
    '- **Addresses:** every event carries `properties.$ip`, event n of a cycle the n-th address (in turn), so ' +
    'both settings get byte-identical bodies from one generator process (the Host header differs by the port ' +
    `alone). Weir's GeoIP cache keeps up to ${int(CACHE_ADDRESSES)} addresses (${sets}). The ` +
    `${int(DISTINCT_IDS)} distinct ids are sent in the same order each round of a cycle: with more addresses ` +
    'than ids a person is seen from another address each round (their `$set` of `$geoip_*` mostly changes, so ' +
    'the person is rewritten); with fewer, always from the same one.'
  );
}

function pairs(rounds: number): string {
  if (rounds === 1) return 'one pair of fresh embedded Weirs, GeoIP off then on.';
  return (
    `${rounds} pairs of fresh embedded Weirs, GeoIP off then on, then on then off, and so on (a drift of ` +
    'the machine over the run falls on both settings alike).'
  );
}

function markdown(results: GeoipBenchResults, jsonName: string, withPlot: boolean): string {
  const o = results.options;
  const b = o.bench;
  const machine = Object.entries(results.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const n = notes(results);
  return [
    '# What GeoIP costs capture: batch events/s with WEIR_GEOIP off and on',
    '',
    `Made by \`${results.command}\` on ${results.startedAt} (finished ${results.finishedAt}, ` +
      `${Math.round(results.durationS)} s); Weir at ${results.weirRevision}, on ${results.transport}.`,
    `Raw figures and HdrHistograms: [${jsonName}](${jsonName}).${o.quick ? ' A --quick run: not for quoting.' : ''}`,
    '',
    `- **Machine:** ${machine}. The generator and Weir share the cores.`,
    `- **Database:** ${results.database}.`,
    `- **What runs:** for each address set, one at a time, ${pairs(o.rounds)} Each Weir gets ` +
      `the capture bench's batch runs (100 events a request): the first-sight warm-up, a ${b.durationMs / 1000} s ` +
      `open-loop run at ${b.batchRate} req/s, then the max-throughput search (closed-loop probe, then ${b.stepMs / 1000} s ` +
      `open-loop steps; sustained = ≥ 97% answered 200, ≤ 0.1% failed, p99 ≤ ${b.maxP99Ms} ms). "events/s" ` +
      "is Weir's `weir_ingest_events_total` over the highest step sustained: stored, not just answered.",
    addressesLine(results),
    "- **Checked:** after each Weir's runs, the share of its stored events with `$geoip_country_code` (query " +
      'API, over every event it stored), against the share of the addresses that the database has a country ' +
      'for; and five stored events whose country is looked up again here in the same files.',
    '',
    ...[
      throughputTable(results),
      latencyTable(results),
      lookupTable(results),
      setsTable(results),
      runsTable(results),
    ].flatMap((t) => [renderMarkdown(t), '']),
    ...(withPlot ? [`![latency by percentile](${PLOT_NAME})`, ''] : []),
    '## Notes from this run',
    '',
    ...(n.length > 0
      ? n
      : ['- nothing to note: GeoIP ran on every event it should have, no contention, clean exits.']),
    '',
  ].join('\n');
}

/** Writes geoip-<date>.json, geoip.md and geoip-latency.svg into `outDir`; returns their paths. */
export function writeGeoipResults(results: GeoipBenchResults, outDir: string): string[] {
  const { dir, jsonName, json, md } = resultFiles(outDir, 'geoip', results.startedAt);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  const svg = plot(results);
  if (svg !== undefined) writeFileSync(join(dir, PLOT_NAME), svg);
  writeFileSync(md, markdown(results, jsonName, svg !== undefined));
  return [json, md, ...(svg === undefined ? [] : [join(dir, PLOT_NAME)])];
}
