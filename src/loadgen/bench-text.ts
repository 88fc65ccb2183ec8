/**
 * What `weir bench capture` and `weir bench compare` print: a run's figures, and two runs side by side
 * with their differences. Plain text tables, padded, so a terminal and a pasted issue read the same.
 */
import type { LatencySummary } from './load-generator.ts';
import type { BenchRecord } from './bench-record.ts';

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const rate = (n: number): string => (n < 100 ? n.toFixed(1) : int(n));
const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1));

/** Rows padded to columns; the first column (and with `text`, every column) left-aligned, numbers right. */
function table(rows: readonly (readonly string[])[], text = false): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r.map((cell, i) => (i === 0 || text ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '),
    )
    .map((line) => line.trimEnd())
    .join('\n');
}

/** Responses by status, then requests that got none: `200×398 503×2 conn×1`. */
export function outcomes(r: BenchRecord): string {
  const f = r.figures;
  const parts = Object.entries(f.statuses).map(([status, n]) => `${status}×${n}`);
  if (f.connectionErrors) parts.push(`connection lost×${f.connectionErrors}`);
  if (f.timedOut) parts.push(`unanswered×${f.timedOut}`);
  if (f.unsent) parts.push(`never sent×${f.unsent}`);
  return parts.length > 0 ? parts.join(' ') : 'none';
}

/** Requests not answered 200, for any reason. */
export function failed(r: BenchRecord): number {
  const f = r.figures;
  const otherStatuses = Object.entries(f.statuses)
    .filter(([status]) => status !== '200')
    .reduce((sum, [, n]) => sum + n, 0);
  return otherStatuses + f.connectionErrors + f.timedOut + f.unsent;
}

function describeRun(r: BenchRecord): string {
  const p = r.parameters;
  const shape =
    p.mode === 'single' ? 'single events (/i/v0/e/)' : `batches of ${p.eventsPerRequest} (/batch/)`;
  const load = p.max
    ? p.rate === null
      ? `no rate sustained with p99 ≤ ${p.maxP99Ms} ms: figures of the closed-loop probe`
      : `highest rate sustained with p99 ≤ ${p.maxP99Ms} ms: ${int(p.rate)} req/s, ${p.durationS} s steps`
    : `open loop at ${int(p.rate ?? 0)} req/s for ${p.durationS} s`;
  return `${r.label}: ${p.url}, ${shape}, ${load}, ${p.connections} connections`;
}

const percentiles = (l: LatencySummary): string =>
  `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`;

/** The figures of one run, as `weir bench capture` prints them. */
export function summaryText(r: BenchRecord): string {
  const f = r.figures;
  return [
    describeRun(r),
    table(
      [
        ['  requests', `${int(f.sent)} sent of ${int(f.scheduled)} due; responses ${outcomes(r)}`],
        [
          '  throughput',
          `${rate(f.sentPerSecond)} req/s sent, ${rate(f.okPerSecond)} req/s answered 200, ` +
            `${rate(f.okEventsPerSecond)} events/s`,
        ],
        ['  latency ms', `${percentiles(f.latency)}  (from due time: what a client sees)`],
        ['  service ms', `${percentiles(f.service)}  (from the write: the server alone)`],
        [
          '  send lag ms',
          `p99 ${ms(f.sendLag.p99)}  max ${ms(f.sendLag.max)}  (the generator's own lateness)`,
        ],
      ],
      true,
    ),
  ].join('\n');
}

/** One row of compare: the two values, B − A, and B ÷ A. */
function row(name: string, a: number, b: number, show: (n: number) => string): string[] {
  const diff = b - a;
  const sign = diff > 0 ? '+' : diff < 0 ? '−' : '±';
  return [name, show(a), show(b), `${sign}${show(Math.abs(diff))}`, a === 0 ? '–' : `${(b / a).toFixed(2)}×`];
}

/** Two runs side by side, B against A. */
export function compareText(a: BenchRecord, b: BenchRecord): string {
  const fa = a.figures;
  const fb = b.figures;
  const latency = (['p50', 'p90', 'p99', 'p999', 'max', 'mean'] as const).map((k) =>
    row(`latency ${k === 'p999' ? 'p99.9' : k} ms`, fa.latency[k], fb.latency[k], ms),
  );
  const names = {
    mode: 'mode',
    eventsPerRequest: 'batch size',
    rate: 'rate',
    durationS: 'duration',
  } as const;
  const differs = (Object.keys(names) as (keyof typeof names)[])
    .filter((k) => a.parameters[k] !== b.parameters[k])
    .map((k): string => names[k]);
  if (a.parameters.connections !== b.parameters.connections) differs.push('connections');
  return [
    `A  ${describeRun(a)}`,
    `B  ${describeRun(b)}`,
    ...(differs.length > 0 ? [`(the runs differ in ${differs.join(', ')}: compare with that in mind)`] : []),
    '',
    table([
      ['', 'A', 'B', 'B − A', 'B ÷ A'],
      ...latency,
      row('service p99 ms', fa.service.p99, fb.service.p99, ms),
      row('sent req/s', fa.sentPerSecond, fb.sentPerSecond, rate),
      row('answered 200 req/s', fa.okPerSecond, fb.okPerSecond, rate),
      row('events/s', fa.okEventsPerSecond, fb.okEventsPerSecond, rate),
      row('requests failed', failed(a), failed(b), int),
    ]),
    '',
    `A responses: ${outcomes(a)}`,
    `B responses: ${outcomes(b)}`,
  ].join('\n');
}
