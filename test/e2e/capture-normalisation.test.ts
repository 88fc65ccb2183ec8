/**
 * What capture does to an accepted event before it is stored (SPEC §2 "What capture normalises"), what it
 * silently drops ("Silently dropped"), and that a retried request never makes a second row.
 */
import t from 'tap';
import { metricValue } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

// A server zone other than UTC, so that reading a timestamp without a zone in local time would show.
process.env['TZ'] = 'America/New_York';
const w = await startTestWeir();
t.teardown(() => w.close());

const KEY = PROJECT_API_KEY;
const HOUR = 3600_000;

async function capture(body: unknown, path = '/i/v0/e/'): Promise<void> {
  const res = await post(`${w.url}${path}`, JSON.stringify(body));
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
}

interface Stored {
  uuid: string;
  distinct_id: string;
  ms: number;
  properties: Record<string, unknown>;
}

/** The rows of one event name, oldest first. */
async function stored(event: string): Promise<Stored[]> {
  const rows = await w.rows<{ uuid: string; distinct_id: string; ms: string; properties: string }>(
    `SELECT toString(uuid) AS uuid, distinct_id, toUnixTimestamp64Milli(timestamp) AS ms, properties
     FROM events WHERE event = {event:String} ORDER BY timestamp, uuid`,
    { event },
  );
  return rows.map((r) => ({
    uuid: r.uuid,
    distinct_id: r.distinct_id,
    ms: Number(r.ms),
    properties: JSON.parse(r.properties) as Record<string, unknown>,
  }));
}

async function countWarnings(type: string): Promise<number> {
  const [row] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM ingestion_warnings WHERE type = {type:String}`,
    { type },
  );
  return Number(row?.n);
}

async function warningsFor(uuid: string): Promise<{ type: string; source: string }[]> {
  return w.rows(
    `SELECT type, source FROM ingestion_warnings WHERE JSONExtractString(details, 'uuid') = {uuid:String}`,
    { uuid },
  );
}

/** Runs `send` and returns the time window it ran in, for checking times set to "now". */
async function timed(send: () => Promise<void>): Promise<{ before: number; after: number }> {
  const before = Date.now();
  await send();
  return { before, after: Date.now() };
}

t.test('silent drops: 200, nothing stored, a warning row and a metric per reason', async (t) => {
  const cases = [
    { name: 'no event', item: { distinct_id: 'nm-drop-1' }, reason: 'missing_event_name' },
    { name: 'empty event', item: { event: '', distinct_id: 'nm-drop-2' }, reason: 'missing_event_name' },
    { name: 'null event', item: { event: null, distinct_id: 'nm-drop-3' }, reason: 'missing_event_name' },
    { name: 'no distinct_id', item: { event: 'nm_drop_no_id' }, reason: 'missing_distinct_id' },
    {
      name: 'null distinct_id',
      item: { event: 'nm_drop_null_id', distinct_id: null, properties: { distinct_id: null } },
      reason: 'missing_distinct_id',
    },
    {
      name: 'empty distinct_id',
      item: { event: 'nm_drop_empty_id', distinct_id: '' },
      reason: 'empty_distinct_id',
    },
  ];
  for (const c of cases) {
    const metric = () => metricValue(w.url, 'weir_capture_events_dropped_total', { reason: c.reason });
    const metricBefore = await metric();
    const warningsBefore = await countWarnings(`event_dropped_${c.reason}`);
    const res = await post(`${w.url}/i/v0/e/`, JSON.stringify({ api_key: KEY, ...c.item }));
    t.equal(res.status, 200, `${c.name}: 200`);
    t.same(res.json, { status: 'Ok' }, `${c.name}: body`);
    t.equal(await metric(), metricBefore + 1, `${c.name}: dropped metric`);
    t.equal(await countWarnings(`event_dropped_${c.reason}`), warningsBefore + 1, `${c.name}: warning row`);
  }
  const leaked = await w.rows(
    `SELECT event, distinct_id FROM events
     WHERE startsWith(distinct_id, 'nm-drop-') OR startsWith(event, 'nm_drop_')`,
  );
  t.same(leaked, [], 'none of the dropped events is stored');
});

t.test('a batch with dropped events stores the others', async (t) => {
  const before = await countWarnings('event_dropped_missing_distinct_id');
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({
      api_key: KEY,
      batch: [
        { event: 'nm_mixed', distinct_id: 'nm-mixed-1' },
        { event: 'nm_mixed' },
        { event: 'nm_mixed', properties: { distinct_id: 'nm-mixed-2' } },
        { event: 'nm_mixed', properties: { $distinct_id: 'nm-mixed-3' } },
      ],
    }),
  );
  t.equal(res.status, 200);
  t.same((await stored('nm_mixed')).map((r) => r.distinct_id).sort(), [
    'nm-mixed-1',
    'nm-mixed-2',
    'nm-mixed-3',
  ]);
  t.equal(await countWarnings('event_dropped_missing_distinct_id'), before + 1);
  const [warning] = await w.rows<{ details: string; source: string }>(
    `SELECT details, source FROM ingestion_warnings
     WHERE type = 'event_dropped_missing_distinct_id' AND JSONExtractString(details, 'event') = 'nm_mixed'`,
  );
  t.same(
    JSON.parse(warning?.details ?? 'null'),
    { event: 'nm_mixed', index: 1 },
    'the warning names the event',
  );
  t.equal(warning?.source, 'capture');
});

t.test('distinct_id', async (t) => {
  const cases: { name: string; raw: unknown; want: string }[] = [
    { name: 'number', raw: 12345, want: '12345' },
    { name: 'float', raw: 1.5, want: '1.5' },
    { name: 'boolean', raw: true, want: 'true' },
    { name: 'object', raw: { a: 1, b: 'x' }, want: '{"a":1,"b":"x"}' },
    { name: 'array', raw: [1, 'two'], want: '[1,"two"]' },
    { name: 'NUL', raw: 'a\u0000b\u0000', want: 'a\uFFFDb\uFFFD' },
    // Legal in JSON as `\ud800`, not in UTF-8: the store would refuse the whole commit.
    { name: 'lone surrogates', raw: 'a\ud800b\udc00', want: 'a\uFFFDb\uFFFD' },
    { name: '200 characters', raw: 'x'.repeat(200), want: 'x'.repeat(200) },
    { name: '250 characters', raw: 'y'.repeat(250), want: 'y'.repeat(200) },
    // 150 emoji are 300 UTF-16 units but 150 characters: kept whole.
    { name: '150 emoji', raw: '😀'.repeat(150), want: '😀'.repeat(150) },
    // Cut at a character, never inside a surrogate pair.
    { name: '250 emoji', raw: '😀'.repeat(250), want: '😀'.repeat(200) },
    { name: 'odd cut', raw: 'a' + '😀'.repeat(250), want: 'a' + '😀'.repeat(199) },
  ];
  await capture({
    api_key: KEY,
    batch: cases.map((c) => ({ event: `nm_did_${c.name}`, distinct_id: c.raw })),
  });
  for (const c of cases) {
    const rows = await stored(`nm_did_${c.name}`);
    t.same(
      rows.map((r) => r.distinct_id),
      [c.want],
      c.name,
    );
  }
  // The store holds valid UTF-8: a cut inside a surrogate pair would have become U+FFFD or worse.
  const [bytes] = await w.rows<{ n: string; valid: number }>(
    `SELECT length(distinct_id) AS n, isValidUTF8(distinct_id) AS valid FROM events WHERE event = 'nm_did_250 emoji'`,
  );
  t.same(bytes, { n: '800', valid: 1 }, '200 four-byte characters');
});

t.test('an event name with a lone surrogate is stored with U+FFFD in its place', async (t) => {
  await capture({ api_key: KEY, event: 'nm_lone_\udc00', distinct_id: 'nm-lone' });
  t.same(await w.rows(`SELECT event FROM events WHERE distinct_id = 'nm-lone'`), [
    { event: 'nm_lone_\uFFFD' },
  ]);
});

t.test('uuid', async (t) => {
  const given = '0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
  await capture({
    api_key: KEY,
    batch: [
      { event: 'nm_uuid_valid', distinct_id: 'nm-uuid', uuid: given },
      { event: 'nm_uuid_v4', distinct_id: 'nm-uuid', uuid: 'f47ac10b-58cc-4372-a567-0e02b2c3d479' },
      { event: 'nm_uuid_absent', distinct_id: 'nm-uuid' },
      { event: 'nm_uuid_invalid', distinct_id: 'nm-uuid', uuid: 'not-a-uuid' },
      { event: 'nm_uuid_short', distinct_id: 'nm-uuid', uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5' },
      { event: 'nm_uuid_number', distinct_id: 'nm-uuid', uuid: 42 },
    ],
  });
  t.same(
    (await stored('nm_uuid_valid')).map((r) => r.uuid),
    [given.toLowerCase()],
    'a valid uuid is kept, lower-cased',
  );
  t.same(
    (await stored('nm_uuid_v4')).map((r) => r.uuid),
    ['f47ac10b-58cc-4372-a567-0e02b2c3d479'],
    'any valid version is kept',
  );
  const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const fresh: string[] = [];
  for (const event of ['nm_uuid_absent', 'nm_uuid_invalid', 'nm_uuid_short', 'nm_uuid_number']) {
    const rows = await stored(event);
    t.equal(rows.length, 1, `${event}: stored`);
    t.match(rows[0]?.uuid, v7, `${event}: a new UUIDv7`);
    fresh.push(rows[0]?.uuid ?? '');
  }
  t.equal(new Set(fresh).size, fresh.length, 'each new uuid is distinct');
  // A UUIDv7 starts with the time in milliseconds.
  const ms = parseInt(fresh[0]!.replace('-', '').slice(0, 12), 16);
  t.ok(Math.abs(ms - Date.now()) < 60_000, 'the UUIDv7 carries the capture time');
});

t.test('timestamp', (t) => {
  t.test('an ISO timestamp is kept (any offset, stored as UTC)', async (t) => {
    await capture({
      api_key: KEY,
      batch: [
        { event: 'nm_ts_iso', distinct_id: 'nm-ts-1', timestamp: '2024-01-02T03:04:05.678Z' },
        { event: 'nm_ts_iso', distinct_id: 'nm-ts-2', timestamp: '2024-01-02T05:04:05.679+02:00' },
        { event: 'nm_ts_iso', distinct_id: 'nm-ts-3', timestamp: '2024-01-02T03:04:05.680' },
        { event: 'nm_ts_iso', distinct_id: 'nm-ts-4', timestamp: '2024-01-02 03:04:05.681' },
      ],
    });
    const rows = await stored('nm_ts_iso');
    t.same(
      rows.map((r) => [r.distinct_id, new Date(r.ms).toISOString()]),
      [
        ['nm-ts-1', '2024-01-02T03:04:05.678Z'],
        ['nm-ts-2', '2024-01-02T03:04:05.679Z'],
        ['nm-ts-3', '2024-01-02T03:04:05.680Z'], // no zone: UTC, whatever the server's zone
        ['nm-ts-4', '2024-01-02T03:04:05.681Z'],
      ],
    );
  });

  t.test('missing timestamp is now', async (t) => {
    const { before, after } = await timed(() =>
      capture({ api_key: KEY, event: 'nm_ts_missing', distinct_id: 'nm-ts' }),
    );
    const [row] = await stored('nm_ts_missing');
    t.ok(row && row.ms >= before && row.ms <= after, `${row?.ms} within [${before}, ${after}]`);
  });

  t.test('batch sent_at corrects a client clock one hour fast', async (t) => {
    const clientNow = Date.now() + HOUR;
    const { before, after } = await timed(() =>
      capture(
        {
          api_key: KEY,
          sent_at: new Date(clientNow).toISOString(),
          batch: [
            {
              event: 'nm_ts_skew',
              distinct_id: 'nm-ts',
              timestamp: new Date(clientNow - 10_000).toISOString(),
            },
          ],
        },
        '/batch/',
      ),
    );
    const [row] = await stored('nm_ts_skew');
    // now + (timestamp − sent_at) = now − 10 s.
    t.ok(
      row && row.ms >= before - 10_000 && row.ms <= after - 10_000,
      `${row?.ms} within [${before - 10_000}, ${after - 10_000}]`,
    );
  });

  t.test('?_= milliseconds act as sent_at', async (t) => {
    const clientNow = Date.now() - 2 * HOUR; // a client clock two hours slow
    const { before, after } = await timed(async () => {
      const res = await post(
        `${w.url}/e/?_=${clientNow}&ver=1.2.3`,
        JSON.stringify([
          {
            event: 'nm_ts_query',
            properties: { token: KEY, distinct_id: 'nm-ts' },
            timestamp: new Date(clientNow - 5_000).toISOString(),
          },
        ]),
      );
      t.equal(res.status, 200);
    });
    const [row] = await stored('nm_ts_query');
    t.ok(
      row && row.ms >= before - 5_000 && row.ms <= after - 5_000,
      `${row?.ms} within [${before - 5_000}, ${after - 5_000}]`,
    );
  });

  t.test('$ignore_sent_at keeps the timestamp as sent', async (t) => {
    const ts = Date.now() - 3 * HOUR;
    await capture(
      {
        api_key: KEY,
        sent_at: new Date(Date.now() + HOUR).toISOString(),
        batch: [
          {
            event: 'nm_ts_ignore',
            distinct_id: 'nm-ts',
            timestamp: new Date(ts).toISOString(),
            properties: { $ignore_sent_at: true },
          },
        ],
      },
      '/batch/',
    );
    t.same(
      (await stored('nm_ts_ignore')).map((r) => r.ms),
      [ts],
    );
  });

  t.test('22 h in the future is kept; 24 h is clamped to now with a warning', async (t) => {
    const in22h = Date.now() + 22 * HOUR;
    const { before, after } = await timed(() =>
      capture({
        api_key: KEY,
        batch: [
          { event: 'nm_ts_future_ok', distinct_id: 'nm-ts', timestamp: new Date(in22h).toISOString() },
          {
            event: 'nm_ts_future',
            distinct_id: 'nm-ts',
            timestamp: new Date(Date.now() + 24 * HOUR).toISOString(),
          },
        ],
      }),
    );
    const [kept] = await stored('nm_ts_future_ok');
    t.equal(kept?.ms, in22h);
    t.same(await warningsFor(kept?.uuid ?? ''), [], 'no warning for the one kept');
    const [clamped] = await stored('nm_ts_future');
    t.ok(clamped && clamped.ms >= before && clamped.ms <= after, 'clamped to now');
    t.same(await warningsFor(clamped?.uuid ?? ''), [{ type: 'timestamp_clamped_to_now', source: 'capture' }]);
  });

  t.test('an invalid timestamp string is now, with a warning', async (t) => {
    const bad = ['not a date', '2024-13-45T99:00:00Z', '-000001-01-01T00:00:00Z', '0000-06-01T00:00:00Z'];
    const { before, after } = await timed(() =>
      capture({
        api_key: KEY,
        batch: bad.map((timestamp, i) => ({
          event: 'nm_ts_invalid',
          distinct_id: `nm-ts-inv-${i}`,
          timestamp,
        })),
      }),
    );
    const rows = await stored('nm_ts_invalid');
    t.equal(rows.length, bad.length, 'every event is stored');
    for (const row of rows) {
      t.ok(row.ms >= before && row.ms <= after, `${row.distinct_id}: now`);
      t.same(await warningsFor(row.uuid), [{ type: 'ignored_invalid_timestamp', source: 'capture' }]);
    }
  });

  t.test('a valid timestamp that skew correction carries out of range is now, with a warning', async (t) => {
    // Year 1 minus the gap between a sent_at far in the future and now.
    const { before, after } = await timed(() =>
      capture(
        {
          api_key: KEY,
          sent_at: '9000-01-01T00:00:00Z',
          batch: [{ event: 'nm_ts_skew_range', distinct_id: 'nm-ts', timestamp: '0100-01-01T00:00:00Z' }],
        },
        '/batch/',
      ),
    );
    const [row] = await stored('nm_ts_skew_range');
    t.ok(row && row.ms >= before && row.ms <= after, 'now');
    t.same(await warningsFor(row?.uuid ?? ''), [{ type: 'ignored_invalid_timestamp', source: 'capture' }]);
  });

  t.test('a valid old timestamp is kept', async (t) => {
    await capture({
      api_key: KEY,
      event: 'nm_ts_old',
      distinct_id: 'nm-ts',
      timestamp: '1999-12-31T23:59:59Z',
    });
    t.same(
      (await stored('nm_ts_old')).map((r) => new Date(r.ms).toISOString()),
      ['1999-12-31T23:59:59.000Z'],
    );
  });
  t.end();
});

t.test(
  'properties are stored as sent; $set at the top of an event joins them, and $ip is added',
  async (t) => {
    const properties = {
      str: 'ü',
      num: 1.25,
      bool: false,
      nil: null,
      list: [1, { a: 'b' }],
      nested: { x: { y: 1 } },
    };
    await capture({
      api_key: KEY,
      event: 'nm_props',
      distinct_id: 'nm-props',
      properties,
      $set: { plan: 'pro' },
    });
    const [row] = await stored('nm_props');
    t.same(row?.properties, { ...properties, $set: { plan: 'pro' }, $ip: '127.0.0.1' });
  },
);

t.test('dedup', (t) => {
  const uuids = ['0190a1b2-0000-7000-8000-000000000001', '0190a1b2-0000-7000-8000-000000000002'];
  const body = (event: string) =>
    JSON.stringify({
      api_key: KEY,
      batch: uuids.map((uuid, i) => ({ event, distinct_id: `nm-dedup-${i}`, uuid })),
    });

  t.test('the same request sent twice stores each event once', async (t) => {
    const first = await post(`${w.url}/batch/`, body('nm_dedup_retry'));
    const second = await post(`${w.url}/batch/`, body('nm_dedup_retry'));
    t.equal(first.status, 200);
    t.equal(second.status, 200, 'a retry is still answered 200');
    t.same((await stored('nm_dedup_retry')).map((r) => r.uuid).sort(), uuids);
  });

  t.test('the same uuid twice in one batch is stored once', async (t) => {
    const uuid = '0190a1b2-0000-7000-8000-000000000003';
    await capture({
      api_key: KEY,
      batch: [
        { event: 'nm_dedup_inner', distinct_id: 'nm-dedup', uuid, properties: { copy: 1 } },
        {
          event: 'nm_dedup_inner',
          distinct_id: 'nm-dedup',
          uuid: uuid.toUpperCase(),
          properties: { copy: 2 },
        },
      ],
    });
    const rows = await stored('nm_dedup_inner');
    t.same(
      rows.map((r) => r.uuid),
      [uuid],
    );
  });

  t.test('five concurrent identical requests store each event once', async (t) => {
    const uuidsC = Array.from(
      { length: 10 },
      (_, i) => `0190a1b2-0000-7000-8000-0000000001${String(i).padStart(2, '0')}`,
    );
    const text = JSON.stringify({
      api_key: KEY,
      batch: uuidsC.map((uuid, i) => ({
        event: 'nm_dedup_concurrent',
        distinct_id: `nm-dedup-c${i % 3}`,
        uuid,
      })),
    });
    const results = await Promise.all(Array.from({ length: 5 }, () => post(`${w.url}/batch/`, text)));
    t.same(
      results.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    t.same((await stored('nm_dedup_concurrent')).map((r) => r.uuid).sort(), uuidsC);
  });

  t.test('a uuid is unique per project, not per event name', async (t) => {
    const uuid = '0190a1b2-0000-7000-8000-000000000004';
    await capture({ api_key: KEY, event: 'nm_dedup_name_a', distinct_id: 'nm-dedup', uuid });
    await capture({ api_key: KEY, event: 'nm_dedup_name_b', distinct_id: 'nm-dedup-other', uuid });
    const rows = await w.rows(`SELECT event FROM events WHERE uuid = {uuid:UUID}`, { uuid });
    t.same(rows, [{ event: 'nm_dedup_name_a' }]);
  });
  t.end();
});
