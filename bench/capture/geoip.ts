/**
 * `npm run bench:geoip`: what GeoIP (WEIR_GEOIP=on) costs batch capture. For each address set, fresh embedded
 * Weirs with GeoIP off and on, in alternating order, each given the capture bench's batch runs — the
 * first-sight warm-up, a fixed-rate run, the max-throughput search — with events carrying public addresses
 * (geoip-ips.ts) rather than loopback's, which finds nothing. After each Weir's runs its stored events are
 * read back, so a GeoIP that did nothing is seen rather than measured as free. Prints the tables and writes
 * bench/results/geoip.md with the raw JSON beside it.
 */
import { runBench } from './child-processes.ts';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadUws } from '../../src/http/uws-transport.ts';
import { buildBodies, DISTINCT_IDS, EVENTS_PER_BATCH } from '../../src/loadgen/payloads.ts';
import { API_KEY } from './bench-key.ts';
import { GeneratorClient } from './generator-client.ts';
import { checkStored, knownShare, openCountryBook, residentBytes, type CountryBook } from './geoip-check.ts';
import { publicAddresses } from './geoip-ips.ts';
import { measureLookups, type LookupCost } from './geoip-lookup.ts';
import { GEOIP_USAGE, parseGeoipOptions, type AddressSet, type GeoipBenchOptions } from './geoip-options.ts';
import { consoleReport, summarize, writeGeoipResults, type GeoipRun, type SetInfo } from './geoip-report.ts';
import { QuietGate } from './machine-load.ts';
import type { BenchContext, RunSpec } from './measure.ts';
import type { BenchTransport } from './options.ts';
import { machineInfo, weirRevision } from './results.ts';
import { runFixedRate } from './scenario-fixed-rate.ts';
import { runMaxThroughput } from './scenario-max-throughput.ts';
import { HOST, startWeir, type Target } from './targets.ts';

/** The personal key each Weir is started with, for reading its events back through the query API. */
const PERSONAL_KEY = 'phx_bench_geoip_00000000000000000000000000000';

/** The longest a Weir may take to commit what its last run left before its memory and events are read. */
const SETTLE_MS = 60_000;

interface Sent {
  readonly info: SetInfo;
  readonly file: string;
}

/** Writes a set's addresses for the generator and describes the requests they make. */
function prepareSet(set: AddressSet, all: readonly string[], book: CountryBook, dir: string): Sent {
  const ips = all.slice(0, set.count);
  const file = join(dir, `${set.name}.txt`);
  writeFileSync(file, `${ips.join('\n')}\n`);
  // What the generator builds from the same file (generator-process.ts), to name the bodies both settings get.
  const bodies = buildBodies('batch', API_KEY, EVENTS_PER_BATCH, ips);
  const hash = createHash('sha256');
  for (const body of bodies) hash.update(body);
  const bytes = bodies.reduce((n, body) => n + Buffer.byteLength(body), 0);
  return {
    file,
    info: {
      name: set.name,
      addresses: ips.length,
      ipv6: ips.filter((ip) => ip.includes(':')).length,
      knownShare: knownShare(book, ips),
      cycleEvents: bodies.length * EVENTS_PER_BATCH,
      cycleRequests: bodies.length,
      bodiesSha256: hash.digest('hex'),
      meanBodyBytes: Math.round(bytes / bodies.length),
    },
  };
}

/** weir_store_pending_bytes: committed to the embedded store's log, not yet applied to its tables. */
async function storePendingBytes(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const line = /^weir_store_pending_bytes\s+(\S+)/m.exec(await res.text());
  return line ? Number(line[1]) : 0;
}

/**
 * The target, settled only once the store has also applied its log: GeoIP makes each stored event several
 * times larger, and a run that leaves the log behind would have the next one answered 503 for work that is
 * not its own (the capture bench's settle waits for ingest alone).
 */
function settledWithStore(target: Target, baseUrl: string): Target {
  return {
    ...target,
    async settle(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      if (!(await target.settle(timeoutMs))) return false;
      for (;;) {
        if ((await storePendingBytes(baseUrl)) === 0) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** Records the store's backlog as each run ends: a step sustained while the log piles up would not last. */
function backlogRecorder(baseUrl: string): {
  readonly byRate: Map<number, number>;
  alongside(rate: number): NonNullable<RunSpec['alongside']>;
} {
  const byRate = new Map<number, number>();
  return {
    byRate,
    alongside: (rate) => ({
      start: () => Promise.resolve(),
      // A run made again records over the first attempt, as the second is the one kept.
      stop: async () => {
        byRate.set(rate, await storePendingBytes(baseUrl));
      },
    }),
  };
}

/** One fresh Weir with GeoIP on or off, its batch runs, then its memory and its stored events. */
async function measureWeir(
  bench: BenchContext,
  transport: BenchTransport,
  set: Sent,
  geoip: boolean,
  round: number,
  book: CountryBook,
): Promise<GeoipRun> {
  const { options } = bench;
  bench.progress(
    `${set.info.name} addresses (${set.info.addresses}), round ${round}, GeoIP ${geoip ? 'on' : 'off'}`,
  );
  const started = performance.now();
  const weir = await startWeir(transport, {
    WEIR_GEOIP: geoip ? 'on' : 'off',
    WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_KEY,
  });
  const startupMs = performance.now() - started;
  const baseUrl = `http://${HOST}:${weir.port}`;
  const target = settledWithStore(weir, baseUrl);
  const backlog = backlogRecorder(baseUrl);
  let exit: number | string;
  let run: Omit<GeoipRun, 'results'> & { results: Omit<GeoipRun['results'], 'log' | 'exit'> };
  try {
    const rssReadyBytes = await residentBytes(baseUrl);
    const fixed = await runFixedRate(bench, target, 'batch', options.batchRate, backlog.alongside(-1));
    const max = await runMaxThroughput(bench, target, 'batch', 0, (rate) => backlog.alongside(rate));
    const sustainedRate = max.sustained?.rate;
    if (!(await target.settle(SETTLE_MS)))
      bench.progress(`  (still committing ${SETTLE_MS / 1000} s after the last run)`);
    const rssEndBytes = await residentBytes(baseUrl);
    let stored: GeoipRun['stored'];
    let storedError: string | undefined;
    try {
      stored = await checkStored(baseUrl, PERSONAL_KEY, geoip ? book : undefined);
      const share = stored.events === 0 ? 0 : stored.withCountry / stored.events;
      bench.progress(
        `  stored    ${stored.events} events, ${(share * 100).toFixed(1)}% with $geoip_country_code ` +
          `(${(set.info.knownShare * 100).toFixed(1)}% of the addresses have a country), ${stored.loopback} ` +
          `with a loopback $ip, properties ${Math.round(stored.meanPropertiesChars)} chars, person properties ` +
          `${Math.round(stored.meanPersonPropertiesChars)}; sample ` +
          stored.sample.map((e) => `${e.ip}=${e.country ?? '-'}`).join(' ') +
          ` (${Math.round(stored.queryMs)} ms)`,
      );
    } catch (err) {
      storedError = err instanceof Error ? err.message : String(err);
      bench.progress(`  stored    not read back: ${storedError}`);
    }
    run = {
      set: set.info.name,
      geoip,
      round,
      startupMs,
      rssReadyBytes,
      rssEndBytes,
      backlogAtFixedBytes: backlog.byRate.get(-1),
      backlogAtMaxBytes: sustainedRate === undefined ? undefined : backlog.byRate.get(sustainedRate),
      results: { fixed, max },
      stored,
      storedError,
    };
  } finally {
    exit = await weir.stop();
  }
  return { ...run, results: { ...run.results, log: weir.log(), exit } };
}

/** Off then on in odd rounds, on then off in even ones: A B B A. */
function order(round: number): boolean[] {
  return round % 2 === 1 ? [false, true] : [true, false];
}

function commandLine(args: readonly string[]): string {
  const quoted = args.map((a) => (/^[\w./=:,-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(' ');
  if (process.env['npm_lifecycle_event'] === 'bench:geoip')
    return `npm run bench:geoip${quoted ? ` -- ${quoted}` : ''}`;
  return `node bin/run-ts.js bench/capture/geoip.ts${quoted ? ` ${quoted}` : ''}`;
}

function pickTransport(asked: BenchTransport | undefined): BenchTransport {
  const uws = loadUws();
  if (!('reason' in uws)) return asked ?? 'uws';
  if (asked === 'uws') throw new Error(`--transport uws: ${uws.reason}`);
  return 'node';
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  let options: GeoipBenchOptions | 'help';
  let transport: BenchTransport;
  let book: CountryBook;
  try {
    options = parseGeoipOptions(args);
    if (options === 'help') {
      console.log(GEOIP_USAGE);
      return 0;
    }
    transport = pickTransport(options.transport);
    book = openCountryBook();
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n${GEOIP_USAGE}`);
    return 2;
  }
  const startedAt = new Date().toISOString();
  // At the start: others may commit while the bench runs.
  const revision = weirRevision();
  const t0 = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-geoip-'));
  const runs: GeoipRun[] = [];
  const sets: SetInfo[] = [];
  let lookups: LookupCost[];
  // One gate for the whole bench: at most 10 s before any one run, 8 contended runs made again.
  const quiet = new QuietGate(options.bench.quietWaitMs, 10_000, options.bench.quietWaitMs > 0 ? 8 : 0);
  try {
    const all = publicAddresses(Math.max(...options.sets.map((s) => s.count)));
    for (const set of options.sets) {
      const sent = prepareSet(set, all, book, dir);
      sets.push(sent.info);
      process.stderr.write(
        `${set.name}: ${sent.info.addresses} addresses (${sent.info.ipv6} IPv6, ` +
          `${(sent.info.knownShare * 100).toFixed(1)}% in the database), ${sent.info.cycleRequests} requests ` +
          `of ${EVENTS_PER_BATCH} events a cycle, ${DISTINCT_IDS} distinct ids\n`,
      );
      // A generator per set, given its addresses; both settings of the set are sent by it.
      const generator = GeneratorClient.start({ BENCH_GENERATOR_IPS: sent.file });
      const bench: BenchContext = {
        generator,
        options: options.bench,
        quiet,
        progress: (line) => process.stderr.write(`${line}\n`),
      };
      try {
        for (let round = 1; round <= options.rounds; round++)
          for (const geoip of order(round))
            runs.push(await measureWeir(bench, transport, sent, geoip, round, book));
      } finally {
        await generator.stop();
      }
    }
    // After every Weir has stopped, so the two never share the cores.
    process.stderr.write('Geoip.enrich in this process, no Weir around it\n');
    lookups = measureLookups(options.sets.map((set) => ({ name: set.name, ips: all.slice(0, set.count) })));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const results = {
    command: commandLine(args),
    startedAt,
    finishedAt: new Date().toISOString(),
    durationS: (performance.now() - t0) / 1000,
    machine: machineInfo(),
    weirRevision: revision,
    transport: transport === 'uws' ? 'uWS' : "Node's http",
    database: book.database,
    options,
    sets,
    runs,
    lookups,
    summary: summarize(sets, runs),
  };
  const written = writeGeoipResults(results, options.bench.outDir);
  console.log(`\n${consoleReport(results)}\n\nwrote ${written.join('\n      ')}`);
  return 0;
}

runBench(main);
