/**
 * GeoIP end to end (docs/geoip.md): `WEIR_GEOIP=on` with the GeoLite2 City database of the optional npm
 * package, on capture's main thread, its threads (which read the main thread's shared copy) and `weir capture`, v0 and
 * Capture V1; the `$geoip_*` event properties and the person's; `$geoip_disable`; a trend broken down by
 * `$geoip_country_code`; and a database that cannot be used, refused at start.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { postV1, v1Body, v1Event, v1Headers } from '../helpers/capture-v1.ts';
import { createEndpoint, runOk } from '../helpers/endpoints.ts';
import { rows } from '../helpers/query-api.ts';
import { captureOverJetStream } from '../helpers/roles.ts';
import {
  PROJECT_API_KEY,
  post,
  runWeir,
  startTestWeir,
  tempDir,
  waitFor,
  type TestWeir,
} from '../helpers/weir.ts';

// Addresses whose country is a stable fact of the GeoLite2 data (the unit tests check the lookups in detail).
const SWEDEN = '89.160.20.129';
const US = '8.8.8.8';
const US_V6 = '2001:4860:4860::8888';

async function send(
  w: { readonly url: string },
  distinctId: string,
  ip: string,
  properties: Record<string, unknown> = {},
): Promise<string> {
  const uuid = randomUUID();
  const body = { api_key: PROJECT_API_KEY, event: 'geo probe', distinct_id: distinctId, uuid, properties };
  const res = await post(`${w.url}/i/v0/e/`, JSON.stringify(body), {
    'content-type': 'application/json',
    'x-forwarded-for': ip,
  });
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
  return uuid;
}

async function stored(w: TestWeir, uuid: string): Promise<Record<string, unknown>> {
  return waitFor(
    async () => {
      const [row] = await w.rows<{ properties: string }>(
        'SELECT properties FROM events WHERE uuid = toUUID({uuid:String})',
        { uuid },
      );
      return row ? (JSON.parse(row.properties) as Record<string, unknown>) : undefined;
    },
    30_000,
    `event ${uuid}`,
  );
}

async function personProperties(w: TestWeir, distinctId: string): Promise<Record<string, unknown>> {
  return waitFor(
    async () => {
      const [row] = await w.rows<{ properties: string }>(
        `SELECT argMax(properties, version) AS properties FROM persons
         WHERE id = (SELECT argMax(person_id, version) FROM person_distinct_ids WHERE distinct_id = {d:String})`,
        { d: distinctId },
      );
      return row && row.properties !== ''
        ? (JSON.parse(row.properties) as Record<string, unknown>)
        : undefined;
    },
    30_000,
    `the person of ${distinctId}`,
  );
}

const geoKeys = (props: Record<string, unknown>): string[] =>
  Object.keys(props).filter((k) => k.startsWith('$geoip_') && k !== '$geoip_disable');

t.test('weir start, capture on the main thread', async (t) => {
  const w = await startTestWeir({ WEIR_GEOIP: 'on' });
  t.teardown(() => w.close());

  const se = await stored(w, await send(w, 'geo-se', SWEDEN));
  t.equal(se['$ip'], SWEDEN);
  t.equal(se['$geoip_country_code'], 'SE', 'the country of $ip');
  t.equal(se['$geoip_country_name'], 'Sweden');
  t.type(se['$geoip_latitude'], 'number');
  t.type(se['$geoip_time_zone'], 'string');
  t.match(se['$set'], { $geoip_country_code: 'SE' }, 'the person’s current location, in $set');
  t.match(se['$set_once'], { $initial_geoip_country_code: 'SE' }, 'and the first, in $set_once');

  const person = await personProperties(w, 'geo-se');
  t.equal(person['$geoip_country_code'], 'SE', 'the person has it');
  t.equal(person['$initial_geoip_country_code'], 'SE');
  // The person moves: $set follows, $set_once keeps the first.
  await stored(w, await send(w, 'geo-se', US));
  await waitFor(
    async () => ((await personProperties(w, 'geo-se'))['$geoip_country_code'] === 'US' ? true : undefined),
    30_000,
    'the person to move',
  );
  t.equal((await personProperties(w, 'geo-se'))['$initial_geoip_country_code'], 'SE', 'initial kept');

  t.equal((await stored(w, await send(w, 'geo-v6', US_V6)))['$geoip_country_code'], 'US', 'IPv6');
  const off = await stored(w, await send(w, 'geo-off', SWEDEN, { $geoip_disable: true }));
  t.same(geoKeys(off), [], '$geoip_disable: none');
  t.equal(off['$set'], undefined, 'and no person properties');
  t.same(geoKeys(await stored(w, await send(w, 'geo-lo', '127.0.0.1'))), [], 'loopback finds nothing');

  const v1 = v1Event({ event: 'geo probe', distinct_id: 'geo-v1' });
  const res = await postV1(w.url, v1Body([v1]), { ...v1Headers(), 'x-forwarded-for': SWEDEN });
  t.equal(res.status, 200, res.text);
  t.equal((await stored(w, v1['uuid'] as string))['$geoip_country_code'], 'SE', 'Capture V1 too');
});

t.test('a trend broken down by $geoip_country_code', async (t) => {
  const w = await startTestWeir({ WEIR_GEOIP: 'on' });
  t.teardown(() => w.close());
  const sends: [string, number][] = [
    [SWEDEN, 3],
    [US, 2],
    [US_V6, 1],
  ];
  const uuids: string[] = [];
  for (const [ip, n] of sends) for (let i = 0; i < n; i++) uuids.push(await send(w, `trend-${ip}-${i}`, ip));
  for (const uuid of uuids) await stored(w, uuid);
  const today = new Date().toISOString().slice(0, 10);
  await createEndpoint(w, {
    name: 'by-country',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'geo probe' }],
      dateRange: { date_from: today, date_to: today },
      breakdownFilter: { breakdown: '$geoip_country_code', breakdown_type: 'event' },
    },
  });
  const body = await runOk(w, 'by-country');
  const byCountry = Object.fromEntries(body.results.map((r) => [String(r[2]), Number(r[4])] as const));
  t.same(byCountry, { SE: 3, US: 3 }, 'events per country, today');
});

t.test('capture threads read the main thread’s database', async (t) => {
  const w = await startTestWeir({ WEIR_GEOIP: 'on', WEIR_CAPTURE_THREADS: '2' });
  t.teardown(() => w.close());
  const got = new Set<unknown>();
  // With capture threads the main thread serves no capture: every event here was enriched on a thread.
  for (let i = 0; i < 8; i++)
    got.add((await stored(w, await send(w, `geo-thread-${i}`, SWEDEN)))['$geoip_country_code']);
  t.same([...got], ['SE']);
});

t.test('weir capture over JetStream', async (t) => {
  const { ingest, capture } = await captureOverJetStream(t, { WEIR_GEOIP: 'on' });
  t.match(capture.output(), /GeoIP on/, 'said at start');
  const uuid = await send(capture, 'geo-role', SWEDEN);
  const found = await waitFor(
    async () =>
      (await rows(ingest, `SELECT properties.$geoip_country_code FROM events WHERE uuid = '${uuid}'`))[0],
    30_000,
    'the event to be stored',
  );
  t.same(found, ['SE'], 'enriched by weir capture, stored by weir ingest');
});

t.test('a database that cannot be used stops the start, naming the file', async (t) => {
  const dir = tempDir();
  const bad = join(dir, 'GeoLite2-City.mmdb');
  writeFileSync(bad, 'not a database');
  const res = await runWeir(['start'], { WEIR_DATA_DIR: dir, WEIR_PORT: '0', WEIR_GEOIP_DB: bad });
  t.not(res.code, 0, 'refused');
  t.match(res.stderr + res.stdout, /GeoIP: .*GeoLite2-City\.mmdb is not a usable GeoIP database/);
});
