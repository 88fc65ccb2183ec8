/**
 * `npm run bench:geoip`'s parts that decide what it measures: its flags (and the capture-bench options they
 * come to), the public addresses its events carry, and how the generator's bodies carry them.
 */
import t from 'tap';
import { publicAddresses, isPublicV4 } from '../../bench/capture/geoip-ips.ts';
import { parseGeoipOptions } from '../../bench/capture/geoip-options.ts';
import { buildBodies, buildPayloads, DISTINCT_IDS } from '../../src/loadgen/payloads.ts';

function options(args: string[]): Exclude<ReturnType<typeof parseGeoipOptions>, 'help'> {
  const parsed = parseGeoipOptions(args);
  if (parsed === 'help') throw new Error('help');
  return parsed;
}

t.test('defaults: many (50,000) and few (100) addresses, off on on off, batch at 50 req/s', (t) => {
  const o = options([]);
  t.same(o.sets, [
    { name: 'many', count: 50_000 },
    { name: 'few', count: 100 },
  ]);
  t.equal(o.rounds, 2);
  t.equal(o.quick, false);
  t.equal(o.transport, undefined);
  t.match(o.bench, {
    bus: 'embedded',
    modes: ['batch'],
    batchRate: 50,
    durationMs: 10_000,
    stepMs: 3000,
    warmupMs: 60_000,
    quietWaitMs: 60_000,
    outDir: 'bench/results',
  });
  t.end();
});

t.test('--quick shortens everything a flag does not set', (t) => {
  const quick = options(['--quick']);
  t.equal(quick.rounds, 1);
  t.match(quick.bench, { durationMs: 3000, stepMs: 1500, quietWaitMs: 10_000 });
  const told = options(['--quick', '--duration', '5', '--rounds', '2', '--sets', 'few', '--few', '30']);
  t.equal(told.rounds, 2);
  t.equal(told.bench.durationMs, 5000);
  t.same(told.sets, [{ name: 'few', count: 30 }]);
  t.end();
});

t.test('a wrong flag is refused, naming it', (t) => {
  const refused: [string[], RegExp][] = [
    [['--sets', 'lots'], /--sets/],
    [['--sets', 'many,many'], /--sets/],
    [['--rounds', '0'], /--rounds/],
    [['--rounds', '1.5'], /--rounds/],
    [['--many', '-3'], /--many/],
    [['--transport', 'h2'], /--transport/],
    [['--batch-rate', 'fast'], /--batch-rate/],
    [['--mode', 'single'], /mode/],
  ];
  for (const [args, message] of refused) t.throws(() => parseGeoipOptions(args), message, args.join(' '));
  t.equal(parseGeoipOptions(['--help']), 'help');
  t.end();
});

t.test('addresses: distinct, public, one in ten IPv6 in RFC 5952 form, the same every time', (t) => {
  const ips = publicAddresses(20_000);
  t.equal(new Set(ips).size, ips.length, 'distinct');
  t.same(publicAddresses(20_000), ips, 'deterministic');
  t.same(publicAddresses(500), ips.slice(0, 500), 'a shorter list is a prefix of a longer one');
  t.not(publicAddresses(100, { seed: 2 })[0], ips[0], 'another seed, other addresses');
  const v6 = ips.filter((ip) => ip.includes(':'));
  t.equal(v6.length, 2000);
  for (const ip of v6) {
    if (!/^(2601|2a01|2410):/.test(ip) || new URL(`http://[${ip}]/`).hostname !== `[${ip}]`)
      t.fail(`${ip}: not a short-form address of the prefixes`);
  }
  for (const ip of ips.filter((a) => !a.includes(':'))) {
    const n = ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
    if (!isPublicV4(n)) t.fail(`${ip} is not public`);
  }
  const v4 = (a: string): number => a.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
  for (const notPublic of [
    '10.1.2.3',
    '127.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '100.64.0.1',
    '169.254.1.1',
  ])
    t.notOk(isPublicV4(v4(notPublic)), notPublic);
  for (const notPublic of [
    '224.0.0.1',
    '239.255.255.255',
    '240.0.0.1',
    '255.255.255.255',
    '0.1.2.3',
    '198.19.0.1',
  ])
    t.notOk(isPublicV4(v4(notPublic)), notPublic);
  for (const open of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '198.20.0.1'])
    t.ok(isPublicV4(v4(open)), open);
  t.end();
});

interface Sent {
  readonly properties: Record<string, string>;
}

function events(bodies: readonly string[]): Sent[] {
  return bodies.flatMap((body) => (JSON.parse(body) as { batch: Sent[] }).batch);
}

t.test('bodies: event n carries ips[n % ips.length], and a cycle sends every address', (t) => {
  const few = ['1.2.3.4', '2a01::1', '5.6.7.8'];
  const sent = events(buildBodies('batch', 'phc_k', 100, few));
  t.equal(sent.length, DISTINCT_IDS, 'fewer addresses than ids: the cycle is one round of the ids');
  t.same(
    sent.slice(0, 4).map((e) => [e.properties['distinct_id'], e.properties['$ip']]),
    [
      ['user-0', '1.2.3.4'],
      ['user-1', '2a01::1'],
      ['user-2', '5.6.7.8'],
      ['user-3', '1.2.3.4'],
    ],
  );
  const many = publicAddresses(25_000);
  const long = events(buildBodies('batch', 'phc_k', 100, many));
  t.equal(
    long.length,
    3 * DISTINCT_IDS,
    'more addresses than ids: whole rounds of the ids until all are sent',
  );
  t.equal(new Set(long.map((e) => e.properties['$ip'])).size, many.length);
  t.equal(long[DISTINCT_IDS]?.properties['distinct_id'], 'user-0', 'each round sends the ids in order again');
  t.equal(long[25_000]?.properties['$ip'], many[0]);
  const single = buildPayloads('single', { apiKey: 'phc_k', host: 'h:1', ips: many });
  t.equal(single.requests.length, 3 * DISTINCT_IDS);
  t.notOk(
    buildBodies('batch', 'phc_k').some((body) => body.includes('$ip')),
    'without ips no event has $ip',
  );
  t.end();
});
