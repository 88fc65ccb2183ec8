/**
 * Issue 42's fields end to end: sessions captured over HTTP into a real Weir — landing pages with utm values,
 * referrers and ad click ids, as posthog-js sends them on a `$pageview` — and persons with the `$initial_…`
 * properties an SDK sets once, then each new field read through the query API: `sessions.$channel_type` and
 * the sessions columns, `persons.$virt_initial_channel_type` / `$virt_initial_referring_domain_type`,
 * `events.$virt_path_cleaned_pathname`, `team_id` and `raw_groups`.
 */
import t from 'tap';
import { captureAll, rows } from '../helpers/query-api.ts';
import { startTestWeir, waitFor, type TestWeir } from '../helpers/weir.ts';

const w: TestWeir = await startTestWeir();
t.teardown(() => w.close());

const recent = Math.floor(Date.now() / 1000) - 3600;
const at = (s: number): string => new Date((recent + s) * 1000).toISOString();

/** A landing `$pageview`: the URL's campaign parameters as properties, as posthog-js sends them. */
function landing(
  distinctId: string,
  session: string,
  s: number,
  url: string,
  referringDomain: string,
  initial: Record<string, string> = {},
): Record<string, unknown> {
  const u = new URL(url);
  const campaign = Object.fromEntries(u.searchParams);
  return {
    event: '$pageview',
    distinct_id: distinctId,
    timestamp: at(s),
    properties: {
      $session_id: session,
      $current_url: url,
      $host: u.host,
      $pathname: u.pathname,
      $referring_domain: referringDomain,
      ...campaign,
      $set_once: initial,
    },
  };
}

const GOOGLE_AD = '0190a1b2-0000-7000-8000-00000000e001';
const ORGANIC = '0190a1b2-0000-7000-8000-00000000e002';
const NEWSLETTER = '0190a1b2-0000-7000-8000-00000000e003';
const FACEBOOK = '0190a1b2-0000-7000-8000-00000000e004';
const DIRECT = '0190a1b2-0000-7000-8000-00000000e005';

await captureAll(w, [
  // A Google ad: gclid and gad_source on the landing URL, then two more pages and an outbound click.
  landing(
    'ann',
    GOOGLE_AD,
    0,
    'https://shop.example.com/shoes?gclid=Cj0KCQ&gad_source=1&utm_source=google&utm_medium=cpc',
    'www.google.com',
    {
      $initial_referring_domain: 'www.google.com',
      $initial_utm_source: 'google',
      $initial_utm_medium: 'cpc',
      $initial_gclid: 'Cj0KCQ',
      $initial_gad_source: '1',
    },
  ),
  {
    event: '$web_vitals',
    distinct_id: 'ann',
    timestamp: at(1),
    properties: {
      $session_id: GOOGLE_AD,
      $current_url: 'https://shop.example.com/shoes',
      $web_vitals_LCP_value: 1234.5,
    },
  },
  {
    event: '$autocapture',
    distinct_id: 'ann',
    timestamp: at(5),
    properties: {
      $session_id: GOOGLE_AD,
      $current_url: 'https://shop.example.com/shoes',
      $external_click_url: 'https://reviews.example.net/shoes',
    },
  },
  {
    event: '$pageview',
    distinct_id: 'ann',
    timestamp: at(30),
    properties: {
      $session_id: GOOGLE_AD,
      $current_url: 'https://checkout.example.com/pay',
      $host: 'checkout.example.com',
      $pathname: '/pay',
    },
  },
  // Organic search, from Bing.
  landing('bob', ORGANIC, 100, 'https://shop.example.com/', 'www.bing.com', {
    $initial_referring_domain: 'www.bing.com',
  }),
  // A newsletter link.
  landing(
    'cat',
    NEWSLETTER,
    200,
    'https://shop.example.com/sale?utm_source=newsletter&utm_medium=email',
    '$direct',
    {
      $initial_referring_domain: '$direct',
      $initial_utm_source: 'newsletter',
      $initial_utm_medium: 'email',
    },
  ),
  // A Facebook ad: fbclid, paid medium, and Microsoft's click id carried along.
  landing(
    'dan',
    FACEBOOK,
    300,
    'https://shop.example.com/?utm_source=facebook&utm_medium=paid&fbclid=IwAR3&msclkid=ms1',
    'l.facebook.com',
    {
      $initial_referring_domain: 'l.facebook.com',
      $initial_utm_source: 'facebook',
      $initial_utm_medium: 'paid',
      $initial_fbclid: 'IwAR3',
    },
  ),
  // Typed in.
  landing('eve', DIRECT, 400, 'https://shop.example.com/', '$direct', {
    $initial_referring_domain: '$direct',
  }),
  // A group, for raw_groups.
  {
    event: '$groupidentify',
    distinct_id: 'ann',
    timestamp: at(500),
    properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' } },
  },
]);

t.test('sessions.$channel_type classifies each landing as PostHog does', async (t) => {
  t.same(await rows(w, 'SELECT id, $channel_type FROM sessions ORDER BY $start_timestamp'), [
    [GOOGLE_AD, 'Paid Search'],
    [ORGANIC, 'Organic Search'],
    [NEWSLETTER, 'Email'],
    [FACEBOOK, 'Paid Social'],
    [DIRECT, 'Direct'],
  ]);
  // The same through an event's session, as PostHog's web analytics reads it.
  t.same(
    await rows(
      w,
      "SELECT DISTINCT events.session.$channel_type FROM events WHERE event = '$pageview' AND distinct_id = 'ann'",
    ),
    [['Paid Search']],
  );
});

t.test('the sessions columns of the entry and the end', async (t) => {
  t.same(
    await rows(
      w,
      `SELECT $entry_hostname, $end_hostname, $entry_gclid, $entry_gad_source, $entry_fbclid, $entry_msclkid,
         $last_external_click_url, $vitals_lcp, $page_screen_autocapture_count_up_to, team_id
       FROM sessions ORDER BY $start_timestamp`,
    ),
    [
      [
        'shop.example.com',
        'checkout.example.com',
        'Cj0KCQ',
        '1',
        null,
        null,
        'https://reviews.example.net/shoes',
        1234.5,
        2,
        1,
      ],
      ['shop.example.com', 'shop.example.com', null, null, null, null, null, null, 1, 1],
      ['shop.example.com', 'shop.example.com', null, null, null, null, null, null, 1, 1],
      ['shop.example.com', 'shop.example.com', null, null, 'IwAR3', 'ms1', null, null, 1, 1],
      ['shop.example.com', 'shop.example.com', null, null, null, null, null, null, 1, 1],
    ],
  );
});

t.test('persons.$virt_initial_channel_type and $virt_initial_referring_domain_type', async (t) => {
  // Persons are written beside the events: wait until the last one's properties are there.
  const people = (): Promise<unknown[][]> =>
    rows(
      w,
      `SELECT pdi.distinct_id, p.$virt_initial_channel_type, p.$virt_initial_referring_domain_type, p.team_id
       FROM persons AS p JOIN person_distinct_ids AS pdi ON pdi.person_id = p.id ORDER BY pdi.distinct_id`,
    );
  await waitFor(async () => ((await people()).length === 5 ? true : undefined), 20_000, 'the persons');
  t.same(await people(), [
    ['ann', 'Paid Search', 'Search', 1],
    ['bob', 'Organic Search', 'Search', 1],
    ['cat', 'Email', '$direct', 1],
    ['dan', 'Paid Social', 'Social', 1],
    ['eve', 'Direct', '$direct', 1],
  ]);
});

t.test('events.$virt_path_cleaned_pathname is the pathname', async (t) => {
  t.same(
    await rows(
      w,
      "SELECT $virt_path_cleaned_pathname, count() FROM events WHERE event = '$pageview' GROUP BY 1 ORDER BY 1",
    ),
    [
      ['/', 3],
      ['/pay', 1],
      ['/sale', 1],
      ['/shoes', 1],
    ],
  );
});

t.test('raw_groups and team_id', async (t) => {
  await waitFor(
    async () => ((await rows(w, 'SELECT count() FROM raw_groups'))[0]![0] === 1 ? true : undefined),
    20_000,
    'the group',
  );
  t.same(await rows(w, 'SELECT team_id, index, key, properties.name FROM raw_groups'), [
    [1, 0, 'acme', 'Acme'],
  ]);
  t.same(await rows(w, 'SELECT DISTINCT team_id FROM events'), [[1]]);
});
