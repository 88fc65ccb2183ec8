/** bench/results/materialized.md from one run of `npm run bench:materialized`, and its targets (issue 25). */
import { CONTENDED_CORES } from '../capture/machine-load.ts';
import type { EqualityCheck } from './equality.ts';
import type { MemoryResult } from './scenario-memory.ts';
import type { RefreshResult } from './scenario-refresh.ts';
import type { Mode, RunsRow } from './scenario-runs.ts';

export interface Report {
  readonly command: string;
  readonly startedAt: string;
  readonly revision: string;
  /** Files of src/ that differed from the commit when measured. */
  readonly uncommittedSrc: readonly string[];
  readonly machine: Record<string, string | number>;
  /** Events generated (all projects), and those of project 1 that the endpoint reads. */
  readonly generated: number;
  readonly projectEvents: number;
  readonly generateSeconds: number;
  readonly query: string;
  readonly queryThreads: number;
  readonly equality: readonly EqualityCheck[];
  readonly refresh: RefreshResult & { otherCores: number | undefined; stealCores: number | undefined };
  readonly runs: readonly RunsRow[];
  readonly memory: MemoryResult;
  /** Figures gathered to explain a missed target (see run.ts); absent when none was missed. */
  readonly profile?: Record<string, unknown>;
}

export interface Target {
  readonly name: string;
  readonly figure: string;
  readonly met: boolean;
}

export function targets(r: Report): Target[] {
  const row = (mode: Mode, callers: number): RunsRow | undefined =>
    r.runs.find((x) => x.mode === mode && x.callers === callers);
  const m50 = row('materialized', 50);
  const d50 = row('direct', 50);
  const c50 = row('cached', 50);
  const out: Target[] = [];
  if (m50 && d50) {
    const ratio = m50.perSecond / d50.perSecond;
    out.push({
      name: 'materialized runs/s ≥ 100× direct runs/s at 50 callers',
      figure: `${m50.perSecond.toFixed(0)} / ${d50.perSecond.toFixed(1)} = ${ratio.toFixed(0)}×`,
      met: ratio >= 100,
    });
  }
  if (m50 && c50) {
    const ratio = m50.p99 / c50.p99;
    out.push({
      name: "materialized p99 at 50 callers ≤ 3× the cached run's p99",
      figure: `${ms(m50.p99)} / ${ms(c50.p99)} = ${ratio.toFixed(2)}×`,
      met: ratio <= 3,
    });
  }
  const refreshRatio = r.refresh.refreshMedianMs / r.refresh.directMedianMs;
  out.push({
    name: "a refresh takes ≤ 1.5× the direct query's time",
    figure: `${ms(r.refresh.refreshMedianMs)} / ${ms(r.refresh.directMedianMs)} = ${refreshRatio.toFixed(2)}×`,
    met: refreshRatio <= 1.5,
  });
  const memoryRatio = r.memory.poolBytes / r.memory.arrowBytes;
  out.push({
    name: "a table's memory in the pool ≤ 2× its Arrow size",
    figure: `${bytes(r.memory.poolBytes)} / ${bytes(r.memory.arrowBytes)} = ${memoryRatio.toFixed(2)}×`,
    met: memoryRatio <= 2 && r.memory.poolTables === 1,
  });
  return out;
}

/** The machine-load probe's verdict: which measurements lost more than CONTENDED_CORES to other work. */
export function loadVerdict(r: Report): string {
  const probes: [string, number | undefined, number | undefined][] = [
    ['refresh / direct query', r.refresh.otherCores, r.refresh.stealCores],
    ...r.runs.map((x): [string, number | undefined, number | undefined] => [
      `${x.mode}, ${x.callers} caller${x.callers === 1 ? '' : 's'}`,
      x.otherCores,
      x.stealCores,
    ]),
  ];
  const unknown = probes.filter(([, other]) => other === undefined).map(([name]) => name);
  const contended = probes
    .filter(([, other]) => other !== undefined && other > CONTENDED_CORES)
    .map(([name, other]) => `${name} (${other!.toFixed(2)} cores)`);
  const worstSteal = Math.max(0, ...probes.map(([, , steal]) => steal ?? 0));
  const parts = [
    contended.length === 0
      ? `quiet: no measurement lost more than ${CONTENDED_CORES} cores to other processes`
      : `contended: ${contended.join(', ')} lost more than ${CONTENDED_CORES} cores to other processes`,
    `hypervisor steal at most ${worstSteal.toFixed(2)} cores`,
  ];
  if (unknown.length > 0) parts.push(`/proc could not tell for ${unknown.join(', ')}`);
  return `${parts.join('; ')}.`;
}

const ms = (x: number): string =>
  x >= 1000 ? `${(x / 1000).toFixed(2)} s` : x < 10 ? `${x.toFixed(2)} ms` : `${x.toFixed(0)} ms`;
const bytes = (n: number): string =>
  n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
const cores = (n: number | undefined): string =>
  n === undefined ? '–' : `${n.toFixed(2)}${n > CONTENDED_CORES ? ' (contended)' : ''}`;

export function markdownReport(r: Report, rawName: string | undefined, notes: readonly string[]): string {
  const lines: string[] = [];
  lines.push('# Materialized endpoint runs (issue 25)', '');
  lines.push(
    `Made by \`${r.command}\` on ${r.startedAt}; Weir at ${r.revision}` +
      (r.uncommittedSrc.length > 0
        ? ` (uncommitted, measured as they were: ${r.uncommittedSrc.join(', ')})`
        : '') +
      '.' +
      (rawName
        ? ` Raw figures (every scenario, each refresh and direct round): [${rawName}](${rawName}).`
        : ''),
    '',
    `Machine: ${Object.entries(r.machine)
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}. Query pool: ${r.queryThreads} actor thread${r.queryThreads === 1 ? '' : 's'} (cores − 1).`,
    '',
    `Machine-load probe: ${loadVerdict(r)}`,
    '',
  );
  lines.push('## Targets', '', '| target | figure | |', '| --- | --- | --- |');
  for (const t of targets(r)) lines.push(`| ${t.name} | ${t.figure} | ${t.met ? 'met' : '**NOT met**'} |`);
  lines.push('');

  lines.push('## Setup', '');
  lines.push(
    `${r.generated.toLocaleString('en')} events generated by the engine (\`bench/query/dataset.ts\`: 90 days from 2026-01-01, ` +
      `${r.projectEvents.toLocaleString('en')} of them in project 1, merged with OPTIMIZE … FINAL) in ${r.generateSeconds.toFixed(0)} s. ` +
      'Weir runs in the benchmark process (embedded chDB, the directory object store under its data directory, ' +
      'the query pool in worker threads), as `bench:endpoints` runs it; the callers run in another process.',
    '',
    `Endpoint (\`is_materialized: true\`, default \`day\` bucket, variables \`event\`: string, \`since\`: date): \`${r.query.replace(/\s+/g, ' ')}\`.`,
    '',
    `Stored result: ${r.memory.rows.toLocaleString('en')} rows (browser × event × day), ${bytes(r.memory.parquetBytes)} of Parquet.`,
    '',
    `Answers checked equal before timing (direct against materialized: columns, types, rows): ${r.equality
      .map((e) => `${e.variables.event} since ${e.variables.since} (${e.rows} rows)`)
      .join('; ')}.`,
    '',
  );

  lines.push('## Runs', '');
  lines.push(
    'Closed-loop callers over keep-alive HTTP (`bench/endpoints/load.ts`), sending in turn ' +
      `${r.runs[0]?.values ?? 0} variable values (7 events, one of them absent, × 12 days). ` +
      'direct: `refresh: "direct"`; materialized: `refresh: "force"` (cache skipped, answered from the materialization); ' +
      'cached: `refresh: "cache"`, every value cached first. Cores: Weir\'s process, the callers\', and any other process.',
    '',
    '| mode | callers | requests | p50 | p90 | p99 | max | runs/s | Weir cpu | callers cpu | other cores | statuses |',
    '| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |',
  );
  for (const x of r.runs)
    lines.push(
      `| ${x.mode} | ${x.callers} | ${x.requests} | ${ms(x.p50)} | ${ms(x.p90)} | ${ms(x.p99)} | ${ms(x.max)} | ${x.perSecond < 10 ? x.perSecond.toFixed(1) : x.perSecond.toFixed(0)} | ${x.weirCpu.toFixed(2)} | ${x.callerCpu.toFixed(2)} | ${cores(x.otherCores)} | ${JSON.stringify(x.statuses)} |`,
    );
  lines.push('');

  const f = r.refresh;
  lines.push('## Refresh against the direct query', '');
  lines.push(
    'A refresh is timed from `POST …/materialize` to GET showing the new completed result (polled every 10 ms): ' +
      "scheduler pick-up, the engine's query, Parquet written, object put, catalog updated. The direct query is the " +
      `same SQL as a direct endpoint run, one caller, over the most data a run reads (\`$pageview\` since 2026-01-01). ` +
      `Alternated, ${f.refreshMs.length} rounds, median.`,
    '',
    `| | median | rounds |`,
    '| --- | --: | --- |',
    `| refresh | ${ms(f.refreshMedianMs)} | ${f.refreshMs.map(ms).join(', ')} |`,
    `| direct query | ${ms(f.directMedianMs)} | ${f.directMs.map(ms).join(', ')} |`,
    '',
    `The first refresh (at create, nothing read before): ${ms(f.firstMs)}. Other cores meanwhile: ${cores(f.otherCores)}.`,
    '',
  );

  const m = r.memory;
  lines.push('## Memory in the pool', '');
  lines.push(
    `\`weir_materialized_bytes\` from GET /metrics while the pool held ${m.poolTables} table: ${bytes(m.poolBytes)} (${m.poolBytes} B). ` +
      `Arrow size: ${bytes(m.arrowBytes)} (${m.arrowBytes} B) — the served Parquet object (\`objects/${m.objectKey}\`) read from the data ` +
      `directory in the benchmark process, decoded whole with parquet-wasm into Arrow IPC, read with apache-arrow, and the byte lengths ` +
      `of every column's buffers (values, offsets, validity) summed: ${m.rows} rows, ${m.columns} columns, ${m.batches} batch${m.batches === 1 ? '' : 'es'}. ` +
      "The gauge counts the actor's IPC buffers (the columns plus the stream's messages and padding); it does not count the " +
      "decoder's WebAssembly memory, which grows to the largest row group decoded and stays.",
    '',
  );
  if (notes.length > 0)
    lines.push(
      '## Where the time goes (profiled because a target was missed)',
      '',
      ...notes.map((n) => `- ${n}`),
      '',
    );
  return `${lines.join('\n')}\n`;
}
