/**
 * PostHog's own capture test dump (test/fixtures/posthog-capture/requests_dump.jsonl: real posthog-js
 * and posthog-node requests, and the events PostHog's capture made of each) replayed against a real Weir over
 * HTTP exactly as recorded — path and query, method, Content-Type, Content-Encoding, the raw body bytes and
 * `X-Forwarded-For` — as PostHog's `django_compat.rs` replays it against its own capture. Each request must be
 * answered as PostHog answered it, and each event PostHog produced must be stored, read back by uuid through
 * the query API and compared field for field: name, distinct id, properties (with the top-level `$set` /
 * `$set_once` folded in and the envelope's `ip` as `$ip`, as PostHog's ingestion does), the session and window
 * columns, `elements_chain`, and the time after clock-skew correction.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { hashKey, maskKey } from '../../src/catalog/keys.ts';
import { metricValue } from '../helpers/capture-bodies.ts';
import { posthogElementsChain } from '../helpers/posthog-elements-chain.ts';
import { rows } from '../helpers/query-api.ts';
import { PERSONAL_API_KEY, runWeir, startTestWeir, tempDir, waitFor } from '../helpers/weir.ts';

const DUMP = join(import.meta.dirname, '../fixtures/posthog-capture/requests_dump.jsonl');

interface DumpOutput {
  uuid: string;
  distinct_id: string;
  ip: string;
  now: string;
  sent_at: string;
  token: string;
  /** The event PostHog's capture handed on, as JSON text. */
  data: string;
}

interface DumpRequest {
  path: string;
  method: string;
  content_encoding: string;
  content_type: string;
  ip: string;
  now: string;
  body: string;
  output: DumpOutput[];
  historical_migration?: boolean;
}

interface Case {
  /** The heading (`### …`) above the request: which SDK sent it. */
  readonly sdk: string;
  /** 1-based line of the dump. */
  readonly line: number;
  readonly request: DumpRequest;
}

const cases: Case[] = [];
let sdk = '(no heading)';
for (const [i, text] of readFileSync(DUMP, 'utf8').split('\n').entries()) {
  if (text.startsWith('###')) sdk = text.slice(3).trim();
  else if (text.trim() !== '') cases.push({ sdk, line: i + 1, request: JSON.parse(text) as DumpRequest });
}
const expectedEvents = cases.flatMap((c) => c.request.output.map((o) => ({ c, o })));

// The dump holds three projects' tokens, and the management API makes projects with keys of its own: so the
// data directory starts with a catalog holding the three, imported as an operator moves one in
// (`weir catalog import`), and every body is sent byte for byte with the token it was recorded with.
const tokens = [...new Set(expectedEvents.map((e) => e.o.token))];
const projectOf = new Map(tokens.map((token, i) => [token, i + 1]));
const dataDir = tempDir('weir-dump-replay-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const createdAt = new Date().toISOString();
const catalogFile = join(dataDir, 'import.json');
writeFileSync(
  catalogFile,
  JSON.stringify({
    version: 1,
    nextProjectId: tokens.length + 1,
    projects: tokens.map((apiToken, i) => ({ id: i + 1, name: `dump ${i + 1}`, apiToken, createdAt })),
    personalApiKeys: [
      {
        id: randomUUID(),
        label: 'dump replay',
        valueHash: hashKey(PERSONAL_API_KEY),
        mask: maskKey(PERSONAL_API_KEY),
        scopes: ['*'],
        projects: '*',
        createdAt,
        createdBy: null,
        revokedAt: null,
      },
    ],
    endpoints: [],
  }),
);
const imported = await runWeir(['catalog', 'import', '--data-dir', dataDir, catalogFile]);
if (imported.code !== 0) throw new Error(`weir catalog import failed: ${imported.stderr}`);

const w = await startTestWeir({ WEIR_DATA_DIR: dataDir });
t.teardown(() => w.close());

t.test('the dump is what this file expects: every request a POST, every event with a token', (t) => {
  // Counted from the file, so that a dump that read as nothing cannot pass.
  t.equal(cases.length, 16, 'requests');
  t.equal(expectedEvents.length, 88, 'events PostHog produced');
  t.equal(
    new Set(expectedEvents.map((e) => e.o.uuid)).size,
    82,
    'distinct uuids (two requests are sent twice)',
  );
  t.equal(tokens.length, 3, 'three projects');
  t.ok(
    cases.every((c) => c.request.method === 'POST'),
    'POST only',
  );
  t.ok(
    cases.every((c) => c.request.output.length > 0),
    'every request produced events (PostHog answered each 200)',
  );
  t.end();
});

/** Capture's accepted-event counters: historical, and the live lanes (live and overflow) together. */
async function laneCounts(): Promise<{ historical: number; live: number }> {
  const [historical, live, overflow] = await Promise.all(
    ['historical', 'live', 'overflow'].map((lane) =>
      metricValue(w.url, 'weir_capture_events_total', { lane }),
    ),
  );
  return { historical: historical!, live: live! + overflow! };
}

/**
 * A request from 127.0.0.2, a loopback proxy Weir trusts by default: every `ip` of the dump is 127.0.0.1, so
 * only a peer other than that shows `$ip` was taken from `X-Forwarded-For`, as PostHog's test sets it.
 */
function fromProxy(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, localAddress: '127.0.0.2' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

let replayed = 0;
t.test('every request is answered as PostHog answered it', async (t) => {
  for (const c of cases) {
    const r = c.request;
    await t.test(`${c.sdk} · line ${c.line}: ${r.method} ${r.path}`, async (t) => {
      const headers: Record<string, string> = {};
      if (r.content_type !== '') headers['content-type'] = r.content_type;
      if (r.content_encoding !== '') headers['content-encoding'] = r.content_encoding;
      if (r.ip !== '') headers['x-forwarded-for'] = r.ip;
      const before = await laneCounts();
      const res = await fromProxy(`${w.url}${r.path}`, r.method, headers, Buffer.from(r.body, 'base64'));
      const text = res.text;
      t.equal(res.status, 200, `200, as PostHog's capture answered (${text})`);
      t.same(JSON.parse(text), { status: 'Ok' }, 'the body PostHog answers');
      const after = await laneCounts();
      const n = new Set(r.output.map((o) => o.uuid)).size;
      // PostHog's test checks each event's data type: AnalyticsHistorical for a historical batch.
      t.same(
        { historical: after.historical - before.historical, live: after.live - before.live },
        r.historical_migration === true ? { historical: n, live: 0 } : { historical: 0, live: n },
        r.historical_migration === true ? 'the historical lane' : 'a live lane',
      );
      replayed++;
    });
  }
});

interface Stored {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  session_id: string;
  window_id: string;
  elements_chain: string;
  timestamp_us: number;
  /** `created_at`: when capture received the request (Weir's `now`). */
  received_us: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function storedEvent(project: number, uuid: string): Promise<Stored[]> {
  if (!UUID.test(uuid)) throw new Error(`not a uuid: ${uuid}`);
  const found = await rows(
    w,
    `SELECT toString(uuid), event, distinct_id, properties, $session_id, $window_id, elements_chain,
            toUnixTimestamp64Micro(timestamp), toUnixTimestamp64Micro(created_at)
     FROM events WHERE uuid = toUUID('${uuid}')`,
    { project },
  );
  return found.map((r) => ({
    uuid: r[0] as string,
    event: r[1] as string,
    distinct_id: r[2] as string,
    properties: JSON.parse(r[3] as string) as Record<string, unknown>,
    session_id: r[4] as string,
    window_id: r[5] as string,
    elements_chain: r[6] as string,
    timestamp_us: Number(r[7]),
    received_us: Number(r[8]),
  }));
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The properties PostHog's ingestion gives the event (plugin-server `sanitizeEvent`): the top-level `$set` /
 * `$set_once` merged over those in properties, and the envelope's `ip` as `$ip` unless the event has one (for
 * a project that keeps IPs, as the imported ones do).
 */
function expectedProperties(data: Json, ip: string): Json {
  const props: Json = isObject(data['properties']) ? { ...data['properties'] } : {};
  for (const key of ['$set', '$set_once']) {
    if (data[key]) props[key] = { ...(isObject(props[key]) ? props[key] : {}), ...(data[key] as Json) };
  }
  if (!props['$ip'] && ip) props['$ip'] = ip;
  return props;
}

/**
 * Where PostHog's ingestion puts the event in time, relative to `now` (its receive time), in milliseconds:
 * `timestamp − sent_at` (clock-skew correction) when both are known and `$ignore_sent_at` is not set, else
 * `now − offset`; or an absolute time, the timestamp, when there is no `sent_at` to correct it by; else now.
 */
function expectedTime(data: Json, sentAt: string): { relativeMs: number } | { absoluteMs: number } {
  const props = isObject(data['properties']) ? data['properties'] : {};
  const timestamp = typeof data['timestamp'] === 'string' ? Date.parse(data['timestamp']) : NaN;
  const sent = sentAt !== '' && props['$ignore_sent_at'] !== true ? Date.parse(sentAt) : NaN;
  if (!Number.isNaN(timestamp)) {
    return Number.isNaN(sent) ? { absoluteMs: timestamp } : { relativeMs: timestamp - sent };
  }
  if (typeof data['offset'] === 'number') return { relativeMs: -data['offset'] };
  return { relativeMs: 0 };
}

/** A property-by-property account of two property sets, for a failure to name what differs. */
function propertyDiff(stored: Json, expected: Json): string {
  const added = Object.keys(stored).filter((k) => !(k in expected));
  const dropped = Object.keys(expected).filter((k) => !(k in stored));
  const changed = Object.keys(expected).filter(
    (k) => k in stored && JSON.stringify(stored[k]) !== JSON.stringify(expected[k]),
  );
  return `Weir adds [${added.join(', ')}], drops [${dropped.join(', ')}], changes [${changed.join(', ')}]`;
}

let compared = 0;
t.test('every event PostHog produced is stored as PostHog ingests it', async (t) => {
  for (const [token, project] of projectOf) {
    const want = new Set(expectedEvents.filter((e) => e.o.token === token).map((e) => e.o.uuid)).size;
    const count = async () =>
      ((await rows(w, 'SELECT count() FROM events', { project })) as [[number]])[0][0];
    await waitFor(
      async () => ((await count()) >= want ? true : undefined),
      30_000,
      `project ${project}'s ${want} events`,
    );
    t.equal(await count(), want, `project ${project} holds the dump's ${want} events and nothing else`);
  }

  for (const { c, o } of expectedEvents) {
    const index = c.request.output.indexOf(o);
    const data = JSON.parse(o.data) as Json;
    await t.test(
      `${c.sdk} · line ${c.line} · event ${index} ${o.uuid} (${String(data['event'])})`,
      async (t) => {
        const found = await storedEvent(projectOf.get(o.token)!, o.uuid);
        t.equal(found.length, 1, 'stored once');
        const s = found[0];
        if (!s) return;
        t.equal(s.uuid, o.uuid, 'uuid');
        t.equal(s.event, data['event'], 'event');
        t.equal(s.distinct_id, o.distinct_id, 'distinct_id');

        const want = expectedProperties(data, o.ip);
        const { $ip: storedIp, ...storedRest } = s.properties;
        const { $ip: wantIp, ...wantRest } = want;
        t.same(storedRest, wantRest, `properties other than $ip: ${propertyDiff(storedRest, wantRest)}`);
        const own = isObject(data['properties']) && data['properties']['$ip'];
        t.equal(
          storedIp,
          wantIp,
          own ? "$ip: the event's own" : '$ip: the envelope ip, as the event has none',
        );

        const props = isObject(data['properties']) ? data['properties'] : {};
        const column = (key: string) => (typeof props[key] === 'string' ? props[key] : '');
        t.equal(s.session_id, column('$session_id'), '$session_id');
        t.equal(s.window_id, column('$window_id'), '$window_id');
        t.equal(s.elements_chain, posthogElementsChain(props['$elements']), 'elements_chain');

        const time = expectedTime(data, o.sent_at);
        if ('relativeMs' in time) {
          t.equal(
            s.timestamp_us - s.received_us,
            time.relativeMs * 1000,
            `timestamp − received_at: ${time.relativeMs} ms, as PostHog's timestamp − now`,
          );
        } else {
          t.equal(s.timestamp_us, time.absoluteMs * 1000, "timestamp: the client's, as there is no sent_at");
        }
        compared++;
      },
    );
  }
});

t.test('nothing was skipped', (t) => {
  t.equal(replayed, cases.length, 'every request of the dump was replayed');
  t.equal(compared, expectedEvents.length, 'every event of the dump was compared');
  t.end();
});
