/** bench/results/insights.md from one run of `npm run bench:insights`. */
import { CONTENDED_CORES } from '../capture/machine-load.ts';

/** What is printed / hand-written may take at most (issue 24). */
export const TARGET_RATIO = 1.2;

export interface RunRow {
  readonly state: 'fresh' | 'settled';
  /** Active parts of events and person_distinct_ids while measured. */
  readonly parts: string;
  readonly name: string;
  readonly kind: string;
  /** Rows of the answer (the same in both). */
  readonly rows: number;
  readonly printedMs: number;
  readonly handMs: number;
  /** Median CPU milliseconds of the process (the engine is in-process) over the same rounds. */
  readonly printedCpuMs: number;
  readonly handCpuMs: number;
  readonly printedRounds: readonly number[];
  readonly handRounds: readonly number[];
  /** The ClickHouse SQL Weir ran, and the hand-written SQL, for whoever looks into a ratio. */
  readonly printedSql: string;
  readonly handSql: string;
  /** Cores other processes used while the scenario was measured (undefined when /proc cannot tell). */
  readonly otherCores: number | undefined;
  /** Cores the hypervisor gave other guests meanwhile. */
  readonly stealCores: number | undefined;
}

export interface Report {
  readonly command: string;
  readonly startedAt: string;
  readonly revision: string;
  /** Files of src/query/insights that differed from the commit when measured. */
  readonly uncommittedInsights: readonly string[];
  readonly machine: Record<string, string | number>;
  readonly events: number;
  readonly generateSeconds: number;
  readonly rounds: number;
  /** The `now` every run resolves its range at. */
  readonly now: string;
  readonly runs: readonly RunRow[];
}

const ms = (n: number): string => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(0)} ms`);
const cores = (n: number | undefined): string =>
  n === undefined ? '–' : `${n.toFixed(2)}${n > CONTENDED_CORES ? ' (contended)' : ''}`;

export function markdownReport(r: Report, rawName: string): string {
  const lines: string[] = [];
  lines.push('# Insight endpoints benchmark: printed against hand-written SQL (issue 24)', '');
  lines.push(
    `Made by \`${r.command}\` on ${r.startedAt}; Weir at ${r.revision}${r.uncommittedInsights.length > 0 ? ` (uncommitted in src/query/insights, measured as they were: ${r.uncommittedInsights.join(', ')})` : ''}. Raw figures (every round, both SQL texts): [${rawName}](${rawName}).`,
    '',
  );
  lines.push(
    `Machine: ${Object.entries(r.machine)
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}. The machine is shared with other work; "other cores" is what other processes used while a scenario was measured (above 0.25 the figures are contended), "steal" what the hypervisor gave other guests. The CPU columns are the CPU time of the benchmark's process (chDB runs in it) over the same rounds: what contention changes least.`,
    '',
  );
  lines.push(
    `${r.events.toLocaleString('en')} events of bench/query's dataset (\`bench/query/dataset.ts\`: 90 days from 2026-01-01, 90 % project 1, ${Math.floor(r.events / 1000).toLocaleString('en')} stored twice as retried events, 200,000 persons a project), generated in ${r.generateSeconds.toFixed(0)} s, with person_distinct_ids written beside them (\`bench/insights/scenario.ts\`: 1 distinct id in 50 merged into another person by a newer row, 1 in 97 without a row). Every insight is run at now = ${r.now}.`,
    '',
  );
  lines.push(
    `Each scenario (\`bench/insights/scenario-*.ts\`) runs two ways on project 1: **printed** — the insight query object as an endpoint run makes it (readInsight → prepareInsightRun → runCompiledQuery on the chDB store → finishInsightRows; the time includes reading and compiling); **hand-written** — the same answer in ClickHouse SQL as someone who knows the store would write it, with the same guarantees (FINAL on events and person_distinct_ids, the person now behind each distinct id, zero-filled cells, the breakdown limit). The two answers are checked equal (rows compared after normalising number types and order) before timing; then one warm-up each and ${r.rounds} alternated rounds (printed, hand, printed, …), median. Target: printed / hand-written ≤ ${TARGET_RATIO} for each.`,
    '',
  );
  for (const state of ['fresh', 'settled'] as const) {
    const rows = r.runs.filter((x) => x.state === state);
    if (rows.length === 0) continue;
    lines.push(
      state === 'fresh'
        ? `## Fresh parts (${rows[0]!.parts}; merges stopped: FINAL merges at read time)`
        : `## Settled (${rows[0]!.parts}; after OPTIMIZE … FINAL)`,
      '',
    );
    lines.push(
      '| scenario | rows | printed | hand-written | ratio | target ≤ 1.2 | CPU printed | CPU hand | CPU ratio | other cores | steal |',
      '| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const x of rows) {
      const ratio = x.printedMs / x.handMs;
      lines.push(
        `| ${x.name} | ${x.rows} | ${ms(x.printedMs)} | ${ms(x.handMs)} | ${ratio.toFixed(2)} | ${ratio <= TARGET_RATIO ? 'met' : '**not met**'} | ${ms(x.printedCpuMs)} | ${ms(x.handCpuMs)} | ${(x.printedCpuMs / x.handCpuMs).toFixed(2)} | ${cores(x.otherCores)} | ${cores(x.stealCores)} |`,
      );
    }
    lines.push('');
  }
  const contended = r.runs.filter((x) => (x.otherCores ?? 0) > CONTENDED_CORES);
  lines.push(
    contended.length === 0
      ? `Machine-load probe: quiet throughout (other processes under ${CONTENDED_CORES} cores in every measurement).`
      : `Machine-load probe: **contended** in ${contended.length} of ${r.runs.length} measurements (other processes above ${CONTENDED_CORES} cores: ${contended.map((x) => `${x.name} (${x.state}) ${(x.otherCores ?? 0).toFixed(2)}`).join('; ')}); their wall times and ratios carry that load, the CPU columns less so.`,
    '',
  );
  const missed = r.runs.filter((x) => x.printedMs / x.handMs > TARGET_RATIO);
  lines.push(
    missed.length === 0
      ? `**Target met** in every scenario and state (${r.runs.length} measurements).`
      : `**Target not met** in ${missed.length} of ${r.runs.length} measurements: ${missed.map((x) => `${x.name} (${x.state})`).join('; ')}.`,
    '',
  );
  return `${lines.join('\n')}\n`;
}
