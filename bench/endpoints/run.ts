/**
 * `npm run bench:endpoints`: what an endpoint run costs (issue 5).
 * - Latency (p50 / p99) of a cached run, and of a direct run (`refresh: force`) over ~1M and ~10M events,
 *   at 1 and 50 concurrent callers. The callers run in their own process (load.ts) over keep-alive HTTP.
 * - The run path's overhead: a direct run over HTTP against the bare store query of the same printed SQL,
 *   alternated one after the other in the same run, as the ratio of their medians minus one.
 * Weir runs in this process (the store is in-process chDB), with the data made by the engine
 * (bench/query/dataset.ts). Prints the report and writes bench/results/endpoints.md.
 * `--quick`: ~1M events only (the "10M" rows then read the same 1M), fewer requests, nothing written.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { tuneHeap } from '../../src/core/heap-tuning.ts';
import type { TableReader } from '../../src/core/ports.ts';
import { startWeir } from '../../src/main.ts';
import { DEFAULT_LIMITS, printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { compileQuery } from '../../src/query/hogql-query.ts';
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { machineInfo, weirRevision } from '../capture/results.ts';
import { REPO_ROOT, freePort, spawnTracked, stopChild, waitUntilReady } from '../capture/child-processes.ts';
import { generate } from '../query/dataset.ts';
import { runCallers } from './callers.ts';
import type { LoadResult, LoadSpec } from './load.ts';
import { runWrk, wrkAvailable } from './wrk.ts';

const quick = process.argv.includes('--quick');
const KEY = 'phx_bench_endpoints_0000000000000000000000000';
/** Project 1 holds 9 in 10 generated events: this many makes ~10M of its own (~1M with --quick). */
const GENERATED = quick ? 1_111_112 : 11_111_112;
const QUERY = `SELECT event, count() AS n, uniq(person_id) AS people FROM events
  WHERE timestamp >= {variables.since} AND timestamp < {variables.until}
  GROUP BY event ORDER BY event`;
/** The data spans 90 days from 2026-01-01, evenly: 9 days is a tenth of it. */
const RANGES = {
  '1M': { since: '2026-01-01', until: quick ? '2026-04-01' : '2026-01-10' },
  '10M': { since: '2026-01-01', until: '2026-04-01' },
};
const DECLARED = { since: { type: 'date' as const }, until: { type: 'date' as const } };

// Weir runs in this process: its heap as the `weir` command sets it.
tuneHeap();
const dir = mkdtempSync(join(tmpdir(), 'weir-bench-endpoints-'));
const config = loadConfig({
  WEIR_PORT: '0',
  WEIR_DATA_DIR: join(dir, 'data'),
  WEIR_BOOTSTRAP_PERSONAL_API_KEY: KEY,
  WEIR_LOG_LEVEL: 'silent',
  // 50 direct callers must wait for the store, not be refused.
  WEIR_ENDPOINT_RUN_CONCURRENCY: '64',
});
const weir = await startWeir(config, createLogger('silent'));
const runUrl = `${weir.url}/api/projects/1/endpoints/bench/run`;

interface Row {
  /** Weir, or the ceiling: a bare uWS server answering every request with a cached run's bytes. */
  readonly server: 'Weir' | 'bare uWS';
  readonly scenario: string;
  readonly callers: number;
  readonly requests: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly perSecond: number;
  /** CPU of the callers' process, and of Weir's (this) process while they were timed, in cores. */
  readonly callerCpu: number;
  readonly weirCpu: number;
  readonly statuses: Record<string, number>;
}
const rows: Row[] = [];
const failures: string[] = [];
let overhead: { storeMs: number; runMs: number; ratio: number; rounds: number } | undefined;

try {
  process.stderr.write(`generating ${GENERATED.toLocaleString('en')} events…\n`);
  await generate(weir.store as unknown as ChdbClient, { events: GENERATED });
  await weir.store.command('OPTIMIZE TABLE events FINAL');
  const sizes = await weir.store.query<{ range: string; n: string }>(
    `SELECT '1M' AS range, count() AS n FROM events FINAL WHERE project_id = 1 AND timestamp < '${RANGES['1M'].until}'
     UNION ALL SELECT '10M', count() FROM events FINAL WHERE project_id = 1`,
  );
  process.stderr.write(`events of project 1: ${JSON.stringify(sizes)}\n`);

  const created = await fetch(`${weir.url}/api/projects/1/endpoints/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}` },
    body: JSON.stringify({
      name: 'bench',
      query: { kind: 'HogQLQuery', query: QUERY },
      variables: DECLARED,
      cache_age_seconds: 3600,
    }),
  });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);

  const load = async (
    scenario: string,
    body: object,
    callers: number,
    requests: number,
    target: { url: string; server: Row['server'] } = { url: runUrl, server: 'Weir' },
  ): Promise<void> => {
    const spec: LoadSpec = {
      url: target.url,
      key: KEY,
      body: JSON.stringify(body),
      concurrency: callers,
      requests,
    };
    let r: LoadResult;
    let weirCpu: number;
    try {
      ({ result: r, weirCpu } = await runCallers(spec));
    } catch (err) {
      // Recorded, not fatal: e.g. uWS closes a connection whose response takes over 10 s.
      const reason = /connection closed: [^\n]*/.exec(String(err))?.[0];
      failures.push(`${scenario}, ${callers} callers: ${reason ?? String(err).slice(0, 200)}`);
      process.stderr.write(`${failures[failures.length - 1]}\n`);
      return;
    }
    const at = (q: number): number =>
      r.latenciesMs[Math.min(r.latenciesMs.length - 1, Math.floor(q * r.latenciesMs.length))]!;
    const row: Row = {
      server: target.server,
      scenario,
      callers,
      requests: r.latenciesMs.length,
      p50: at(0.5),
      p99: at(0.99),
      max: r.latenciesMs[r.latenciesMs.length - 1]!,
      perSecond: r.latenciesMs.length / r.seconds,
      callerCpu: r.cpuCores,
      weirCpu: target.server === 'Weir' ? weirCpu : Number.NaN,
      statuses: r.statuses,
    };
    rows.push(row);
    process.stderr.write(`${JSON.stringify(row)}\n`);
  };

  /** The same cached run by wrk's callers (wrk.ts), when wrk is installed: cheaper callers, same cores. */
  const loadWrk = async (body: object, target: { url: string; server: Row['server'] }): Promise<void> => {
    const cpu0 = process.cpuUsage();
    const r = await runWrk({
      url: target.url,
      body: JSON.stringify(body),
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      connections: 50,
      seconds: quick ? 3 : 10,
    });
    const cpu = process.cpuUsage(cpu0);
    const row: Row = {
      server: target.server,
      scenario: 'cached, wrk callers',
      callers: 50,
      requests: r.requests,
      p50: r.p50,
      p99: r.p99,
      max: r.max,
      perSecond: r.perSecond,
      callerCpu: Number.NaN,
      weirCpu: target.server === 'Weir' ? (cpu.user + cpu.system) / 1e6 / r.seconds : Number.NaN,
      statuses: r.non2xx > 0 ? { '2xx': r.requests - r.non2xx, other: r.non2xx } : { '2xx': r.requests },
    };
    rows.push(row);
    process.stderr.write(`${JSON.stringify(row)}\n`);
  };
  const withWrk = wrkAvailable();
  if (!withWrk) process.stderr.write('wrk is not installed: no rows with wrk callers\n');

  const cachedBody = { variables: RANGES['10M'] };
  const cachedRequests = quick ? 10_000 : 50_000;
  // The ceiling, as capture's benchmark measures one: a bare uWS server that reads each request whole and
  // answers with the bytes of this cached run's answer, by the same callers, one server at a time.
  const answer = await fetch(runUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}` },
    body: JSON.stringify(cachedBody),
  });
  if (answer.status !== 200) throw new Error(`run: ${answer.status} ${await answer.text()}`);
  const answerFile = join(dir, 'cached-answer.json');
  writeFileSync(answerFile, Buffer.from(await answer.arrayBuffer()));
  const barePort = await freePort();
  const bare = spawnTracked(
    process.execPath,
    [
      join(REPO_ROOT, 'bin/run-ts.js'),
      join(REPO_ROOT, 'bench/capture/bare-uws-server.ts'),
      String(barePort),
      answerFile,
    ],
    { stdio: 'ignore' },
  );
  try {
    await waitUntilReady(`http://127.0.0.1:${barePort}/_ready`, bare, 30_000);
    const target = {
      url: `http://127.0.0.1:${barePort}${new URL(runUrl).pathname}`,
      server: 'bare uWS' as const,
    };
    await load('cached', cachedBody, 1, cachedRequests / 5, target);
    await load('cached', cachedBody, 50, cachedRequests, target);
    if (withWrk) await loadWrk(cachedBody, target);
  } finally {
    await stopChild(bare, 5000);
  }
  await load('cached', cachedBody, 1, cachedRequests / 5);
  await load('cached', cachedBody, 50, cachedRequests);
  if (withWrk) await loadWrk(cachedBody, { url: runUrl, server: 'Weir' });
  for (const size of ['1M', '10M'] as const) {
    const body = { variables: RANGES[size], refresh: 'force' };
    const heavy = size === '10M' && !quick;
    await load(`direct ${size}`, body, 1, heavy ? 10 : 30);
    await load(`direct ${size}`, body, 50, heavy ? 50 : 100);
  }

  // The same SQL, bare on the store, alternated with runs over HTTP: the run path's cost is the difference.
  const { resolved } = compileQuery(QUERY);
  const bound = bindVariables(resolved.variables, RANGES['10M'], { since: 'date', until: 'date' });
  const printed = printClickHouse(resolved, bound, 1, DEFAULT_LIMITS);
  const reader = weir.store as unknown as TableReader;
  const storeMs: number[] = [];
  const runMs: number[] = [];
  const rounds = quick ? 5 : 9;
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    await reader.queryTable(printed.sql, printed.params);
    storeMs.push(performance.now() - t);
    t = performance.now();
    const res = await fetch(runUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ variables: RANGES['10M'], refresh: 'force' }),
    });
    await res.text();
    runMs.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`run: ${res.status}`);
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  overhead = {
    storeMs: median(storeMs),
    runMs: median(runMs),
    ratio: median(runMs) / median(storeMs) - 1,
    rounds,
  };
  process.stderr.write(`overhead: ${JSON.stringify(overhead)}\n`);
} finally {
  await weir.close();
  rmSync(dir, { recursive: true, force: true });
}

const report = markdown();
process.stdout.write(report);
if (!quick) writeFileSync(join(REPO_ROOT, 'bench/results/endpoints.md'), report);

function markdown(): string {
  const ms = (x: number): string => (x < 10 ? x.toFixed(2) : x.toFixed(0));
  const cached = (server: Row['server'], callers: number, scenario = 'cached'): Row | undefined =>
    rows.find((r) => r.server === server && r.scenario === scenario && r.callers === callers);
  const cached50 = cached('Weir', 50);
  const bare50 = cached('bare uWS', 50);
  const wrkWeir = cached('Weir', 50, 'cached, wrk callers');
  const wrkBare = cached('bare uWS', 50, 'cached, wrk callers');
  const cpu = (x: number): string => (Number.isNaN(x) ? '–' : x.toFixed(2));
  const lines = [
    '# Endpoint runs',
    '',
    `\`npm run bench:endpoints\`${quick ? ' --quick' : ''} on ${new Date().toISOString()}, Weir ${weirRevision()}, ` +
      `machine ${JSON.stringify(machineInfo())}.`,
    '',
    'Weir (embedded chDB) in the benchmark process; callers in another process, closed loop over keep-alive HTTP.',
    'The ceiling, "bare uWS": a uWebSockets.js server that reads each request whole and answers with the bytes of',
    "the cached run's answer, doing nothing else, measured by the same callers in the same run (Weir idle meanwhile).",
    `Rows "cached, wrk callers" (when \`wrk\` is installed): the same cached run by \`wrk -t1 -c50 --latency\` for ${quick ? 3 : 10} s,`,
    'a C load generator that spends less CPU per request than the Node callers, on the same two cores.',
    `Query: \`${QUERY.replace(/\s+/g, ' ')}\`, over ~1M or ~10M events of project 1 (of ${GENERATED.toLocaleString('en')} generated, merged).`,
    '',
    '| server | scenario | callers | requests | p50 ms | p99 ms | max ms | runs/s | Weir cpu | callers cpu | statuses |',
    '| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |',
    ...rows.map(
      (r) =>
        `| ${r.server} | ${r.scenario} | ${r.callers} | ${r.requests} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${r.perSecond.toFixed(0)} | ${cpu(r.weirCpu)} | ${cpu(r.callerCpu)} | ${JSON.stringify(r.statuses)} |`,
    ),
    '',
    overhead
      ? `Run path over the bare store query (~10M events, median of ${overhead.rounds} alternated rounds): store ${ms(overhead.storeMs)} ms, ` +
        `run over HTTP ${ms(overhead.runMs)} ms, overhead ${(overhead.ratio * 100).toFixed(1)}% (target ≤ 10%).`
      : '',
    cached50
      ? `Cached run p99 at 50 callers: ${ms(cached50.p99)} ms (target ≤ 2 ms)` +
        (bare50
          ? `; the bare uWS ceiling's p99 with the same callers: ${ms(bare50.p99)} ms. Cached runs/s ÷ bare: ` +
            `${((cached50.perSecond / bare50.perSecond) * 100).toFixed(1)}%.`
          : '.')
      : '',
    wrkWeir && wrkBare
      ? `With wrk's callers: Weir's cached run p99 ${ms(wrkWeir.p99)} ms at ${wrkWeir.perSecond.toFixed(0)} runs/s; ` +
        `bare uWS p99 ${ms(wrkBare.p99)} ms at ${wrkBare.perSecond.toFixed(0)} req/s.`
      : '',
    '',
    'Direct runs at 50 callers queue for the store (chDB runs one query at a time), so their latency is the queue.',
    '',
    ...(failures.length > 0 ? ['Scenarios that failed:', '', ...failures.map((f) => `- ${f}`), ''] : []),
  ];
  return lines.join('\n');
}
