/**
 * The real posthog-node 5.70 in Capture V1 mode (POSTHOG_CAPTURE_MODE=v1, its only switch) against a real
 * Weir: its events stored through `/i/v1/analytics/events` with nothing on its `error` channel; an unknown
 * key reaching that channel as the 401 it is; and, while the store cannot take events, the `retry` results
 * it resends alone until they are taken, or reports once its attempts run out.
 */
import t from 'tap';
import { PostHog } from 'posthog-node';
import { metricValue } from '../helpers/capture-bodies.ts';
import { fillUntilRefused } from '../helpers/capture-v1.ts';
import { PROJECT_API_KEY, startTestWeir } from '../helpers/weir.ts';

// Read by each client's constructor.
process.env['POSTHOG_CAPTURE_MODE'] = 'v1';

const w = await startTestWeir({ WEIR_STORE_MAX_PENDING_MB: '1' });
t.teardown(() => w.close());

const V1_ROUTE = 'i/v1/analytics/events';

interface Row {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: string;
}

async function rowsOf(event: string): Promise<Row[]> {
  return w.rows<Row>(
    `SELECT toString(uuid) AS uuid, event, distinct_id, properties FROM events WHERE event = {event:String}`,
    { event },
  );
}

/** What the client's error channel was told, as the fields of CaptureV1Error. */
interface V1ErrorSeen {
  name: string;
  message: string;
  requestId?: string;
  drops?: { uuid: string; details?: string }[];
  retryExhausted?: string[];
}

function errorsOf(client: PostHog): V1ErrorSeen[] {
  const seen: V1ErrorSeen[] = [];
  client.on('error', (err: unknown) => seen.push(err as V1ErrorSeen));
  return seen;
}

/** One attempt the client made on the V1 route, as it went out and came back. */
interface Attempt {
  attempt: string;
  requestId: string;
  status: number;
  retryAfter: string | null;
  results: Record<string, { result: string; details?: string }> | undefined;
}

/** posthog-node's own fetch, watched: every V1 attempt is recorded, and `onAttempt` is told of it. */
function watchedFetch(attempts: Attempt[], onAttempt: (a: Attempt) => Promise<void> = async () => {}) {
  return async (url: string, options: { headers: Record<string, string> } & RequestInit) => {
    const res = await fetch(url, options);
    if (!url.includes('/i/v1/')) return res;
    const text = await res.clone().text();
    let results: Attempt['results'];
    try {
      results = (JSON.parse(text) as { results?: Attempt['results'] }).results;
    } catch {
      results = undefined;
    }
    const a: Attempt = {
      attempt: options.headers['PostHog-Attempt'] ?? '',
      requestId: options.headers['PostHog-Request-Id'] ?? '',
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      results,
    };
    attempts.push(a);
    await onAttempt(a);
    return res;
  };
}

t.test('events from the SDK in V1 mode are stored, with $lib from its header', async (t) => {
  const v1Before = await metricValue(w.url, 'weir_capture_requests_total', {
    route: V1_ROUTE,
    status: '200',
  });
  const attempts: Attempt[] = [];
  const client = new PostHog(PROJECT_API_KEY, {
    host: w.url,
    flushAt: 10,
    flushInterval: 0,
    fetch: watchedFetch(attempts),
  });
  const errors = errorsOf(client);
  const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a6c';
  client.capture({
    distinctId: 'v1-sdk-user',
    event: 'v1 sdk',
    uuid,
    properties: { plan: 'pro', $session_id: 'sess-9', $window_id: 'win-9', $ignore_sent_at: 'true' },
  });
  client.capture({
    distinctId: 'v1-sdk-anon',
    event: 'v1 sdk',
    properties: { $process_person_profile: false },
  });
  client.identify({ distinctId: 'v1-sdk-user', properties: { email: 'v1@example.com' } });
  client.alias({ distinctId: 'v1-sdk-user', alias: 'v1-sdk-alias' });
  client.groupIdentify({ groupType: 'company', groupKey: 'v1-co', properties: { name: 'V1 Co' } });
  // `$ai_*` events stay on the legacy transport in V1 mode: `/batch/`, which Weir serves too.
  client.capture({ distinctId: 'v1-sdk-user', event: '$ai_generation', properties: { $ai_model: 'm' } });
  await client.shutdown();

  t.same(errors, [], 'nothing on the error channel');
  t.ok(
    attempts.length >= 1 && attempts.every((a) => a.status === 200 && a.attempt === '1'),
    'one attempt each',
  );
  t.ok(
    (await metricValue(w.url, 'weir_capture_requests_total', { route: V1_ROUTE, status: '200' })) > v1Before,
    'sent to the V1 route',
  );
  const rows = await rowsOf('v1 sdk');
  t.equal(rows.length, 2);
  const mine = rows.find((r) => r.uuid === uuid);
  const props = JSON.parse(mine?.properties ?? '{}') as Record<string, unknown>;
  t.match(props, {
    plan: 'pro',
    $lib: 'posthog-node',
    $lib_version: '5.70.0',
    $session_id: 'sess-9',
    $window_id: 'win-9',
    $ignore_sent_at: true,
  });
  const anon = rows.find((r) => r.distinct_id === 'v1-sdk-anon');
  t.equal(
    (JSON.parse(anon?.properties ?? '{}') as Record<string, unknown>)['$process_person_profile'],
    false,
    'an option the SDK lifted out of the properties comes back as its property',
  );
  const answered = attempts.flatMap((a) => Object.entries(a.results ?? {}));
  t.ok(answered.length >= 5, 'every event answered');
  t.ok(
    answered.every(([, r]) => r.result === 'ok'),
    'every one ok',
  );
  for (const event of ['$identify', '$create_alias', '$groupidentify', '$ai_generation'])
    t.equal((await rowsOf(event)).length, 1, `${event} stored`);
  const identify = JSON.parse((await rowsOf('$identify'))[0]?.properties ?? '{}') as Record<string, unknown>;
  t.same(identify['$set'], { email: 'v1@example.com' }, '$set inside the properties');
});

t.test('historicalMigration in V1 mode goes to the historical lane', async (t) => {
  const before = await metricValue(w.url, 'weir_capture_events_total', { lane: 'historical' });
  const client = new PostHog(PROJECT_API_KEY, {
    host: w.url,
    historicalMigration: true,
    flushAt: 50,
    flushInterval: 0,
  });
  const errors = errorsOf(client);
  for (let i = 0; i < 30; i++)
    client.capture({
      distinctId: `v1-backfill-${i % 3}`,
      event: 'v1 backfill',
      timestamp: new Date(Date.UTC(2021, 0, 1) + i * 60_000),
    });
  await client.shutdown();
  t.same(errors, []);
  t.equal((await rowsOf('v1 backfill')).length, 30);
  t.equal(await metricValue(w.url, 'weir_capture_events_total', { lane: 'historical' }), before + 30);
});

t.test('an unknown key is a 401 on the error channel, not retried, nothing stored', async (t) => {
  const before = await metricValue(w.url, 'weir_capture_requests_total', { route: V1_ROUTE, status: '401' });
  const client = new PostHog('phc_no_such_project', { host: w.url, flushAt: 5, flushInterval: 0 });
  const errors = errorsOf(client);
  client.capture({ distinctId: 'v1-nobody', event: 'v1 unknown key' });
  client.capture({ distinctId: 'v1-nobody', event: 'v1 unknown key' });
  await client.shutdown();
  t.equal(errors.length, 1, 'one error for the batch');
  t.equal(errors[0]?.name, 'CaptureV1Error');
  t.match(errors[0]?.message, /HTTP 401: .*invalid_api_token/, 'the status and V1 body reach the message');
  t.equal(errors[0]?.retryExhausted?.length, 2, 'both events undelivered');
  t.equal(
    await metricValue(w.url, 'weir_capture_requests_total', { route: V1_ROUTE, status: '401' }),
    before + 1,
    'a 401 is terminal: sent once',
  );
  t.equal((await rowsOf('v1 unknown key')).length, 0);
});

t.test('while the store refuses: retry results, resent alone, reported when attempts run out', async (t) => {
  await w.weir.store.command('RENAME TABLE events TO events_away');
  let renamedBack = false;
  const renameBack = async (): Promise<void> => {
    if (renamedBack) return;
    renamedBack = true;
    await w.weir.store.command('RENAME TABLE events_away TO events');
  };
  t.teardown(renameBack);
  const full = await fillUntilRefused(w.url, 'v1 filler');
  t.ok(full, 'the store stopped taking events');

  // Two attempts, both answered retry: the client gives up and says which events it could not deliver.
  const lostAttempts: Attempt[] = [];
  const giving = new PostHog(PROJECT_API_KEY, {
    host: w.url,
    flushAt: 10,
    flushInterval: 0,
    fetchRetryCount: 1,
    fetchRetryDelay: 10,
    fetch: watchedFetch(lostAttempts),
  });
  const lostErrors = errorsOf(giving);
  const lost = ['0190a1b2-c3d4-7e5f-8a9b-00000000aa01', '0190a1b2-c3d4-7e5f-8a9b-00000000aa02'];
  for (const uuid of lost) giving.capture({ distinctId: 'v1-lost', event: 'v1 lost', uuid });
  await giving.shutdown();
  t.same(
    lostAttempts.map((a) => [a.attempt, a.status, a.retryAfter]),
    [
      ['1', 200, '1'],
      ['2', 200, '1'],
    ],
    'two attempts, each a 200 with Retry-After',
  );
  t.same(lostAttempts[0]?.results, {
    [lost[0]!]: { result: 'retry', details: 'not_persisted' },
    [lost[1]!]: { result: 'retry', details: 'not_persisted' },
  });
  t.equal(lostAttempts[0]?.requestId, lostAttempts[1]?.requestId, 'one request id across attempts');
  t.equal(lostErrors.length, 1, 'reported once');
  t.same(lostErrors[0]?.retryExhausted, lost, 'as undelivered, by uuid');

  // The store recovers after the first retry: the client's next attempts carry the pending events alone,
  // until they are taken; nothing on the error channel.
  const attempts: Attempt[] = [];
  const client = new PostHog(PROJECT_API_KEY, {
    host: w.url,
    flushAt: 10,
    flushInterval: 0,
    fetchRetryCount: 8,
    fetchRetryDelay: 10,
    fetch: watchedFetch(attempts, async (a) => {
      if (Object.values(a.results ?? {}).some((r) => r.result === 'retry')) await renameBack();
    }),
  });
  const errors = errorsOf(client);
  const uuids = ['0190a1b2-c3d4-7e5f-8a9b-00000000bb01', '0190a1b2-c3d4-7e5f-8a9b-00000000bb02'];
  for (const uuid of uuids) client.capture({ distinctId: 'v1-retried', event: 'v1 retried', uuid });
  client.capture({ distinctId: '   ', event: 'v1 retried' });
  await client.shutdown();

  t.ok(attempts.length >= 2, `resent after the retry (${attempts.length} attempts)`);
  const first = attempts[0]!;
  t.equal(first.retryAfter, '1');
  t.same(
    Object.values(first.results ?? {})
      .map((r) => r.result)
      .sort(),
    ['drop', 'retry', 'retry'],
    'the two events to retry, and the blank distinct id dropped',
  );
  t.ok(
    attempts.slice(1).every(
      (a) =>
        Object.keys(a.results ?? {})
          .sort()
          .join() === uuids.join(),
    ),
    'later attempts carry only the events answered retry',
  );
  t.same(
    attempts.map((a) => a.attempt),
    attempts.map((_, i) => String(i + 1)),
    'PostHog-Attempt counts up',
  );
  const last = attempts[attempts.length - 1]!;
  t.same(
    Object.values(last.results ?? {}).map((r) => r.result),
    ['ok', 'ok'],
    'then taken',
  );
  t.equal(errors.length, 1, 'the drop alone is reported');
  t.same(errors[0]?.retryExhausted, []);
  t.match(errors[0]?.drops, [{ details: 'missing_distinct_id' }]);
  const rows = await rowsOf('v1 retried');
  t.same(rows.map((r) => r.uuid).sort(), uuids, 'each stored exactly once');
  t.equal((await rowsOf('v1 lost')).length, 0, 'the events the first client gave up on are not stored');
});
