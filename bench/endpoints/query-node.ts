/**
 * `npm run bench:query-node`: what a `weir query` node serves, and what its hop to the store owner costs
 * (the figures of deploy/README.md's "runs/s per query node").
 *
 * All real, on loopback: a `nats-server -js`, one `weir ingest` that owns the embedded store (chDB) and serves
 * the store API (`WEIR_STORE_TOKEN`), and one `weir query` node (`WEIR_STORE_URL` = the ingest), both with the
 * catalog in NATS KV. The data (bench/query/dataset.ts, ~1M events of project 1) is made first by an
 * in-process Weir on the data directory, which is then closed: chDB lets one process own a data directory.
 *
 * - Cached runs at 1 and 50 callers (and wrk's 50 connections when wrk is installed), on the node and on the
 *   owner's own API: latency, runs/s and each process's CPU over the timed span (/proc).
 * - Direct runs (`refresh: 'force'`) through the node and on the owner, one caller, alternated in rounds: a
 *   small query (one day), one over all the events, and one with a large result (50,000 rows). The node's
 *   p50 minus the owner's is the hop's cost (HTTP to the owner, the result as JSON both ways).
 * - Where a direct run's time goes: `debug` timings (the store step as each process sees it) and the owner's
 *   store API called bare, its answer's bytes and the cost of parsing them.
 *
 * Callers run in their own process (load.ts via callers.ts, or wrk). Prints the report and writes
 * bench/results/query-node.md with the raw figures in bench/results/query-node-<timestamp>.json.
 * `--quick`: ~100k events, fewer requests, nothing written.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { startWeir } from '../../src/main.ts';
import { DEFAULT_LIMITS, printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { compileQuery } from '../../src/query/hogql-query.ts';
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import {
  REPO_ROOT,
  freePort,
  processCpuSeconds,
  spawnTracked,
  stopChild,
  waitUntilReady,
} from '../capture/child-processes.ts';
import { CONTENDED_CORES, OtherLoadProbe, QuietGate } from '../capture/machine-load.ts';
import { startNats, type BenchNats } from '../capture/nats-server.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { WEIR_LAUNCH_ENV, WEIR_LAUNCH_NODE_ARGS } from '../capture/targets.ts';
import { generate } from '../query/dataset.ts';
import { runCallers } from './callers.ts';
import type { LoadSpec } from './load.ts';
import { runWrk, wrkAvailable } from './wrk.ts';

const quick = process.argv.includes('--quick');
const KEY = 'phx_bench_query_node_00000000000000000000000';
/** The store password of the owner and the node (16 characters or more). */
const STORE_TOKEN = 'bench-query-node-store-token-0000';
/** Project 1 holds 9 in 10 generated events: this many makes ~1M of its own (~100k with --quick). */
const GENERATED = quick ? 111_112 : 1_111_112;
/** The query and variables of bench/endpoints/run.ts. */
const QUERY = `SELECT event, count() AS n, uniq(person_id) AS people FROM events
  WHERE timestamp >= {variables.since} AND timestamp < {variables.until}
  GROUP BY event ORDER BY event`;
const DECLARED = { since: { type: 'date' as const }, until: { type: 'date' as const } };
/** The data spans 90 days from 2026-01-01, evenly: one day is ~1/90 of it. */
const ALL = { since: '2026-01-01', until: '2026-04-01' };
const ONE_DAY = { since: '2026-02-01', until: '2026-02-02' };
const BIG_QUERY = 'SELECT distinct_id, event, timestamp FROM events LIMIT 50000';
const BIN = join(REPO_ROOT, 'bin/weir.js');

const startedAt = performance.now();
const date = new Date();
const stamp = date
  .toISOString()
  .replace(/[-:]/g, '')
  .replace(/\.\d+Z$/, 'Z');
const command = `npm run bench:query-node${quick ? ' -- --quick' : ''}`;
// The first /proc read runs getconf; not inside a timed span.
processCpuSeconds(process.pid);

type Server = 'query node' | 'owner';

interface Role {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  output(): string;
}

/** A timed load of one kind: percentiles over every request, CPU per process over the timed span. */
interface Row {
  readonly server: Server;
  readonly scenario: string;
  readonly callers: string;
  readonly requests: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly perSecond: number;
  /** Cores over the timed span. */
  readonly nodeCpu: number;
  readonly ownerCpu: number;
  readonly natsCpu: number;
  readonly callerCpu: number;
  /** Cores used by anything but this benchmark's processes meanwhile. */
  readonly otherCores: number | undefined;
  readonly statuses: Record<string, number>;
}

/** Direct runs through the node and on the owner, alternated in rounds. */
interface Comparison {
  readonly scenario: string;
  readonly body: object;
  readonly endpoint: string;
  /** Events the query reads (of project 1), rows it returns, bytes of its answer. */
  readonly events: number;
  readonly resultRows: number;
  readonly answerBytes: number;
  readonly rounds: number;
  readonly perRound: number;
  readonly node: Side;
  readonly owner: Side;
  readonly hopMs: number;
  readonly hopPct: number;
  /** Median over rounds of (node p50 − owner p50) of the round. */
  readonly hopMsRoundMedian: number;
  readonly otherCores: number | undefined;
}

interface Side {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly statuses: Record<string, number>;
  /** CPU each process spent per run, in ms (over the timed spans). */
  readonly nodeCpuMsPerRun: number;
  readonly ownerCpuMsPerRun: number;
  /** Every latency, ms, sorted. */
  readonly latenciesMs: number[];
}

/** Where a direct run's time goes, from `debug` runs: client round trip, the run, its store step. */
interface Breakdown {
  readonly scenario: string;
  readonly server: Server;
  readonly runs: number;
  readonly clientMs: number;
  readonly runMs: number;
  readonly storeStepMs: number;
}

/** The owner's store API called bare from this process with the large result's SQL. */
interface StoreApiBare {
  readonly runs: number;
  readonly roundTripMs: number;
  readonly bytes: number;
  readonly parseMs: number;
  readonly stringifyMs: number;
}

/**
 * A query node's client of the store API, alone: `SELECT 1` sent to the owner's store API one request after
 * another from this process, by `fetch` (as src/store/remote-store.ts did before 7240698) and by node:http (as it does now)
 * with a keep-alive agent; the latency and this process's CPU per request.
 */
interface StoreClient {
  readonly client: 'fetch' | 'node:http';
  readonly requests: number;
  readonly p50: number;
  readonly cpuMsPerRequest: number;
}

let clockTicks: number | undefined;

/** CPU seconds of this process's children that have exited and been waited for (the callers, wrk). */
function reapedChildrenCpuSeconds(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / clockTicks;
}

/**
 * The other load over a span with many short-lived callers' processes (runs alternated in rounds, wrk):
 * capture's probe, counting the servers and this process as the benchmark's, less the CPU of the callers'
 * processes that exited meanwhile (in this process's cutime and cstime once reaped).
 */
class SpanLoad {
  readonly #probe: OtherLoadProbe;
  readonly #children = reapedChildrenCpuSeconds();
  readonly #started = performance.now();

  constructor(pids: readonly number[]) {
    this.#probe = new OtherLoadProbe(pids);
  }

  otherCores(): number | undefined {
    const other = this.#probe.otherCores();
    if (other === undefined) return undefined;
    const seconds = (performance.now() - this.#started) / 1000;
    return Math.max(0, other - (reapedChildrenCpuSeconds() - this.#children) / seconds);
  }
}

const rows: Row[] = [];
const storeClients: StoreClient[] = [];
const comparisons: Comparison[] = [];
const breakdowns: Breakdown[] = [];
let storeApiBare: StoreApiBare | undefined;
const failures: string[] = [];
const dataset: Record<string, number> = {};
const sameAnswer: Record<string, string> = {};

const dir = mkdtempSync(join(tmpdir(), 'weir-bench-query-node-'));
const dataDir = join(dir, 'owner-data');
let nats: BenchNats | undefined;
let ingest: Role | undefined;
let node: Role | undefined;

try {
  // 1. The data, by an in-process Weir (file catalog) on the owner's data directory; closed before the roles start.
  {
    const weir = await startWeir(
      loadConfig({
        WEIR_PORT: '0',
        WEIR_DATA_DIR: dataDir,
        WEIR_BOOTSTRAP_PERSONAL_API_KEY: KEY,
        WEIR_LOG_LEVEL: 'silent',
      }),
      createLogger('silent'),
    );
    try {
      process.stderr.write(`generating ${GENERATED.toLocaleString('en')} events…\n`);
      await generate(weir.store as unknown as ChdbClient, { events: GENERATED });
      await weir.store.command('OPTIMIZE TABLE events FINAL');
      const [sizes] = await weir.store.query<{ total: string; day: string }>(
        `SELECT count() AS total, countIf(timestamp >= '${ONE_DAY.since}' AND timestamp < '${ONE_DAY.until}') AS day
         FROM events FINAL WHERE project_id = 1`,
      );
      dataset['generated'] = GENERATED;
      dataset['project1'] = Number(sizes!.total);
      dataset['oneDay'] = Number(sizes!.day);
      process.stderr.write(`events of project 1: ${JSON.stringify(dataset)}\n`);
    } finally {
      await weir.close();
    }
  }

  // 2. NATS, the owner (weir ingest), the query node (weir query).
  nats = await startNats();
  const common = {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '',
    WEIR_LOG_LEVEL: 'warn',
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'nats',
    WEIR_STORE_TOKEN: STORE_TOKEN,
    WEIR_BOOTSTRAP_PERSONAL_API_KEY: KEY,
  };
  ingest = await spawnRole('ingest', { ...common, WEIR_DATA_DIR: dataDir });
  node = await spawnRole('query', {
    ...common,
    WEIR_DATA_DIR: join(dir, 'node-data'),
    WEIR_STORE_URL: ingest.url,
  });
  const servers: Record<Server, Role> = { 'query node': node, owner: ingest };
  const pids = [node.pid, ingest.pid, nats.pid];
  process.stderr.write(`owner ${ingest.url} (pid ${ingest.pid}), query node ${node.url} (pid ${node.pid})\n`);

  // 3. The endpoints, made through the node; the owner sees them through the KV watch.
  await createEndpoint(node.url, {
    name: 'bench',
    query: { kind: 'HogQLQuery', query: QUERY },
    variables: DECLARED,
    cache_age_seconds: 3600,
  });
  await createEndpoint(node.url, {
    name: 'big',
    query: { kind: 'HogQLQuery', query: BIG_QUERY },
    cache_age_seconds: 3600,
  });
  for (const name of ['bench', 'big']) await waitForEndpoint(ingest.url, name);

  const runPath = (name: string): string => `/api/projects/1/endpoints/${name}/run`;
  const gate = new QuietGate(quick ? 30_000 : 180_000, 15_000, 0);

  const load = async (
    server: Server,
    scenario: string,
    body: object,
    callers: number,
    requests: number,
  ): Promise<void> => {
    await gate.wait(pids);
    const spec: LoadSpec = {
      url: `${servers[server].url}${runPath('bench')}`,
      key: KEY,
      body: JSON.stringify(body),
      concurrency: callers,
      requests,
    };
    try {
      const { result: r, serverCpu, otherCores } = await runCallers(spec, pids);
      const row: Row = {
        server,
        scenario,
        callers: String(callers),
        requests: r.latenciesMs.length,
        p50: at(r.latenciesMs, 0.5),
        p99: at(r.latenciesMs, 0.99),
        max: r.latenciesMs[r.latenciesMs.length - 1]!,
        perSecond: r.latenciesMs.length / r.seconds,
        nodeCpu: serverCpu[0]!,
        ownerCpu: serverCpu[1]!,
        natsCpu: serverCpu[2]!,
        callerCpu: r.cpuCores,
        otherCores,
        statuses: r.statuses,
      };
      rows.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
    } catch (err) {
      failures.push(`${server}, ${scenario}, ${callers} callers: ${String(err).slice(0, 300)}`);
      process.stderr.write(`${failures[failures.length - 1]}\n`);
    }
  };

  const loadWrk = async (server: Server, body: object): Promise<void> => {
    await gate.wait(pids);
    const before = pids.map(processCpuSeconds);
    const probe = new SpanLoad(pids);
    const t0 = performance.now();
    try {
      const r = await runWrk({
        url: `${servers[server].url}${runPath('bench')}`,
        body: JSON.stringify(body),
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
        connections: 50,
        seconds: quick ? 3 : 10,
      });
      const seconds = (performance.now() - t0) / 1000;
      const cores = pids.map((pid, i) => {
        const now = processCpuSeconds(pid);
        const then = before[i];
        return now === undefined || then === undefined ? Number.NaN : (now - then) / seconds;
      });
      const row: Row = {
        server,
        scenario: 'cached',
        callers: 'wrk 50',
        requests: r.requests,
        p50: r.p50,
        p99: r.p99,
        max: r.max,
        perSecond: r.perSecond,
        nodeCpu: cores[0]!,
        ownerCpu: cores[1]!,
        natsCpu: cores[2]!,
        callerCpu: Number.NaN,
        otherCores: probe.otherCores(),
        statuses: r.non2xx > 0 ? { '2xx': r.requests - r.non2xx, other: r.non2xx } : { '2xx': r.requests },
      };
      rows.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
    } catch (err) {
      failures.push(`${server}, cached, wrk: ${String(err).slice(0, 300)}`);
      process.stderr.write(`${failures[failures.length - 1]}\n`);
    }
  };

  /** Direct runs, one caller, node and owner in turn (which goes first alternates by round). */
  const alternate = async (
    scenario: string,
    endpoint: string,
    body: object,
    events: number,
    rounds: number,
    perRound: number,
    /** Whether the query's rows come in one order (else only the answers' columns, types and row counts are compared). */
    ordered = true,
  ): Promise<void> => {
    // The answer of each (also a warm-up): its size, and whether both answer the same result.
    const answers = await Promise.all(
      (['query node', 'owner'] as const).map(async (s) => {
        const res = await post(`${servers[s].url}${runPath(endpoint)}`, body);
        const text = await res.text();
        if (res.status !== 200) throw new Error(`${s} ${scenario}: ${res.status} ${text.slice(0, 300)}`);
        return text;
      }),
    );
    const result = (text: string): string => {
      const j = JSON.parse(text) as { results: unknown[]; columns: unknown; types: unknown };
      return JSON.stringify([ordered ? j.results : j.results.length, j.columns, j.types]);
    };
    const same = result(answers[0]!) === result(answers[1]!);
    sameAnswer[scenario] = !same ? 'NO' : ordered ? 'yes' : 'yes (columns, types, row count: rows unordered)';
    const resultRows = (JSON.parse(answers[1]!) as { results: unknown[] }).results.length;

    const acc: Record<Server, { lat: number[]; statuses: Record<string, number>; cpu: number[]; n: number }> =
      {
        'query node': { lat: [], statuses: {}, cpu: [0, 0], n: 0 },
        owner: { lat: [], statuses: {}, cpu: [0, 0], n: 0 },
      };
    const roundHops: number[] = [];
    await gate.wait(pids);
    const probe = new SpanLoad(pids);
    for (let round = 0; round < rounds; round++) {
      const order: Server[] = round % 2 === 0 ? ['query node', 'owner'] : ['owner', 'query node'];
      const p50s: Partial<Record<Server, number>> = {};
      for (const server of order) {
        const { result: r, serverCpu } = await runCallers(
          {
            url: `${servers[server].url}${runPath(endpoint)}`,
            key: KEY,
            body: JSON.stringify(body),
            concurrency: 1,
            requests: perRound,
            warmup: 1,
          },
          pids,
        );
        const a = acc[server];
        a.lat.push(...r.latenciesMs);
        for (const [k, v] of Object.entries(r.statuses)) a.statuses[k] = (a.statuses[k] ?? 0) + v;
        a.cpu[0]! += serverCpu[0]! * r.seconds;
        a.cpu[1]! += serverCpu[1]! * r.seconds;
        a.n += r.latenciesMs.length;
        p50s[server] = at(r.latenciesMs, 0.5);
      }
      roundHops.push(p50s['query node']! - p50s.owner!);
    }
    const side = (s: Server): Side => {
      const a = acc[s];
      a.lat.sort((x, y) => x - y);
      return {
        p50: at(a.lat, 0.5),
        p99: at(a.lat, 0.99),
        max: a.lat[a.lat.length - 1]!,
        statuses: a.statuses,
        nodeCpuMsPerRun: (a.cpu[0]! * 1000) / a.n,
        ownerCpuMsPerRun: (a.cpu[1]! * 1000) / a.n,
        latenciesMs: a.lat.map((x) => Math.round(x * 1000) / 1000),
      };
    };
    const n = side('query node');
    const o = side('owner');
    const c: Comparison = {
      scenario,
      body,
      endpoint,
      events,
      resultRows,
      answerBytes: Buffer.byteLength(answers[1]!),
      rounds,
      perRound,
      node: n,
      owner: o,
      hopMs: n.p50 - o.p50,
      hopPct: (n.p50 / o.p50 - 1) * 100,
      hopMsRoundMedian: median(roundHops),
      otherCores: probe.otherCores(),
    };
    comparisons.push(c);
    process.stderr.write(
      `${scenario}: node p50 ${n.p50.toFixed(2)} p99 ${n.p99.toFixed(2)}, owner p50 ${o.p50.toFixed(2)} p99 ${o.p99.toFixed(2)}, hop ${c.hopMs.toFixed(2)} ms (${c.hopPct.toFixed(1)}%)\n`,
    );
  };

  /** `debug` runs from this process, alternated: the run's own timings, with the store step. */
  const breakdown = async (scenario: string, endpoint: string, body: object, runs: number): Promise<void> => {
    const got: Record<Server, { client: number[]; run: number[]; store: number[] }> = {
      'query node': { client: [], run: [], store: [] },
      owner: { client: [], run: [], store: [] },
    };
    for (let i = 0; i < runs; i++) {
      for (const server of i % 2 === 0
        ? (['query node', 'owner'] as const)
        : (['owner', 'query node'] as const)) {
        const t = performance.now();
        const res = await post(`${servers[server].url}${runPath(endpoint)}`, { ...body, debug: true });
        const text = await res.text();
        const ms = performance.now() - t;
        if (res.status !== 200) throw new Error(`debug ${server} ${scenario}: ${res.status}`);
        const timings = (JSON.parse(text) as { timings: { k: string; t: number }[] }).timings;
        got[server].client.push(ms);
        got[server].run.push((timings.find((x) => x.k === '.')?.t ?? Number.NaN) * 1000);
        got[server].store.push((timings.find((x) => x.k === './clickhouse')?.t ?? Number.NaN) * 1000);
      }
    }
    for (const server of ['query node', 'owner'] as const)
      breakdowns.push({
        scenario,
        server,
        runs,
        clientMs: median(got[server].client),
        runMs: median(got[server].run),
        storeStepMs: median(got[server].store),
      });
  };

  // 4. Cached runs, on the node and on the owner.
  const cachedBody = { variables: ALL };
  const cachedRequests = quick ? 10_000 : 50_000;
  const withWrk = wrkAvailable();
  if (!withWrk) process.stderr.write('wrk is not installed: no rows with wrk callers\n');
  for (const server of ['query node', 'owner'] as const) {
    const first = await post(`${servers[server].url}${runPath('bench')}`, cachedBody);
    if (first.status !== 200) throw new Error(`${server} cached run: ${first.status} ${await first.text()}`);
    await first.arrayBuffer();
    await load(server, 'cached', cachedBody, 1, cachedRequests / 5);
    await load(server, 'cached', cachedBody, 50, cachedRequests);
    if (withWrk) await loadWrk(server, cachedBody);
  }

  // 5. Direct runs, node against owner.
  const force = (variables: object): object => ({ variables, refresh: 'force' });
  await alternate(
    'direct, 1 day',
    'bench',
    force(ONE_DAY),
    dataset['oneDay'],
    quick ? 4 : 10,
    quick ? 10 : 20,
  );
  await alternate(
    'direct, all events',
    'bench',
    force(ALL),
    dataset['project1'],
    quick ? 2 : 5,
    quick ? 3 : 4,
  );
  await alternate(
    'large result',
    'big',
    { refresh: 'force' },
    dataset['project1'],
    quick ? 2 : 5,
    quick ? 3 : 4,
    false,
  );

  // 6. Where the time goes.
  const debugRuns = quick ? 4 : 10;
  await breakdown('direct, 1 day', 'bench', force(ONE_DAY), debugRuns);
  await breakdown('direct, all events', 'bench', force(ALL), debugRuns);
  await breakdown('large result', 'big', { refresh: 'force' }, debugRuns);
  storeApiBare = await bareStoreApi(ingest.url, debugRuns);
  await gate.wait(pids);
  storeClients.push(...(await storeApiClients(ingest.url, quick ? 200 : 1000)));
  process.stderr.write(`${JSON.stringify({ breakdowns, storeApiBare, storeClients })}\n`);
} catch (err) {
  failures.push(`aborted: ${String(err)}`);
  process.stderr.write(`${String(err)}\n`);
  for (const role of [node, ingest]) if (role) process.stderr.write(`${role.output().slice(-2000)}\n`);
} finally {
  if (node) await stopChild(node.child, 15_000);
  if (ingest) await stopChild(ingest.child, 30_000);
  if (nats) await nats.stop();
  rmSync(dir, { recursive: true, force: true });
}

const wallSeconds = (performance.now() - startedAt) / 1000;
const rawName = `query-node-${stamp}.json`;
const report = markdown();
process.stdout.write(report);
if (!quick) {
  writeFileSync(
    join(REPO_ROOT, 'bench/results', rawName),
    `${JSON.stringify(
      {
        command,
        date: date.toISOString(),
        weir: weirRevision(),
        machine: machineInfo(),
        wallSeconds,
        dataset,
        rows,
        comparisons,
        breakdowns,
        storeApiBare,
        storeClients,
        sameAnswer,
        failures,
      },
      null,
      1,
    )}\n`,
  );
  writeFileSync(join(REPO_ROOT, 'bench/results/query-node.md'), report);
}
if (failures.length > 0) process.exitCode = 1;

/** Runs `weir <command>` with only `env` (no WEIR_* of this shell) and waits for its `/_ready`. */
async function spawnRole(role: 'ingest' | 'query', env: Record<string, string>): Promise<Role> {
  const port = await freePort();
  // With the launch settings given, the PID measured is Weir's, not a launcher's.
  const child = spawnTracked(process.execPath, [...WEIR_LAUNCH_NODE_ARGS, BIN, role], {
    env: { ...env, ...WEIR_LAUNCH_ENV, WEIR_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer): void => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(`${url}/_ready`, child, 120_000);
  } catch (err) {
    await stopChild(child, 5000);
    throw new Error(`weir ${role}: ${(err as Error).message}\n${out.slice(-3000)}`, { cause: err });
  }
  return { child, pid: child.pid!, url, output: () => out };
}

function post(url: string, body: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

async function createEndpoint(base: string, body: object): Promise<void> {
  const res = await post(`${base}/api/projects/1/endpoints/`, body);
  if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** Until the owner's copy of the catalog has the endpoint (the KV watch: milliseconds on loopback). */
async function waitForEndpoint(base: string, name: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${base}/api/projects/1/endpoints/${name}/`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    await res.arrayBuffer();
    if (res.status === 200) return;
    if (Date.now() > deadline) throw new Error(`the owner does not see endpoint ${name}: ${res.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The large result's SQL as a run prints it, sent to the owner's store API from here: the round trip (the
 * owner's engine, its JSON, the transfer), the answer's bytes, and what parsing them and writing the rows
 * out again costs a Node process (a query node does both).
 */
async function bareStoreApi(owner: string, runs: number): Promise<StoreApiBare> {
  const { resolved } = compileQuery(BIG_QUERY);
  const printed = printClickHouse(resolved, bindVariables(resolved.variables, {}, {}), 1, DEFAULT_LIMITS);
  const trips: number[] = [];
  const parses: number[] = [];
  const stringifies: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const res = await fetch(`${owner}/_store/table`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STORE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sql: printed.sql, params: printed.params }),
    });
    const buf = Buffer.from(await res.arrayBuffer());
    trips.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`store API: ${res.status} ${buf.toString().slice(0, 300)}`);
    bytes = buf.length;
    const p = performance.now();
    const table = JSON.parse(buf.toString('utf8')) as { rows: unknown[] };
    parses.push(performance.now() - p);
    const s = performance.now();
    JSON.stringify(table.rows);
    stringifies.push(performance.now() - s);
  }
  return {
    runs,
    roundTripMs: median(trips),
    bytes,
    parseMs: median(parses),
    stringifyMs: median(stringifies),
  };
}

/**
 * The store API's client alone: `fetch` against node:http with keep-alive, alternated in blocks, asking for a
 * trivial query (`SELECT 1`), so that the engine's time, the same for both, varies little.
 */
async function storeApiClients(owner: string, requests: number): Promise<StoreClient[]> {
  const payload = JSON.stringify({ sql: 'SELECT 1', params: {} });
  const url = `${owner}/_store/table`;
  const headers = { authorization: `Bearer ${STORE_TOKEN}`, 'content-type': 'application/json' };
  const agent = new http.Agent({ keepAlive: true });
  const clients: Record<StoreClient['client'], () => Promise<void>> = {
    // As RemoteStore sends it: fetch, a timeout signal, the answer parsed.
    fetch: async () => {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: payload,
        signal: AbortSignal.timeout(70_000),
      });
      if (res.status !== 200) throw new Error(`store API: ${res.status} ${await res.text()}`);
      await res.json();
    },
    'node:http': () =>
      new Promise<void>((resolve, reject) => {
        const req = http.request(
          url,
          { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(payload) } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              JSON.parse(Buffer.concat(chunks).toString('utf8'));
              resolve();
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      }),
  };
  const got: Record<StoreClient['client'], { lat: number[]; cpuMs: number }> = {
    fetch: { lat: [], cpuMs: 0 },
    'node:http': { lat: [], cpuMs: 0 },
  };
  const blocks = 10;
  for (let b = 0; b < blocks; b++) {
    for (const client of b % 2 === 0
      ? (['fetch', 'node:http'] as const)
      : (['node:http', 'fetch'] as const)) {
      await clients[client]();
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < requests / blocks; i++) {
        const t = performance.now();
        await clients[client]();
        got[client].lat.push(performance.now() - t);
      }
      const cpu = process.cpuUsage(cpu0);
      got[client].cpuMs += (cpu.user + cpu.system) / 1000;
    }
  }
  agent.destroy();
  return (['fetch', 'node:http'] as const).map((client) => ({
    client,
    requests: got[client].lat.length,
    p50: median(got[client].lat),
    cpuMsPerRequest: got[client].cpuMs / got[client].lat.length,
  }));
}

function at(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function median(xs: readonly number[]): number {
  return at(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
}

function markdown(): string {
  const ms = (x: number): string => (Number.isNaN(x) ? '–' : x < 10 ? x.toFixed(2) : x.toFixed(0));
  const cores = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2));
  const kib = (b: number): string => (b < 10_240 ? `${b} B` : `${(b / 1024).toFixed(0)} KiB`);
  const n = (x: number): string => x.toLocaleString('en');
  const cached = (server: Server, callers: string): Row | undefined =>
    rows.find((r) => r.server === server && r.scenario === 'cached' && r.callers === callers);
  const serverCpu = (r: Row): number => (r.server === 'query node' ? r.nodeCpu : r.ownerCpu);
  const perCore = (r: Row): string => {
    const c = serverCpu(r);
    return Number.isNaN(c) || c <= 0 ? '–' : n(Math.round(r.perSecond / c));
  };
  const cmp = (scenario: string): Comparison | undefined => comparisons.find((c) => c.scenario === scenario);
  const node50 = cached('query node', '50');
  const nodeWrk = cached('query node', 'wrk 50');
  const owner50 = cached('owner', '50');
  const ownerWrk = cached('owner', 'wrk 50');
  const day = cmp('direct, 1 day');
  const all = cmp('direct, all events');
  const big = cmp('large result');
  const bigBreak = (s: Server): Breakdown | undefined =>
    breakdowns.find((b) => b.scenario === 'large result' && b.server === s);
  const contended = rows.some((r) => (r.otherCores ?? 0) > CONTENDED_CORES);

  const capacity: string[] = [];
  const best = [nodeWrk, node50].filter((r): r is Row => r !== undefined);
  if (best.length > 0) {
    const r = best[0]!;
    const c = serverCpu(r);
    capacity.push(
      `- **Cached runs** are answered by the query node alone (its result cache and response memo; the owner ` +
        `spent ${cores(r.ownerCpu)} cores meanwhile): ${n(Math.round(r.perSecond))} runs/s with ${r.callers} callers ` +
        `for ${cores(c)} cores of the node, i.e. **~${n(Math.round(r.perSecond / c / 1000) * 1000)} cached runs/s per node core**` +
        (owner50 || ownerWrk
          ? `; the owner's own API answered ${n(Math.round((ownerWrk ?? owner50)!.perSecond))} runs/s the same way.`
          : '.') +
        ' On this 2-core machine the callers take the other core, so these are per-core rates, not the node ceiling; ' +
        'a node scales out with cores (several on one machine share the port) and with nodes.',
    );
  }
  if (day && all)
    capacity.push(
      `- **Direct runs** (and every cache miss) run on the one store owner's engine, and chDB runs one query at a ` +
        `time: nodes add no direct-run capacity. The owner's rate is 1000 ÷ its engine time: here ` +
        `~${n(Math.round(1000 / all.owner.p50))} runs/s over ${n(all.events)} events, ~${n(Math.round(1000 / day.owner.p50))} runs/s over one day (${n(day.events)} events). ` +
        `Plan direct runs against the owner, cached ones against the nodes.`,
    );
  if (day && all && big)
    capacity.push(
      `- **The hop** (HTTP to the owner, the result as JSON out of the owner and into the node) costs ` +
        `${ms(day.hopMs)} ms on a small result (${ms(day.node.p50)} vs ${ms(day.owner.p50)} ms, ${day.hopPct.toFixed(0)}%), ` +
        (Math.abs(all.hopPct) < 5
          ? `is lost in the engine's own variation over all events (${ms(all.hopMs)} ms, ${all.hopPct.toFixed(1)}%), `
          : `${ms(all.hopMs)} ms over all events (${all.hopPct.toFixed(1)}%), `) +
        `and is ${ms(big.hopMs)} ms on a ${n(big.resultRows)}-row answer of ${kib(big.answerBytes)} ` +
        `(${big.hopPct.toFixed(0)}%): a fixed cost of a few ms per run, plus one that grows with the result's size, ` +
        `not with the data read.` +
        (storeClients.length === 2
          ? ` The node pays it in CPU too: ${ms(day.node.nodeCpuMsPerRun)} ms per small direct run, of which the store ` +
            `API's client (node:http) is ${ms(storeClients[1]!.cpuMsPerRequest)} ms (fetch: ${ms(storeClients[0]!.cpuMsPerRequest)} ms); ` +
            `so one node core relays ~${n(Math.round(1000 / day.node.nodeCpuMsPerRun))} small direct runs/s, far more than the owner can run.`
          : ''),
    );

  const lines = [
    '# Query node (`weir query`) against the store owner',
    '',
    `\`${command}\` on ${date.toISOString()}, Weir ${weirRevision()}, machine ${JSON.stringify(machineInfo())}; ` +
      `wall time ${wallSeconds.toFixed(0)} s.` +
      (quick ? '' : ` Raw figures: [${rawName}](${rawName}).`),
    '',
    'All on loopback: `nats-server -js`; one `weir ingest` owning the embedded store (chDB) with the store API ' +
      '(`WEIR_STORE_TOKEN`); one `weir query` node (`WEIR_STORE_URL` = the ingest); both with `WEIR_CATALOG=nats`. ' +
      'Callers in their own process, closed loop over keep-alive HTTP (bench/endpoints/load.ts), or `wrk -t1 -c50` ' +
      'when installed. CPU: each process from /proc over the timed span, in cores. "Other" is the CPU of everything ' +
      `but the benchmark's processes meanwhile (a run with other > ${CONTENDED_CORES} shared the machine).`,
    `Data: bench/query/dataset.ts, ${n(dataset['generated'] ?? 0)} events generated, ${n(dataset['project1'] ?? 0)} of project 1 ` +
      `(merged), ${n(dataset['oneDay'] ?? 0)} of them on ${ONE_DAY.since}.`,
    `Endpoint \`bench\` (as bench/endpoints/run.ts): \`${QUERY.replace(/\s+/g, ' ')}\`, \`cache_age_seconds: 3600\`; ` +
      `endpoint \`big\`: \`${BIG_QUERY}\`. Both made through the node.`,
    '',
    '## Cached runs',
    '',
    `Variables ${JSON.stringify(ALL)}, answered from the cache of the process asked.`,
    '',
    '| server | callers | requests | p50 ms | p99 ms | max ms | runs/s | node cpu | owner cpu | nats cpu | callers cpu | other | runs/s per server core | statuses |',
    '| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |',
    ...rows.map(
      (r) =>
        `| ${r.server} | ${r.callers} | ${n(r.requests)} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${n(Math.round(r.perSecond))} | ` +
        `${cores(r.nodeCpu)} | ${cores(r.ownerCpu)} | ${cores(r.natsCpu)} | ${cores(r.callerCpu)} | ${cores(r.otherCores)} | ${perCore(r)} | ${JSON.stringify(r.statuses)} |`,
    ),
    '',
    '## Direct runs: through the node against on the owner',
    '',
    "`refresh: 'force'`, one caller, node and owner alternated in rounds (which goes first alternates). " +
      'Hop = node p50 − owner p50 (all rounds pooled); "per round" = the median of each round\'s difference. ' +
      'CPU ms/run: what each process spent per run over the timed spans.',
    '',
    '| run | events read | rows | answer | runs each | node p50 | node p99 | owner p50 | owner p99 | hop ms | hop % | hop ms per round | via node: node, owner cpu ms/run | on owner: cpu ms/run | other | same answer |',
    '| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |',
    ...comparisons.map(
      (c) =>
        `| ${c.scenario} | ${n(c.events)} | ${n(c.resultRows)} | ${kib(c.answerBytes)} | ${c.rounds} × ${c.perRound} | ` +
        `${ms(c.node.p50)} | ${ms(c.node.p99)} | ${ms(c.owner.p50)} | ${ms(c.owner.p99)} | ${ms(c.hopMs)} | ${c.hopPct.toFixed(1)} | ${ms(c.hopMsRoundMedian)} | ` +
        `${ms(c.node.nodeCpuMsPerRun)}, ${ms(c.node.ownerCpuMsPerRun)} | ${ms(c.owner.ownerCpuMsPerRun)} | ${cores(c.otherCores)} | ${sameAnswer[c.scenario] ?? '–'} |`,
    ),
    '',
    '## Where a direct run spends its time',
    '',
    'Runs with `debug: true` from the benchmark process, alternated; medians. "run" is the run\'s own `timings` ' +
      'total, "store step" its `./clickhouse` step: on the owner, the engine (queue, query, reading chDB\'s ' +
      "output); on the node, the whole store API call (HTTP, the owner's engine and JSON, parsing it).",
    '',
    '| run | server | runs | client round trip ms | run ms | store step ms |',
    '| --- | --- | --: | --: | --: | --: |',
    ...breakdowns.map(
      (b) =>
        `| ${b.scenario} | ${b.server} | ${b.runs} | ${ms(b.clientMs)} | ${ms(b.runMs)} | ${ms(b.storeStepMs)} |`,
    ),
    '',
    storeApiBare
      ? `The large result's SQL sent bare to the owner's \`POST /_store/table\` from the benchmark process ` +
        `(median of ${storeApiBare.runs}): round trip ${ms(storeApiBare.roundTripMs)} ms for ${kib(storeApiBare.bytes)} of JSON; ` +
        `\`JSON.parse\` of it ${ms(storeApiBare.parseMs)} ms and \`JSON.stringify\` of its rows ${ms(storeApiBare.stringifyMs)} ms in a Node process` +
        (bigBreak('owner') && bigBreak('query node')
          ? ` (the owner's store step ${ms(bigBreak('owner')!.storeStepMs)} ms, the node's ${ms(bigBreak('query node')!.storeStepMs)} ms).`
          : '.')
      : '',
    storeClients.length === 2
      ? `The store API's client alone, \`SELECT 1\` sent to the owner one request after another from the ` +
        `benchmark process (${storeClients[0]!.requests} each, alternated in blocks): ` +
        storeClients
          .map(
            (c) =>
              `${c.client} p50 ${ms(c.p50)} ms for ${ms(c.cpuMsPerRequest)} ms of the client's CPU per request`,
          )
          .join('; ') +
        '. A query node uses node:http (src/store/remote-store.ts; fetch before 7240698).'
      : '',
    '',
    '## What this means for capacity',
    '',
    ...capacity,
    '',
    ...(contended
      ? ['Some rows ran while other processes used more than the contention threshold (column "other").', '']
      : []),
    ...(failures.length > 0 ? ['Scenarios that failed:', '', ...failures.map((f) => `- ${f}`), ''] : []),
    'Commands: `npm run bench:query-node` (`node bin/run-ts.js bench/endpoints/query-node.ts`), `-- --quick` for a ' +
      'short run on ~100k events that writes nothing.',
    '',
  ];
  return lines.join('\n');
}
