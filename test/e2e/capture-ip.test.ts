/**
 * The client's IP (SPEC §2 "$ip"): the connection's, or what a trusted proxy forwarded for, stored as
 * `properties.$ip` unless the event has one, and none for a project that anonymises IPs — on v0 and
 * Capture V1, on the main thread, on capture threads, and from `weir capture` over JetStream.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { postV1, v1Body, v1Event, v1Headers } from '../helpers/capture-v1.ts';
import { rows } from '../helpers/query-api.ts';
import { captureOverJetStream } from '../helpers/roles.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  startTestWeir,
  waitFor,
  type TestWeir,
} from '../helpers/weir.ts';

/** Sends one v0 event with `headers` and returns its uuid. */
async function send(
  url: string,
  headers: Record<string, string> = {},
  properties: Record<string, unknown> = {},
): Promise<string> {
  const uuid = randomUUID();
  const body = { api_key: PROJECT_API_KEY, event: 'ip probe', distinct_id: 'ip-user', uuid, properties };
  const res = await post(`${url}/i/v0/e/`, JSON.stringify(body), {
    'content-type': 'application/json',
    ...headers,
  });
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
  return uuid;
}

type Read = (uuid: string) => Promise<Record<string, unknown>[]>;

/** The stored properties of one event, once it is stored. */
async function storedProperties(read: Read, uuid: string): Promise<Record<string, unknown>> {
  return waitFor(async () => (await read(uuid))[0], 30_000, `event ${uuid} to be stored`);
}

const SQL = `SELECT properties FROM events WHERE uuid = toUUID({uuid:String})`;

function readFrom(w: TestWeir): Read {
  return async (uuid) =>
    (await w.rows<{ properties: string }>(SQL, { uuid })).map(
      (r) => JSON.parse(r.properties) as Record<string, unknown>,
    );
}

async function anonymize(url: string, on: boolean): Promise<void> {
  const res = await request(`${url}/api/projects/1/`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ anonymize_ips: on }),
  });
  if (res.status !== 200) throw new Error(`PATCH answered ${res.status}: ${res.text}`);
  if ((res.json as { anonymize_ips: boolean }).anonymize_ips !== on) throw new Error(res.text);
}

/**
 * Probes until an event lands without `$ip`: a project's setting reaches capture (its threads, or a
 * `weir capture` reading the catalog) a moment after the API answered.
 */
async function untilAnonymised(url: string, read: Read): Promise<void> {
  await waitFor(
    async () => {
      const props = await storedProperties(read, await send(url));
      return '$ip' in props ? undefined : true;
    },
    30_000,
    'capture to anonymise IPs',
  );
}

t.test('weir start, capture on the main thread', async (t) => {
  const w = await startTestWeir();
  t.teardown(() => w.close());
  const read = readFrom(w);

  t.equal((await storedProperties(read, await send(w.url)))['$ip'], '127.0.0.1', 'the socket’s');
  t.equal(
    (await storedProperties(read, await send(w.url, { 'x-forwarded-for': '198.51.100.7' })))['$ip'],
    '198.51.100.7',
    'X-Forwarded-For from a loopback proxy, trusted by default',
  );
  t.equal(
    (
      await storedProperties(
        read,
        await send(w.url, {
          forwarded: 'for="[2001:db8::17]:4711";proto=https',
          'x-forwarded-for': '10.0.0.1',
        }),
      )
    )['$ip'],
    '2001:db8::17',
    'Forwarded before X-Forwarded-For',
  );
  t.equal(
    (
      await storedProperties(
        read,
        await send(w.url, { 'x-forwarded-for': '198.51.100.7' }, { $ip: '192.0.2.1' }),
      )
    )['$ip'],
    '192.0.2.1',
    'never over the event’s own',
  );

  const v1 = v1Event({ event: 'ip probe' });
  const res = await postV1(w.url, v1Body([v1]), { ...v1Headers(), 'x-forwarded-for': '203.0.113.20' });
  t.equal(res.status, 200, res.text);
  t.equal((await storedProperties(read, v1['uuid'] as string))['$ip'], '203.0.113.20', 'Capture V1 too');

  await anonymize(w.url, true);
  await untilAnonymised(w.url, read);
  const own = await storedProperties(read, await send(w.url, {}, { $ip: '192.0.2.1', kept: true }));
  t.same(own, { kept: true }, 'an anonymising project keeps no $ip, not even the event’s');
  await anonymize(w.url, false);
  await waitFor(
    async () => ((await storedProperties(read, await send(w.url)))['$ip'] === '127.0.0.1' ? true : undefined),
    30_000,
    'IPs to be kept again',
  );
});

t.test('weir start, capture threads, no proxy trusted', async (t) => {
  const w = await startTestWeir({ WEIR_CAPTURE_THREADS: '2', WEIR_TRUSTED_PROXIES: 'none' });
  t.teardown(() => w.close());
  const read = readFrom(w);
  t.equal(
    (await storedProperties(read, await send(w.url, { 'x-forwarded-for': '198.51.100.7' })))['$ip'],
    '127.0.0.1',
    'X-Forwarded-For is ignored from a peer that is not a trusted proxy',
  );
  await anonymize(w.url, true);
  await untilAnonymised(w.url, read);
  t.pass('the setting reached the threads');
});

t.test('weir capture over JetStream, the catalog read from the owner’s file', async (t) => {
  const { ingest, capture } = await captureOverJetStream(t);
  // The owner's store, read through its query API while it runs.
  const read: Read = async (uuid) =>
    (await rows(ingest, `SELECT properties FROM events WHERE uuid = '${uuid}'`)).map((r) =>
      typeof r[0] === 'string'
        ? (JSON.parse(r[0]) as Record<string, unknown>)
        : (r[0] as Record<string, unknown>),
    );

  t.equal(
    (await storedProperties(read, await send(capture.url, { 'x-forwarded-for': '198.51.100.9' })))['$ip'],
    '198.51.100.9',
    'the address travels in the event over JetStream',
  );
  await anonymize(ingest.url, true);
  await untilAnonymised(capture.url, read);
  t.pass('weir capture took the setting from the catalog');
});
