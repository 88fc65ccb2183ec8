/**
 * The fixed dataset the HogQL compatibility corpus (test/fixtures/dialect/compat) is answered against:
 * 24 events of four people over three days, small enough that every `-- expect:` in the corpus is worked
 * out by hand from the table below. It is captured through the real HTTP capture of a real Weir, in
 * timestamp order on the historical lane (processed in order), so persons, merges and groups come out of
 * ingest exactly as they would for a customer.
 *
 *  #  time (UTC)            event            distinct_id  session  page                browser        notes
 *  1  2026-01-05 09:00:00   $pageview        anon-a       S1       /?utm_source=…&ref=abc Chrome     1440x900, flags [new-checkout, dark-mode]
 *  2  2026-01-05 09:01:00   $autocapture     anon-a       S1       /?utm…             Chrome         CHAIN_A (button#signup-btn)
 *  3  2026-01-05 09:02:00   $identify        alice        S1       /?utm…             Chrome         anon-a → alice; $set email, name, plan pro, trial_started 2026-01-01
 *  4  2026-01-05 09:03:00   $groupidentify   alice        -        -                  -              company acme {name Acme Inc, industry retail, employees 50}
 *  5  2026-01-05 09:03:01   $groupidentify   alice        -        -                  -              company globex {name Globex, industry energy, employees 1200}
 *  6  2026-01-05 09:05:00   $pageview        alice        S1       /pricing           Chrome         1440x900, flags [new-checkout, dark-mode]
 *  7  2026-01-05 09:10:00   purchase         alice        S1       /checkout          Chrome         price 49.99, quantity 2, paid true, USD, delivery 2026-01-09, company acme
 *  8  2026-01-05 09:30:00   $pageleave       alice        S1       /pricing           Chrome
 *  9  2026-01-05 14:00:00   $pageview        anon-b       S2       /docs              Firefox        1920x1080, flags [dark-mode]
 * 10  2026-01-05 14:00:30   $identify        bob          S2       /docs              Firefox        anon-b → bob; $set email, name, plan free, trial_started 2026-01-04
 * 11  2026-01-05 14:03:00   $autocapture     bob          S2       /docs              Firefox        CHAIN_B (a.nav-link to /docs/install)
 * 12  2026-01-05 14:05:00   $pageview        bob          S2       /docs/install      Firefox        1920x1080, flags [dark-mode]
 * 13  2026-01-05 14:20:00   rated            bob          S2       /docs/install      Firefox        score 9
 * 14  2026-01-06 08:00:00   $pageview        anon-c       S4       /                  Mobile Safari  390x844, no flags
 * 15  2026-01-06 08:00:10   $identify        carol        S4       /                  Mobile Safari  anon-c → carol; $set email, name, plan pro (no trial_started)
 * 16  2026-01-06 08:00:40   $pageleave       carol        S4       /                  Mobile Safari
 * 17  2026-01-06 09:00:00   form submitted   carol        -        -                  -              response {first_name Carol, last_name Danvers, company {name Initech}}
 * 18  2026-01-06 20:00:00   $pageview        bob          S3       /pricing           Firefox        1920x1080, flags [dark-mode, new-checkout]
 * 19  2026-01-06 20:15:00   purchase         bob          S3       /checkout          Firefox        price 10, quantity 1, paid false, EUR, delivery 2026-01-08, company globex, $set plan pro
 * 20  2026-01-07 03:00:00   api call         dave         -        -                  -              endpoint /v1/query, duration_ms 120
 * 21  2026-01-07 03:00:05   api call         dave         -        -                  -              endpoint /v1/query, duration_ms 80
 * 22  2026-01-07 03:10:00   user signed up   dave         -        -                  -              is_organization_first_user true, realm cloud, team_member_count_all 3, $set_once signed_up_at, company globex
 * 23  2026-01-07 12:00:00   rated            carol        S5       /feedback          Mobile Safari  score 6
 * 24  2026-01-07 12:01:00   rated            carol        S5       /feedback          Mobile Safari  score 10
 *
 * Plus one batch item without a distinct id, which capture drops with an ingestion warning
 * (`event_dropped_missing_distinct_id`). 2026-01-05 is a Monday. Persons after ingest: alice (distinct ids
 * anon-a, alice; created 2026-01-05 09:00:00), bob (anon-b, bob; 14:00:00; plan pro after event 19), carol
 * (anon-c, carol; 2026-01-06 08:00:00), dave (dave; 2026-01-07 03:00:00; only signed_up_at; not identified).
 * `person.properties` on an event is the person as that event left it (person-on-events).
 */
import { rows } from './query-api.ts';
import { PROJECT_API_KEY, post, waitFor, type TestWeir } from './weir.ts';

/** Session ids (UUIDv7 whose time is the session's first event) and window ids, S1…S5 / W1…W5. */
export const SESSION = {
  S1: '019b8d62-7a80-7000-8000-000000000001',
  S2: '019b8e75-2300-7000-8000-000000000002',
  S3: '019b94e5-1600-7000-8000-000000000003',
  S4: '019b9251-e800-7000-8000-000000000004',
  S5: '019b9853-fe00-7000-8000-000000000005',
} as const;
export const WINDOW = {
  W1: '019b8d62-7a80-7000-9000-000000000001',
  W2: '019b8e75-2300-7000-9000-000000000002',
  W3: '019b94e5-1600-7000-9000-000000000003',
  W4: '019b9251-e800-7000-9000-000000000004',
  W5: '019b9853-fe00-7000-9000-000000000005',
} as const;

/** Autocapture element chains in posthog-js's `$elements_chain` form. */
export const CHAIN_A =
  'button.btn.collapsed:attr__class="btn collapsed"attr__id="signup-btn"nth-child="1"nth-of-type="1"text="Sign up";' +
  'div.hero:attr__class="hero"nth-child="2"nth-of-type="1";body:nth-child="2"nth-of-type="1"';
export const CHAIN_B =
  'a.nav-link.not-collapsed:attr__class="nav-link not-collapsed"attr__data-attr="install-link"attr__href="/docs/install"' +
  'href="/docs/install"nth-child="3"nth-of-type="1"text="Install";nav.sidebar:attr__class="sidebar"nth-child="1"nth-of-type="1";' +
  'body:nth-child="2"nth-of-type="1"';

const SITE = 'https://shop.example.com';
const LANDING = `${SITE}/?utm_source=newsletter&ref=abc`;

const WEB = { $lib: 'web', $lib_version: '1.200.0' };
const SERVER = { $lib: 'posthog-node', $lib_version: '5.0.0' };
const ALICE = {
  ...WEB,
  $browser: 'Chrome',
  $os: 'Mac OS X',
  $device_type: 'Desktop',
  $session_id: SESSION.S1,
  $window_id: WINDOW.W1,
};
const BOB = { ...WEB, $browser: 'Firefox', $os: 'Windows', $device_type: 'Desktop' };
const BOB_S2 = { ...BOB, $session_id: SESSION.S2, $window_id: WINDOW.W2 };
const BOB_S3 = { ...BOB, $session_id: SESSION.S3, $window_id: WINDOW.W3 };
const CAROL = { ...WEB, $browser: 'Mobile Safari', $os: 'iOS', $device_type: 'Mobile' };
const CAROL_S4 = { ...CAROL, $session_id: SESSION.S4, $window_id: WINDOW.W4 };
const CAROL_S5 = { ...CAROL, $session_id: SESSION.S5, $window_id: WINDOW.W5 };

function page(path: string): Record<string, string> {
  return {
    $current_url: path === LANDING ? LANDING : `${SITE}${path}`,
    $pathname: path === LANDING ? '/' : path,
  };
}

type Item = { event: string; distinct_id: string; timestamp: string; properties: Record<string, unknown> };
const item = (
  n: number,
  event: string,
  distinctId: string,
  at: string,
  properties: Record<string, unknown>,
): Item & {
  uuid: string;
} => ({
  event,
  distinct_id: distinctId,
  timestamp: `${at.replace(' ', 'T')}Z`,
  uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  properties,
});

/** The 24 events, in the order they are captured (their timestamp order). */
export const COMPAT_EVENTS = [
  item(1, '$pageview', 'anon-a', '2026-01-05 09:00:00', {
    ...ALICE,
    ...page(LANDING),
    $screen_width: 1440,
    $screen_height: 900,
    $active_feature_flags: ['new-checkout', 'dark-mode'],
  }),
  item(2, '$autocapture', 'anon-a', '2026-01-05 09:01:00', {
    ...ALICE,
    ...page(LANDING),
    $event_type: 'click',
    $elements_chain: CHAIN_A,
  }),
  item(3, '$identify', 'alice', '2026-01-05 09:02:00', {
    ...ALICE,
    ...page(LANDING),
    $anon_distinct_id: 'anon-a',
    $set: { email: 'alice@example.com', name: 'Alice', plan: 'pro', trial_started: '2026-01-01T00:00:00Z' },
  }),
  item(4, '$groupidentify', 'alice', '2026-01-05 09:03:00', {
    ...SERVER,
    $group_type: 'company',
    $group_key: 'acme',
    $group_set: { name: 'Acme Inc', industry: 'retail', employees: 50 },
  }),
  item(5, '$groupidentify', 'alice', '2026-01-05 09:03:01', {
    ...SERVER,
    $group_type: 'company',
    $group_key: 'globex',
    $group_set: { name: 'Globex', industry: 'energy', employees: 1200 },
  }),
  item(6, '$pageview', 'alice', '2026-01-05 09:05:00', {
    ...ALICE,
    ...page('/pricing'),
    $screen_width: 1440,
    $screen_height: 900,
    $active_feature_flags: ['new-checkout', 'dark-mode'],
  }),
  item(7, 'purchase', 'alice', '2026-01-05 09:10:00', {
    ...ALICE,
    ...page('/checkout'),
    price: 49.99,
    quantity: 2,
    paid: true,
    currency: 'USD',
    delivery_date: '2026-01-09',
    $groups: { company: 'acme' },
  }),
  item(8, '$pageleave', 'alice', '2026-01-05 09:30:00', { ...ALICE, ...page('/pricing') }),
  item(9, '$pageview', 'anon-b', '2026-01-05 14:00:00', {
    ...BOB_S2,
    ...page('/docs'),
    $screen_width: 1920,
    $screen_height: 1080,
    $active_feature_flags: ['dark-mode'],
  }),
  item(10, '$identify', 'bob', '2026-01-05 14:00:30', {
    ...BOB_S2,
    ...page('/docs'),
    $anon_distinct_id: 'anon-b',
    $set: { email: 'bob@example.com', name: 'Bob', plan: 'free', trial_started: '2026-01-04T00:00:00Z' },
  }),
  item(11, '$autocapture', 'bob', '2026-01-05 14:03:00', {
    ...BOB_S2,
    ...page('/docs'),
    $event_type: 'click',
    $elements_chain: CHAIN_B,
  }),
  item(12, '$pageview', 'bob', '2026-01-05 14:05:00', {
    ...BOB_S2,
    ...page('/docs/install'),
    $screen_width: 1920,
    $screen_height: 1080,
    $active_feature_flags: ['dark-mode'],
  }),
  item(13, 'rated', 'bob', '2026-01-05 14:20:00', { ...BOB_S2, ...page('/docs/install'), score: 9 }),
  item(14, '$pageview', 'anon-c', '2026-01-06 08:00:00', {
    ...CAROL_S4,
    ...page('/'),
    $screen_width: 390,
    $screen_height: 844,
  }),
  item(15, '$identify', 'carol', '2026-01-06 08:00:10', {
    ...CAROL_S4,
    ...page('/'),
    $anon_distinct_id: 'anon-c',
    $set: { email: 'carol@example.com', name: 'Carol', plan: 'pro' },
  }),
  item(16, '$pageleave', 'carol', '2026-01-06 08:00:40', { ...CAROL_S4, ...page('/') }),
  item(17, 'form submitted', 'carol', '2026-01-06 09:00:00', {
    $lib: 'posthog-python',
    response: { first_name: 'Carol', last_name: 'Danvers', company: { name: 'Initech' } },
  }),
  item(18, '$pageview', 'bob', '2026-01-06 20:00:00', {
    ...BOB_S3,
    ...page('/pricing'),
    $screen_width: 1920,
    $screen_height: 1080,
    $active_feature_flags: ['dark-mode', 'new-checkout'],
  }),
  item(19, 'purchase', 'bob', '2026-01-06 20:15:00', {
    ...BOB_S3,
    ...page('/checkout'),
    price: 10,
    quantity: 1,
    paid: false,
    currency: 'EUR',
    delivery_date: '2026-01-08',
    $groups: { company: 'globex' },
    $set: { plan: 'pro' },
  }),
  item(20, 'api call', 'dave', '2026-01-07 03:00:00', { ...SERVER, endpoint: '/v1/query', duration_ms: 120 }),
  item(21, 'api call', 'dave', '2026-01-07 03:00:05', { ...SERVER, endpoint: '/v1/query', duration_ms: 80 }),
  item(22, 'user signed up', 'dave', '2026-01-07 03:10:00', {
    ...SERVER,
    is_organization_first_user: true,
    realm: 'cloud',
    team_member_count_all: 3,
    $set_once: { signed_up_at: '2026-01-07T03:10:00Z' },
    $groups: { company: 'globex' },
  }),
  item(23, 'rated', 'carol', '2026-01-07 12:00:00', { ...CAROL_S5, ...page('/feedback'), score: 6 }),
  item(24, 'rated', 'carol', '2026-01-07 12:01:00', { ...CAROL_S5, ...page('/feedback'), score: 10 }),
] as const;

/** What ingest must have produced before the corpus is asked anything. */
const SETTLED: readonly [string, number][] = [
  ['SELECT count() FROM events', COMPAT_EVENTS.length],
  ['SELECT count() FROM persons', 4],
  ['SELECT count() FROM person_distinct_ids', 7],
  ['SELECT count() FROM groups', 2],
  ['SELECT count() FROM ingestion_warnings', 1],
];

/**
 * Captures the dataset into project 1 of an empty Weir through `/batch/` (historical, so processed in
 * order) and waits until every table shows what ingest makes of it.
 */
export async function loadCompatDataset(w: TestWeir): Promise<void> {
  // The item without a distinct id is dropped by capture, with an ingestion warning.
  const batch = [...COMPAT_EVENTS, { event: 'orphan', properties: { $lib: 'web' } }];
  const res = await post(
    `${w.url}/batch/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, historical_migration: true, batch }),
  );
  if (res.status !== 200) throw new Error(`capture: ${res.status} ${res.text}`);
  for (const [sql, expected] of SETTLED) {
    await waitFor(
      async () => ((await rows(w, sql))[0]![0] === expected ? true : undefined),
      20_000,
      `${sql} to be ${expected}`,
    );
  }
}
