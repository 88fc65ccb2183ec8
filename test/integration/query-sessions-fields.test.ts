/**
 * The fields of issue 42 on the real engine (chDB, Weir's schema), read as PostHog's tests read them:
 * `persons.$virt_initial_channel_type` and `$virt_initial_referring_domain_type` of a person made with the
 * case's properties, `events.session.$channel_type` of a session of one `$pageview` with them (every case of
 * PostHog's channel-type tests, test/helpers/posthog-channel-cases.ts); then the other sessions columns
 * (`id`, hostnames, click ids, `$last_external_click_url`, `$vitals_lcp`,
 * `$page_screen_autocapture_count_up_to`), `team_id` on every table, `raw_groups` and
 * `$virt_path_cleaned_pathname`, each worked out by hand from the rows below.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { parseDialect } from '../../src/query/dialect/mod.ts';
import { QueryResolveError } from '../../src/query/resolver/errors.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import {
  DOMAIN_TYPE_CASES,
  PERSON_CASES,
  SESSION_CASES,
  WILD_CLICKS,
  wildClickProperties,
} from '../helpers/posthog-channel-cases.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-sessions-fields-'));
const store = ChdbClient.open(join(dir, 'chdb'));
await migrate(store, createLogger('silent'));
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const uuid = (prefix: string, n: number): string =>
  `${prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
let seq = 0;

function event(
  project: number,
  name: string,
  distinctId: string,
  timestamp: string,
  properties: Record<string, unknown>,
): Record<string, unknown> {
  seq += 1;
  return {
    project_id: project,
    uuid: uuid('00000000', seq),
    event: name,
    distinct_id: distinctId,
    person_id: uuid('00000001', 0),
    timestamp,
    properties: JSON.stringify(properties),
    person_properties: '{}',
    person_mode: 'full',
    $group_0: '',
    $group_1: '',
    $group_2: '',
    $group_3: '',
    $group_4: '',
    created_at: timestamp,
    $session_id: typeof properties['$session_id'] === 'string' ? properties['$session_id'] : '',
    $window_id: '',
    elements_chain: '',
  };
}

function person(project: number, id: string, properties: object): Record<string, unknown> {
  return {
    project_id: project,
    id,
    properties: JSON.stringify(properties),
    is_identified: 0,
    created_at: '2024-01-01 00:00:00',
    version: 1,
  };
}

// One person per person case, domain type case and wild click; one single-$pageview session per session case
// and wild click, its distinct id the case's name.
const wild = WILD_CLICKS.map(([name, url, referrer, expected]) => ({
  name,
  expected,
  ...wildClickProperties(url, referrer),
}));
const personCases = [
  ...PERSON_CASES.map((c) => ({ name: c.name, properties: c.properties, expected: c.expected })),
  ...wild.map((c) => ({ name: `wild: ${c.name}`, properties: c.person, expected: c.expected })),
];
const sessionCases = [
  ...SESSION_CASES.map((c) => ({ name: c.name, properties: c.properties, expected: c.expected })),
  ...wild.map((c) => ({ name: `wild: ${c.name}`, properties: c.event, expected: c.expected })),
];
await store.insert('persons', [
  ...personCases.map((c, i) => person(1, uuid('00000002', i), c.properties)),
  ...DOMAIN_TYPE_CASES.map(([domain], i) =>
    person(1, uuid('00000003', i), { $initial_referring_domain: domain }),
  ),
]);
await store.insert(
  'events',
  sessionCases.map((c, i) =>
    event(1, '$pageview', `case ${c.name}`, '2024-05-01 00:00:00', {
      $session_id: `case-${i}`,
      ...c.properties,
    }),
  ),
);

// The person cases again as the person on an event (person-on-events), and a distinct id of the first
// person case's person, for pdi.person.
await store.insert('events', [
  ...personCases.map((c) => ({
    ...event(1, 'poe', `poe ${c.name}`, '2024-05-02 00:00:00', {}),
    person_properties: JSON.stringify(c.properties),
  })),
  event(1, 'pdi', 'pdi-0', '2024-05-03 00:00:00', {}),
]);
await store.insert('person_distinct_ids', [
  { project_id: 1, distinct_id: 'pdi-0', person_id: uuid('00000002', 0), version: 1 },
]);

// A session of three events for the other columns: entry on one host, end on another.
const S = '0190a1b2-0000-7000-8000-000000000001';
await store.insert('events', [
  event(1, '$pageview', 'sam', '2024-06-01 10:00:00', {
    $session_id: S,
    $current_url: 'https://shop.example.com/start?gclid=G1',
    $pathname: '/start',
    gclid: 'G1',
    msclkid: 'M1',
    _kx: 'K1',
    utm_term: 'shoes',
    $web_vitals_LCP_value: '1800.5',
  }),
  event(1, '$autocapture', 'sam', '2024-06-01 10:00:20', {
    $session_id: S,
    $current_url: 'https://shop.example.com/start',
    $external_click_url: 'https://partner.io/a',
    $web_vitals_LCP_value: 900,
  }),
  event(1, '$pageview', 'sam', '2024-06-01 10:01:00', {
    $session_id: S,
    $current_url: 'https://blog.example.org:8080/end',
    $pathname: '/end',
    $external_click_url: 'https://partner.io/b',
  }),
  // Another project's session: never seen from project 1.
  event(2, '$pageview', 'sam', '2024-06-01 10:00:00', { $session_id: S, $current_url: 'https://evil.io/' }),
]);
await store.insert('groups', [
  {
    project_id: 1,
    group_type_index: 0,
    group_type: 'company',
    group_key: 'acme',
    properties: JSON.stringify({ name: 'Acme' }),
    created_at: '2023-06-01 00:00:00',
    version: 1,
  },
  {
    project_id: 1,
    group_type_index: 0,
    group_type: 'company',
    group_key: 'acme',
    properties: JSON.stringify({ name: 'Acme Inc' }),
    created_at: '2023-06-01 00:00:00',
    version: 2,
  },
  {
    project_id: 2,
    group_type_index: 0,
    group_type: 'company',
    group_key: 'other',
    properties: '{}',
    created_at: '2023-06-01 00:00:00',
    version: 1,
  },
]);

async function rows(text: string, project = 1): Promise<unknown[][]> {
  const resolved = resolveQuery(parseDialect(text));
  const printed = printClickHouse(resolved, bindVariables(resolved.variables, {}), project);
  const table = await store.queryTable(printed.sql, printed.params);
  return table.rows.map((r) => r.map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)));
}

/** Each value and how often it occurs, ordered by value. */
function counted(values: readonly string[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

function columns(text: string): readonly string[] {
  return resolveQuery(parseDialect(text)).columns;
}

t.test('persons.$virt_initial_channel_type: PostHog’s person cases and wild clicks', async (t) => {
  const got = new Map(
    (await rows('SELECT id, $virt_initial_channel_type AS channel_type FROM persons')).map(
      ([id, channel]) => [id, channel],
    ),
  );
  personCases.forEach((c, i) => t.equal(got.get(uuid('00000002', i)), c.expected, c.name));
});

t.test(
  'poe.* and person.* on events: the person as the event saw it; pdi.person.*: the current one',
  async (t) => {
    const got = new Map(
      (
        await rows(
          `SELECT distinct_id, poe.$virt_initial_channel_type, person.$virt_initial_channel_type,
           poe.$virt_initial_referring_domain_type
         FROM events WHERE event = 'poe'`,
        )
      ).map(([id, ...channel]) => [id, channel]),
    );
    for (const c of personCases) {
      const domain = c.properties['$initial_referring_domain'];
      const type = domain === '$direct' ? '$direct' : domain === undefined ? null : undefined;
      const [poe, person, domainType] = got.get(`poe ${c.name}`) ?? [];
      t.equal(poe, c.expected, `${c.name} (poe)`);
      t.equal(person, c.expected, `${c.name} (person)`);
      if (type !== undefined) t.equal(domainType, type, `${c.name} (referring domain type)`);
    }
    t.same(
      await rows(
        `SELECT pdi.person.$virt_initial_channel_type, pdi.person.$virt_initial_referring_domain_type
       FROM events WHERE distinct_id = 'pdi-0'`,
      ),
      [['Direct', '$direct']],
    );
  },
);

t.test('persons.$virt_initial_referring_domain_type: PostHog’s cases', async (t) => {
  for (const [i, [domain, expected]] of DOMAIN_TYPE_CASES.entries()) {
    t.same(
      await rows(
        `SELECT $virt_initial_referring_domain_type AS channel_type FROM persons WHERE id = '${uuid('00000003', i)}'`,
      ),
      [[expected]],
      domain,
    );
  }
});

t.test('events.session.$channel_type: PostHog’s session cases and wild clicks', async (t) => {
  const got = new Map(
    (
      await rows(
        `SELECT distinct_id, events.session.$channel_type AS channel_type, events.session.$entry_utm_source,
           events.session.$entry_utm_medium, events.session.$entry_utm_campaign, events.session.$entry_referring_domain
         FROM events WHERE startsWith(distinct_id, 'case ')`,
      )
    ).map(([id, channel]) => [id, channel]),
  );
  for (const c of sessionCases) t.equal(got.get(`case ${c.name}`), c.expected, c.name);
  t.same(
    await rows(
      `SELECT $channel_type, count() FROM sessions WHERE session_id LIKE 'case-%' GROUP BY 1 ORDER BY 1`,
    ),
    counted(sessionCases.map((c) => c.expected)),
    'the sessions table itself, grouped',
  );
});

t.test('the other sessions columns, as PostHog’s sessions table gives them', async (t) => {
  t.same(
    await rows(
      `SELECT id, session_id, team_id, $entry_hostname, $end_hostname, $entry_gclid, $entry_msclkid, $entry__kx,
         $entry_fbclid, $entry_has_gclid, $entry_has_fbclid, $entry_utm_term, $last_external_click_url, $vitals_lcp,
         $page_screen_autocapture_count_up_to, $channel_type
       FROM sessions WHERE id = '${S}'`,
    ),
    [
      [
        S,
        S,
        1,
        'shop.example.com',
        // PostHog's domain(): the host without its port.
        'blog.example.org',
        'G1',
        'M1',
        'K1',
        null,
        1,
        0,
        'shoes',
        // The newest external click; the first LCP reported.
        'https://partner.io/b',
        1800.5,
        // More than one pageview, screen or autocapture.
        2,
        'Paid Unknown',
      ],
    ],
  );
  t.same(
    await rows(`SELECT session.id, session.$entry_hostname FROM events WHERE $session_id = '${S}' LIMIT 1`),
    [[S, 'shop.example.com']],
  );
  t.same(
    await rows(`SELECT $page_screen_autocapture_count_up_to, $vitals_lcp FROM sessions WHERE id = 'case-0'`),
    [[1, null]],
    'one pageview; no LCP',
  );
  t.same(await rows(`SELECT count() FROM sessions WHERE id = '${S}'`, 2), [[1]], "project 2's own session");
  t.same(await rows(`SELECT team_id, $entry_hostname FROM sessions WHERE id = '${S}'`, 2), [[2, 'evil.io']]);
});

t.test('team_id is the project on every table', async (t) => {
  for (const table of [
    'events',
    'persons',
    'person_distinct_ids',
    'groups',
    'raw_groups',
    'ingestion_warnings',
    'sessions',
  ]) {
    t.same(
      await rows(`SELECT DISTINCT team_id FROM ${table} WHERE team_id = 1`),
      table === 'ingestion_warnings' ? [] : [[1]],
      table,
    );
  }
  t.same(await rows('SELECT DISTINCT team_id FROM events', 2), [[2]]);
  t.same(
    await rows(
      `SELECT DISTINCT e.team_id, s.team_id FROM events AS e JOIN sessions AS s ON e.$session_id = s.session_id WHERE s.id = '${S}'`,
    ),
    [[1, 1]],
    'beside a join, each table its own',
  );
  t.same(columns('SELECT team_id, e.team_id AS t2 FROM events AS e'), ['team_id', 't2']);
  // Not in SELECT *: PostHog's expression fields are not columns of the table.
  t.notOk(columns('SELECT * FROM events').includes('team_id'));
});

t.test('raw_groups reads the groups by PostHog’s raw column names', async (t) => {
  t.same(await rows('SELECT index, key, properties.name, team_id, created_at FROM raw_groups'), [
    [0, 'acme', 'Acme Inc', 1, '2023-06-01 00:00:00.000000'],
  ]);
  t.same(columns('SELECT * FROM raw_groups'), ['project_id', 'index', 'key', 'created_at', 'properties']);
});

t.test('$virt_path_cleaned_pathname is the pathname: Weir has no path cleaning rules', async (t) => {
  t.same(
    await rows(
      `SELECT properties.$pathname AS original_pathname, $virt_path_cleaned_pathname AS cleaned_pathname
       FROM events WHERE distinct_id = 'sam' ORDER BY timestamp`,
    ),
    [
      ['/start', '/start'],
      [null, null],
      ['/end', '/end'],
    ],
  );
  t.same(
    await rows(
      `SELECT count() FROM events WHERE $virt_path_cleaned_pathname != '/start' AND distinct_id = 'sam'`,
    ),
    [[2]],
    'a missing pathname compares as HogQL compares a missing property',
  );
});

t.test('an expression field is a value: it has no fields', (t) => {
  const refusal = (text: string): string => {
    try {
      resolveQuery(parseDialect(text));
    } catch (err) {
      if (err instanceof QueryResolveError) return err.reason;
      throw err;
    }
    return 'accepted';
  };
  t.equal(refusal('SELECT team_id.x FROM events'), "'team_id' is a value: it has no field 'x'");
  t.equal(
    refusal('SELECT $virt_initial_channel_type.a FROM persons'),
    "'$virt_initial_channel_type' is a value: it has no field 'a'",
  );
  t.end();
});
