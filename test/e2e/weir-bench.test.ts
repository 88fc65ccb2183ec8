/**
 * `weir bench` as a user runs it, against a real Weir on loopback: the figures it reports agree with Weir's
 * own request counters over the same run, the plot it writes is an SVG a real XML parser accepts, its JSON
 * result goes back into `weir bench compare`, and bad flags are refused with exit 2 and the flag named.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOMParser, type Element } from '@xmldom/xmldom';
import t, { type Test } from 'tap';
import type { BenchRecord } from '../../src/loadgen/bench-record.ts';
import { PROJECT_API_KEY, runWeir, startTestWeir, tempDir, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

/** weir_capture_requests_total by status, summed over routes. */
async function requestsByStatus(): Promise<Record<string, number>> {
  const text = await (await fetch(`${w.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^weir_capture_requests_total\{[^}]*status="(\d+)"[^}]*\} (\d+)$/gm))
    out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  return out;
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [status, n] of Object.entries(after))
    if (n - (before[status] ?? 0) > 0) out[status] = n - (before[status] ?? 0);
  return out;
}

const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/** Runs `weir bench capture` into a fresh directory; returns its output, its record and its files. */
async function benchCapture(args: readonly string[]): Promise<{
  code: number | null;
  stdout: string;
  stderr: string;
  record: BenchRecord;
  json: string;
  svg: string;
}> {
  const out = tempDir('weir-bench-');
  const run = await runWeir(['bench', 'capture', '--url', w.url, '--out', out, ...args]);
  const files = readdirSync(out);
  const json = join(out, files.find((f) => f.endsWith('.json')) ?? 'missing.json');
  const svg = join(out, files.find((f) => f.endsWith('.svg')) ?? 'missing.svg');
  if (run.code !== 0) throw new Error(`weir bench capture exited ${run.code}:\n${run.stderr}`);
  return { ...run, record: JSON.parse(readFileSync(json, 'utf8')) as BenchRecord, json, svg };
}

/** Parses `path` as XML (any error fails) and returns its root, which must be an SVG element. */
function parseSvg(t: Test, path: string): Element {
  const errors: string[] = [];
  const doc = new DOMParser({
    onError: (level, message) => errors.push(`${level}: ${message}`),
  }).parseFromString(readFileSync(path, 'utf8'), 'image/svg+xml');
  t.same(errors, [], 'the SVG parses without an error or a warning');
  const root = doc.documentElement!;
  t.equal(root.localName, 'svg');
  t.equal(root.namespaceURI, 'http://www.w3.org/2000/svg');
  return root;
}

/** The paths of a plot: one line per run, each starting with a move and drawing at least one segment. */
function plotLines(root: Element): string[] {
  return Array.from(root.getElementsByTagName('path'))
    .map((p) => p.getAttribute('d') ?? '')
    .filter((d) => /^M[\d.]+,[\d.]+( L[\d.]+,[\d.]+)+$/.test(d));
}

const runs: BenchRecord[] = [];
const jsons: string[] = [];

t.test('a fixed-rate run reports the requests and statuses that Weir counted', async (t) => {
  const before = await requestsByStatus();
  const run = await benchCapture([
    '--api-key',
    PROJECT_API_KEY,
    '--mode',
    'batch',
    '--batch-size',
    '5',
    '--rate',
    '100',
    '--duration',
    '1',
    '--connections',
    '8',
    '--label',
    'good key',
  ]);
  const f = run.record.figures;
  t.equal(f.scheduled, 100, 'a second at 100 req/s is 100 requests');
  t.equal(f.sent, 100);
  // A capture thread hands its counts to /metrics now and then: wait until they are all there.
  const counted = await waitFor(
    async () => {
      const d = diff(await requestsByStatus(), before);
      return total(d) >= f.sent ? d : undefined;
    },
    10_000,
    "Weir's counters to show the run",
  );
  t.same(counted, f.statuses, 'responses by status equal Weir request counters');
  t.same(f.statuses, { '200': 100 });
  t.equal(f.okEventsPerSecond, f.okPerSecond * 5);
  t.match(run.stdout, /responses 200×100/);
  t.match(run.stdout, /latency ms +p50 [\d.]+ +p90 [\d.]+ +p99 [\d.]+ +p99\.9 [\d.]+ +max [\d.]+/);
  t.match(run.record.parameters, {
    mode: 'batch',
    eventsPerRequest: 5,
    rate: 100,
    max: false,
    connections: 8,
  });
  t.notMatch(readFileSync(run.json, 'utf8'), PROJECT_API_KEY, 'the result file does not hold the key');
  t.equal(plotLines(parseSvg(t, run.svg)).length, 1, 'the plot draws the run');
  runs.push(run.record);
  jsons.push(run.json);
});

t.test('refused requests are reported by status as Weir counted them', async (t) => {
  const before = await requestsByStatus();
  const run = await benchCapture([
    '--api-key',
    'phc_not_a_key_of_this_weir',
    '--rate',
    '50',
    '--duration',
    '1',
    '--connections',
    '4',
    '--label',
    'bad key',
  ]);
  const f = run.record.figures;
  const counted = await waitFor(
    async () => {
      const d = diff(await requestsByStatus(), before);
      return total(d) >= f.sent ? d : undefined;
    },
    10_000,
    "Weir's counters to show the run",
  );
  t.equal(f.sent, 50);
  t.same(counted, f.statuses);
  t.notOk(f.statuses['200'], 'nothing was accepted');
  t.equal(f.okEventsPerSecond, 0);
  runs.push(run.record);
  jsons.push(run.json);
});

t.test('compare reads both result files back and plots both distributions', async (t) => {
  t.equal(jsons.length, 2, 'both runs wrote a result');
  const plot = join(tempDir('weir-bench-'), 'both.svg');
  const run = await runWeir(['bench', 'compare', jsons[0]!, jsons[1]!, '--plot', plot]);
  t.equal(run.code, 0, run.stderr);
  const [a, b] = runs as [BenchRecord, BenchRecord];
  t.match(run.stdout, `A  good key: ${w.url}`);
  t.match(run.stdout, `B  bad key: ${w.url}`);
  t.match(run.stdout, /the runs differ in mode, batch size, rate/);
  const p99 = /^latency p99 ms +(\S+) +(\S+) +(\S+) +(\S+)$/m.exec(run.stdout);
  t.ok(p99, 'a p99 row');
  const fmt = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1));
  t.same(p99?.slice(1, 3), [fmt(a.figures.latency.p99), fmt(b.figures.latency.p99)], 'each file its own p99');
  const events = /^events\/s +(\S+) +(\S+) /m.exec(run.stdout);
  t.same(events?.slice(1), [Math.round(a.figures.okEventsPerSecond).toLocaleString('en-US'), '0.0']);
  t.match(run.stdout, /^B responses: 401×50$/m);
  t.equal(plotLines(parseSvg(t, plot)).length, 2, 'one line per run');
});

// Every check of the flags is in test/unit/bench-options.test.ts; here, that the command exits 2 with them.
t.test('bad flags are refused with exit 2 and the flag named', async (t) => {
  const capture = ['bench', 'capture', '--url', w.url, '--api-key', PROJECT_API_KEY];
  const cases: [string[], RegExp][] = [
    [[...capture, '--rate', '0'], /--rate must be a number in \(0, 1000000\], got '0'/],
    [[...capture, '--mode', 'bulk'], /--mode must be single or batch, got 'bulk'/],
    [[...capture, '--bogus'], /Unknown option '--bogus'/],
    [['bench', 'capture', '--url', w.url], /--api-key is required/],
    [['bench', 'compare', 'only-one.json'], /compare takes two result files/],
    [['bench', 'measure'], /unknown bench command 'measure'/],
  ];
  const results = await Promise.all(cases.map(([args]) => runWeir(args)));
  results.forEach((r, i) => {
    const [args, message] = cases[i]!;
    t.equal(r.code, 2, `${args.slice(2).join(' ')}: exit 2`);
    t.match(r.stderr, message);
    t.match(r.stderr, /usage: weir bench capture/, 'with the usage');
  });
});

t.test('compare refuses a file that is not a bench result, saying why', async (t) => {
  const dir = tempDir('weir-bench-');
  const other = join(dir, 'other.json');
  writeFileSync(other, '{"kind":"something else"}');
  const run = await runWeir(['bench', 'compare', jsons[0] ?? other, other]);
  t.equal(run.code, 1);
  t.match(run.stderr, `${other}: not a weir-bench-capture result file`);
});
