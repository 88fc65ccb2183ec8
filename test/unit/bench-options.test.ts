/**
 * The flags of `weir bench capture` and `compare`: what a user gets by default, and the message naming the
 * flag when one is wrong (the CLI prints it with the usage and exits 2, test/e2e/weir-bench.test.ts). Then
 * `npm run bench:capture`'s `--transports`: which HTTP transports a run measures on this Node.js.
 */
import t from 'tap';
import { parseOptions, planTransports } from '../../bench/capture/options.ts';
import { BenchUsageError, parseCaptureOptions, parseCompareOptions } from '../../src/cli/bench-options.ts';

const base = ['--url', 'http://127.0.0.1:8000', '--api-key', 'phc_x'];

t.test(
  'defaults: 100 req/s of single events for 10 s on 256 connections, files in the current directory',
  (t) => {
    const options = parseCaptureOptions(base);
    if (options === 'help') throw new Error('not help');
    t.match(options.spec, {
      mode: 'single',
      rate: 100,
      durationMs: 10_000,
      connections: 256,
      batchSize: 100,
      maxP99Ms: 100,
      label: '127.0.0.1:8000 single',
    });
    t.equal(options.outDir, '.');
    t.end();
  },
);

t.test('--max searches instead of a fixed rate, in 3-second steps unless told', (t) => {
  const options = parseCaptureOptions([
    ...base,
    '--max',
    '--max-p99',
    '50',
    '--mode',
    'batch',
    '--batch-size',
    '20',
  ]);
  if (options === 'help') throw new Error('not help');
  t.match(options.spec, { rate: null, durationMs: 3000, maxP99Ms: 50, mode: 'batch', batchSize: 20 });
  t.end();
});

t.test('each bad flag is refused with a message naming it', (t) => {
  const cases: [string[], RegExp][] = [
    [['--rate', 'fast'], /^--rate must be a number in \(0, 1000000\], got 'fast'$/],
    [['--rate', '0'], /^--rate must be a number/],
    [['--rate=-5'], /^--rate must be a number/],
    [['--rate', '5', '--max'], /^--rate and --max exclude each other/],
    [['--duration', '1e9'], /^--duration must be a number in \(0, 3600\]/],
    [['--connections', '2.5'], /^--connections must be a whole number/],
    [['--mode', 'bulk'], /^--mode must be single or batch, got 'bulk'$/],
    [['--batch-size', '10'], /^--batch-size applies to --mode batch only$/],
    [['--mode', 'batch', '--batch-size', '0'], /^--batch-size must be a whole number/],
    [['--max-p99', 'x', '--max'], /^--max-p99 must be a number/],
    [['--bogus'], /Unknown option '--bogus'/],
    [['--url'], /Option '--url <value>' argument missing/],
    [['extra'], /^capture takes no arguments, got 'extra'$/],
  ];
  for (const [args, message] of cases)
    t.throws(() => parseCaptureOptions([...base, ...args]), { name: 'Error', message }, args.join(' '));
  t.throws(() => parseCaptureOptions(['--api-key', 'k']), /^--url is required/);
  t.throws(
    () => parseCaptureOptions(['--url', 'ftp://x', '--api-key', 'k']),
    /^--url must be an http or https URL/,
  );
  t.throws(() => parseCaptureOptions(['--url', 'not a url', '--api-key', 'k']), /^--url must be an http/);
  t.throws(() => parseCaptureOptions(['--url', 'http://x']), /^--api-key is required/);
  t.throws(
    () => parseCompareOptions(['a.json']),
    /^compare takes two result files \(A\.json B\.json\), got 1$/,
  );
  // A usage error of its own class, whatever parseArgs threw: the CLI tells it from a fault by that.
  let caught: unknown;
  try {
    parseCaptureOptions(['--bogus']);
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof BenchUsageError);
  t.end();
});

t.test('compare takes two files and an optional plot', (t) => {
  t.same(parseCompareOptions(['a.json', 'b.json', '--plot', 'p.svg']), {
    a: 'a.json',
    b: 'b.json',
    plot: 'p.svg',
  });
  t.equal(parseCaptureOptions(['--help']), 'help');
  t.end();
});

t.test('bench:capture --transports: uWS before Node http, each once, embedded only', (t) => {
  const transports = (args: string[]): unknown => {
    const options = parseOptions(args);
    if (options === 'help') throw new Error('not help');
    return options.transports;
  };
  t.equal(transports([]), undefined, 'left to the run: both where uWS loads');
  t.same(transports(['--transports', 'node']), ['node']);
  t.same(transports(['--transports', 'uws']), ['uws']);
  t.same(transports(['--transports', 'node,uws']), ['uws', 'node'], 'measured in one order');
  t.same(transports(['--transports', 'uws, node']), ['uws', 'node']);
  for (const bad of ['', 'http', 'uws,uws', 'uws,node,', 'UWS'])
    t.throws(
      () => parseOptions(['--transports', bad]),
      { message: `--transports must be uws, node or uws,node, got '${bad}'` },
      bad,
    );
  t.throws(
    () => parseOptions(['--bus', 'jetstream', '--transports', 'node']),
    /^--transports .* --bus embedded/,
  );
  t.end();
});

t.test("bench:capture's transports on this Node.js: uWS left out, with the reason, only by default", (t) => {
  t.same(planTransports(undefined, undefined), { transports: ['uws', 'node'], uwsSkipped: undefined });
  t.same(planTransports(['node'], undefined), { transports: ['node'], uwsSkipped: undefined });
  const reason = 'uWebSockets.js has no build for Node.js 24.0.0';
  t.same(planTransports(undefined, reason), { transports: ['node'], uwsSkipped: reason });
  t.same(planTransports(['node'], reason), { transports: ['node'], uwsSkipped: reason });
  t.throws(() => planTransports(['uws', 'node'], reason), { message: `--transports uws: ${reason}` });
  t.end();
});

t.test(
  "bench:capture --nats-sync: the server's default, sync always, or both in turn; JetStream only",
  (t) => {
    const sync = (args: string[]): unknown => {
      const options = parseOptions(['--bus', 'jetstream', ...args]);
      if (options === 'help') throw new Error('not help');
      return options.natsSync;
    };
    t.same(sync([]), ['interval']);
    t.same(sync(['--nats-sync', 'always']), ['always']);
    t.same(sync(['--nats-sync', 'both']), ['interval', 'always'], 'the default first');
    t.throws(() => sync(['--nats-sync', 'never']), {
      message: "--nats-sync must be interval, always or both, got 'never'",
    });
    t.throws(() => parseOptions(['--nats-sync', 'always']), /^--nats-sync .* --bus jetstream/);
    t.end();
  },
);
