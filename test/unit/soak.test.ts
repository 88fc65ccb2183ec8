/**
 * The soak's arithmetic (bench/soak): the memory trend its verdict rests on, the connections a low rate
 * gets (so a keep-alive timeout does not lose requests), a mode's runs added up, and its flags.
 */
import t from 'tap';
import { brkHeapResident, memoryTrend, residentMemory, type MemorySample } from '../../bench/soak/memory.ts';
import { parseSoakOptions } from '../../bench/soak/options.ts';
import { connectionsFor, totals, type SoakRun } from '../../bench/soak/soak-load.ts';

const MB = 1024 * 1024;

function sample(t: number, rssMb: number, phase: MemorySample['phase'] = 'soak'): MemorySample {
  return {
    t,
    phase,
    rssBytes: rssMb * MB,
    rssAnonBytes: undefined,
    brkHeapBytes: undefined,
    heapUsedBytes: undefined,
    heapTotalBytes: undefined,
    externalBytes: undefined,
    natsRssBytes: undefined,
  };
}

t.test('the trend is the least-squares slope in % of the mean per minute, over the window only', (t) => {
  // 500 MB growing 5 MB a minute from 300 s on; the search before and the samples before the window differ.
  const samples = [
    sample(-60, 900, 'search'),
    sample(0, 100),
    sample(240, 100),
    ...Array.from({ length: 31 }, (_, i) => sample(300 + i * 10, 500 + (5 * i * 10) / 60)),
  ];
  const trend = memoryTrend(samples, 300);
  if (trend === undefined) throw new Error('no trend');
  t.equal(trend.samples, 31);
  t.equal(trend.from, 300);
  t.equal(trend.to, 600);
  t.ok(Math.abs(trend.slopeBytesPerMinute / MB - 5) < 1e-9);
  t.ok(Math.abs(trend.meanBytes / MB - 512.5) < 1e-9);
  t.ok(Math.abs(trend.percentPerMinute - (5 / 512.5) * 100) < 1e-9);
  // On a straight line noise moves nothing.
  t.ok(trend.standardErrorPercent < 1e-9);
  t.end();
});

t.test('flat memory with noise has a trend near zero; falling memory a negative one', (t) => {
  const flat = memoryTrend(
    Array.from({ length: 30 }, (_, i) => sample(i * 10, 600 + (i % 2 === 0 ? 8 : -8))),
    0,
  );
  t.ok(flat !== undefined && Math.abs(flat.percentPerMinute) < 0.2);
  t.ok(flat !== undefined && flat.standardErrorPercent > 0);
  // The same noise over a tenth of the time: the slope is far less certain.
  const short = memoryTrend(
    Array.from({ length: 30 }, (_, i) => sample(i, 600 + (i % 2 === 0 ? 8 : -8))),
    0,
  );
  t.ok(
    short !== undefined && flat !== undefined && short.standardErrorPercent > 5 * flat.standardErrorPercent,
  );
  const falling = memoryTrend(
    Array.from({ length: 10 }, (_, i) => sample(i * 10, 700 - i)),
    0,
  );
  t.ok(falling !== undefined && falling.percentPerMinute < 0);
  t.end();
});

t.test('fewer than three samples, or samples without the figure, give no trend', (t) => {
  t.equal(memoryTrend([sample(0, 1), sample(10, 2)], 0), undefined);
  t.equal(
    memoryTrend([sample(0, 1), sample(10, 2), sample(20, 3)], 0, (s) => s.heapUsedBytes),
    undefined,
  );
  t.equal(memoryTrend([sample(0, 1), sample(10, 2), sample(20, 3, 'drain')], 0), undefined);
  t.end();
});

t.test('a low rate gets few connections, each used more often than the keep-alive timeout', (t) => {
  t.equal(connectionsFor(20, 256), 80);
  t.equal(connectionsFor(1000, 256), 256);
  t.equal(connectionsFor(0.1, 256), 2);
  // Used in turn, a connection carries a request every connections / rate seconds: under uWS's 10 s.
  for (const rate of [1, 5, 20, 62, 200]) t.ok(connectionsFor(rate, 256) / rate < 10);
  t.end();
});

function run(mode: SoakRun['mode'], ok: number, extra: Partial<SoakRun> = {}): SoakRun {
  return {
    mode,
    startedAt: 0,
    rate: 10,
    connections: 40,
    durationMs: 30_000,
    elapsedMs: 30_000,
    scheduled: ok,
    sent: ok,
    ok,
    statuses: { '200': ok },
    connectionErrors: 0,
    firstConnectionError: undefined,
    timedOut: 0,
    unsent: 0,
    failed: 0,
    okPerSecond: ok / 30,
    p50: 1,
    p99: 5,
    p999: 8,
    max: 10,
    generatorCpuCores: 0.1,
    ...extra,
  };
}

t.test("a mode's totals: events acknowledged are 200s × events per request; statuses summed", (t) => {
  const runs = [
    run('batch', 300),
    run('single', 900),
    run('batch', 299, { statuses: { '200': 299, '503': 1 }, failed: 1, p99: 40, max: 90 }),
  ];
  const batch = totals('batch', 10, runs);
  t.match(batch, { runs: 2, ok: 599, acknowledgedEvents: 59_900, failed: 1, worstP99: 40, max: 90 });
  t.same(batch.statuses, { '200': 599, '503': 1 });
  t.match(totals('single', 30, runs), { runs: 1, ok: 900, acknowledgedEvents: 900, failed: 0 });
  t.end();
});

t.test('flags: defaults by whether nats-server is on PATH, and a wrong one named', (t) => {
  const withNats = parseSoakOptions([], true);
  if (withNats === 'help') throw new Error('not help');
  t.match(withNats, { minutes: 10, fraction: 0.7, out: 'bench/results/soak.md', runSeconds: 30 });
  t.same(withNats.buses, ['embedded', 'jetstream']);
  const without = parseSoakOptions([], false);
  t.same(without !== 'help' && without.buses, ['embedded']);
  t.throws(() => parseSoakOptions(['--bus', 'jetstream'], false), /needs nats-server/);
  t.throws(() => parseSoakOptions(['--bus', 'kafka'], true), /--bus must be/);
  t.throws(() => parseSoakOptions(['--fraction', '1.5'], true), /--fraction must be/);
  t.throws(() => parseSoakOptions(['--minutes', '0'], true), /--minutes must be/);
  const short = parseSoakOptions(['--minutes', '1', '--bus', 'embedded', '--out', '/tmp/x.md'], true);
  t.match(short, { minutes: 1, buses: ['embedded'], out: '/tmp/x.md', fresh: false });
  t.match(parseSoakOptions(['--fresh'], true), { fresh: true });
  t.match(parseSoakOptions(['--rates', 'single=5325,batch=164'], true), {
    rates: { single: 5325, batch: 164 },
  });
  t.throws(() => parseSoakOptions(['--rates', 'single=5325'], true), /both modes/);
  t.throws(() => parseSoakOptions(['--rates', 'single=0,batch=3'], true), /--rates must be a number/);
  t.throws(
    () => parseSoakOptions(['--rates', 'single=1,batch=3,single=2'], true),
    /--rates must be single=N/,
  );
  t.end();
});

t.test(
  "this process's resident memory and its malloc heap read from /proc",
  { skip: process.platform !== 'linux' },
  (t) => {
    const { rss, anon } = residentMemory(process.pid);
    t.ok(rss !== undefined && rss > 10 * MB);
    t.ok(anon !== undefined && anon <= rss!);
    const brk = brkHeapResident(process.pid);
    t.ok(brk !== undefined && brk >= 0 && brk <= rss!);
    t.same(residentMemory(2 ** 22 + 1), { rss: undefined, anon: undefined });
    t.end();
  },
);
