/**
 * Property definitions end to end (SPEC §3 `P/property_definitions/`, issue 26): events captured over HTTP
 * into a real Weir, their properties and the person properties they set listed with the types PostHog would
 * give them; the first type staying when later values disagree; a type changed on purpose through PATCH; and
 * every definition, the changed type too, read back from the store after a restart.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { assertError } from '../helpers/capture-bodies.ts';
import { captureAll, createKey } from '../helpers/query-api.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  startTestWeir,
  tempDir,
  waitFor,
  type HttpResult,
  type TestWeir,
} from '../helpers/weir.ts';

interface Definition {
  name: string;
  type: 'event' | 'person';
  property_type: string | null;
  is_numerical: boolean;
  events?: string[];
  first_seen_at: string;
  last_seen_at: string;
  type_changed_at: string | null;
}
interface Listing {
  results: Definition[];
  count: number;
}

const dataDir = tempDir();
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
let w: TestWeir = await startTestWeir({ WEIR_DATA_DIR: dataDir });
t.teardown(() => w.close());

function api(
  method: string,
  path: string,
  key: string | null = PERSONAL_API_KEY,
  body?: unknown,
): Promise<HttpResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['authorization'] = `Bearer ${key}`;
  return request(`${w.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function list(query = '', prefix = 'projects'): Promise<Listing> {
  const res = await api('GET', `/api/${prefix}/1/property_definitions/${query}`);
  if (res.status !== 200) throw new Error(`list: ${res.status} ${res.text}`);
  return res.json as Listing;
}

/** name → property_type of one kind, as listed. */
async function types(type: 'event' | 'person'): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const d of (await list(`?type=${type}&limit=1000`)).results) out[d.name] = d.property_type;
  return out;
}

async function capture(batch: Record<string, unknown>[]): Promise<void> {
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, historical_migration: true, batch }),
  );
  if (res.status !== 200) throw new Error(`capture: ${res.status} ${res.text}`);
}

const recent = Math.floor(Date.now() / 1000) - 3600;

await captureAll(w, [
  {
    event: '$pageview',
    distinct_id: 'alice',
    timestamp: '2026-01-10T10:00:00Z',
    properties: {
      $current_url: 'https://example.com/',
      price: 9.99,
      count: '10',
      is_paid: 'true',
      signup_date: '2024-01-02',
      sent_at: recent,
      utm_source: 123,
      nothing: null,
      tags: ['a', 'b'],
      '$feature/new-checkout': true,
      $set: { email: 'alice@example.com', age: 31, vip: false },
      $set_once: { first_seen: '2026-01-10T10:00:00Z' },
    },
  },
  {
    event: 'purchase',
    distinct_id: 'alice',
    timestamp: '2026-01-10T10:01:00Z',
    properties: { price: 20, $groups: { company: 'acme' } },
  },
  {
    event: 'anonymous click',
    distinct_id: 'bob',
    timestamp: '2026-01-10T10:02:00Z',
    properties: { $process_person_profile: false, $set: { ghost: 1 }, clicked: true },
  },
  {
    event: '$groupidentify',
    distinct_id: 'alice',
    timestamp: '2026-01-10T10:03:00Z',
    properties: { $group_type: 'company', $group_key: 'acme', $group_set: { plan: 'pro' } },
  },
]);

t.test('event properties are listed with the types PostHog gives them', async (t) => {
  const event = await types('event');
  t.equal(event['price'], 'Numeric');
  t.equal(event['count'], 'String', 'a number sent as text is a String');
  t.equal(event['is_paid'], 'Boolean', '"true" is a Boolean');
  t.equal(event['signup_date'], 'DateTime');
  t.equal(event['sent_at'], 'DateTime', 'a recent Unix time under a key that names a time');
  t.equal(event['utm_source'], 'String', 'utm_ properties are Strings whatever their value');
  t.equal(event['$feature/new-checkout'], 'String', 'feature flag values are Strings');
  t.equal(event['nothing'], null, 'null gives no type');
  t.equal(event['tags'], null, 'nor does a list');
  t.equal(event['clicked'], 'Boolean', "an anonymous event's own properties are recorded");
  for (const skipped of ['$set', '$set_once', '$groups'])
    t.notOk(skipped in event, `${skipped} is not a property of the event`);
  t.notOk(
    '$group_key' in event,
    "$groupidentify's properties are not recorded (PostHog keeps them for groups)",
  );
  t.notOk('plan' in event);

  const price = (await list('?search=PRICE')).results;
  t.equal(price.length, 1, 'search is by name, in any case');
  t.same(price[0]!.events!.sort(), ['$pageview', 'purchase'], 'the events it was seen with');
  t.equal(price[0]!.is_numerical, true);
  t.equal(price[0]!.type_changed_at, null);
  t.match(price[0]!.first_seen_at, /^\d{4}-\d\d-\d\dT/);
});

t.test('person properties come from $set and $set_once of events that update a person', async (t) => {
  const person = await types('person');
  t.same(person, { email: 'String', age: 'Numeric', vip: 'Boolean', first_seen: 'DateTime' });
  t.notOk('ghost' in person, 'an anonymous event sets no person property');
  const one = await api('GET', '/api/environments/1/property_definitions/person/age/');
  t.equal(one.status, 200);
  t.equal((one.json as Definition).property_type, 'Numeric');
  t.notOk('events' in (one.json as Definition), 'a person property lists no events');
});

t.test('the first type stays; an untyped property takes the first type that comes', async (t) => {
  await capture([
    {
      event: 'purchase',
      distinct_id: 'carol',
      properties: { price: 'cheap', nothing: 5, $set: { age: 'old' } },
    },
  ]);
  await waitFor(
    async () => ((await types('event'))['nothing'] === 'Numeric' ? true : undefined),
    10_000,
    'nothing typed',
  );
  t.equal((await types('event'))['price'], 'Numeric', 'a later String does not change a Numeric');
  t.equal((await types('person'))['age'], 'Numeric');
});

t.test('listing pages, filters and refuses what it does not take', async (t) => {
  const all = await list('?limit=1000');
  t.equal(all.count, all.results.length);
  const names = all.results.map((d) => d.name);
  t.same(names, [...names].sort(), 'ordered by name');
  const page = await list('?limit=2&offset=1');
  t.equal(page.count, all.count, 'count is of every match, not of the page');
  t.same(
    page.results.map((d) => d.name),
    names.slice(1, 3),
  );
  t.equal((await list('?type=person')).count, 4);

  assertError(
    t,
    await api('GET', '/api/projects/1/property_definitions/?type=group'),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(
    t,
    await api('GET', '/api/projects/1/property_definitions/?limit=0'),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(
    t,
    await api('GET', '/api/projects/1/property_definitions/?offset=x'),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(
    t,
    await api('GET', '/api/projects/1/property_definitions/', null),
    401,
    'authentication_error',
    'not_authenticated',
  );
  assertError(
    t,
    await api('GET', '/api/projects/2/property_definitions/'),
    403,
    'permission_denied',
    'project_forbidden',
  );
  const writer = await createKey(w, { scopes: ['endpoint:read'], projects: [1] });
  assertError(
    t,
    await api('GET', '/api/projects/1/property_definitions/', writer.value),
    403,
    'permission_denied',
    'missing_scope',
  );
});

t.test('PATCH changes a type on purpose, with project:write', async (t) => {
  const path = '/api/projects/1/property_definitions/event/count/';
  const reader = await createKey(w, { scopes: ['query:read'], projects: [1] });
  assertError(
    t,
    await api('PATCH', path, reader.value, { property_type: 'Numeric' }),
    403,
    'permission_denied',
    'missing_scope',
  );
  assertError(
    t,
    await api('PATCH', path, null, { property_type: 'Numeric' }),
    401,
    'authentication_error',
    'not_authenticated',
  );
  assertError(
    t,
    await api('PATCH', path, PERSONAL_API_KEY, { property_type: 'Integer' }),
    400,
    'validation_error',
    'invalid_input',
  );
  assertError(t, await api('PATCH', path, PERSONAL_API_KEY, {}), 400, 'validation_error', 'required');
  assertError(
    t,
    await api('PATCH', path, PERSONAL_API_KEY, { property_type: 'Numeric', name: 'x' }),
    400,
    'validation_error',
    'unknown_field',
  );
  assertError(
    t,
    await api('PATCH', '/api/projects/1/property_definitions/event/never-seen/', PERSONAL_API_KEY, {
      property_type: 'Numeric',
    }),
    404,
    'not_found',
    'not_found',
  );
  assertError(
    t,
    await api('PATCH', '/api/projects/1/property_definitions/group/count/', PERSONAL_API_KEY, {
      property_type: 'Numeric',
    }),
    404,
    'not_found',
    'not_found',
  );

  const res = await api('PATCH', path, PERSONAL_API_KEY, { property_type: 'Numeric' });
  t.equal(res.status, 200, res.text);
  const changed = res.json as Definition;
  t.equal(changed.property_type, 'Numeric');
  t.match(changed.type_changed_at, /^\d{4}-/);
  t.equal((await types('event'))['count'], 'Numeric', 'listed with its new type at once');

  const flag = await api(
    'PATCH',
    `/api/projects/1/property_definitions/event/${encodeURIComponent('$feature/new-checkout')}/`,
    PERSONAL_API_KEY,
    { property_type: 'Boolean' },
  );
  t.equal(flag.status, 200, 'a name with a slash, encoded in the path');
  t.equal((flag.json as Definition).name, '$feature/new-checkout');
});

t.test('after a restart, every definition is read back from the store', async (t) => {
  const before = await list('?limit=1000');
  await w.close();
  w = await startTestWeir({ WEIR_DATA_DIR: dataDir });
  const after = await list('?limit=1000');
  t.same(after, before, 'the same definitions, types, events and times');
  t.equal((await types('event'))['count'], 'Numeric', 'the type changed through PATCH too');
  // A value seen after the restart does not retype what was stored before it.
  await capture([{ event: '$pageview', distinct_id: 'dave', properties: { is_paid: 12, brand_new: 1.5 } }]);
  await waitFor(
    async () => ((await types('event'))['brand_new'] === 'Numeric' ? true : undefined),
    10_000,
    'brand_new',
  );
  t.equal((await types('event'))['is_paid'], 'Boolean');
});
