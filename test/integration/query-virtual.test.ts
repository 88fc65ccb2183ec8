/**
 * PostHog's virtual fields and typed properties on the real engine (chDB, Weir's schema): `pdi`, `poe`,
 * `person.*`, `group_N`, `session`, the `sessions` table, persons' `last_seen_at`, and properties read as
 * their definitions type them. Every answer here is worked out by hand from the rows below.
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
import { resolveQuery, type PropertyTypeLookup } from '../../src/query/resolver/resolver.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-virtual-'));
const store = ChdbClient.open(join(dir, 'chdb'));
await migrate(store, createLogger('silent'));
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const ANN = '00000000-0000-4000-9000-00000000000a';
const BOB = '00000000-0000-4000-9000-00000000000b';
const OLD = '00000000-0000-4000-9000-00000000000c'; // merged into Ann: gone from persons

let seq = 0;
function event(
  project: number,
  name: string,
  distinctId: string,
  personId: string,
  timestamp: string,
  properties: Record<string, unknown>,
  personProperties: Record<string, unknown> = {},
  group0 = '',
): Record<string, unknown> {
  seq += 1;
  return {
    project_id: project,
    uuid: `00000000-0000-4000-8000-${seq.toString(16).padStart(12, '0')}`,
    event: name,
    distinct_id: distinctId,
    person_id: personId,
    timestamp,
    properties: JSON.stringify(properties),
    person_properties: JSON.stringify(personProperties),
    person_mode: 'full',
    $group_0: group0,
    $group_1: '',
    $group_2: '',
    $group_3: '',
    $group_4: '',
    created_at: timestamp,
    // As ingest writes them (the columns of migration 7).
    $session_id: typeof properties['$session_id'] === 'string' ? properties['$session_id'] : '',
    $window_id: '',
    elements_chain: typeof properties['$elements_chain'] === 'string' ? properties['$elements_chain'] : '',
  };
}

await store.insert('events', [
  // Ann's session s1: two pageviews 45 s apart, then an autocapture.
  event(
    1,
    '$pageview',
    'ann',
    ANN,
    '2024-03-01 10:00:00',
    { $session_id: 's1', $current_url: 'https://x.io/home', $pathname: '/home', price: 10, paid: true },
    { trial_started: '2024-02-20T00:00:00Z', plan: 'pro' },
    'acme',
  ),
  event(
    1,
    '$pageview',
    'ann',
    ANN,
    '2024-03-01 10:00:45',
    {
      $session_id: 's1',
      $current_url: 'https://x.io/pricing',
      $pathname: '/pricing',
      price: '2.5',
      paid: 'false',
    },
    { trial_started: '2024-02-20T00:00:00Z', plan: 'pro' },
    'acme',
  ),
  event(
    1,
    '$autocapture',
    'ann-old',
    OLD,
    '2024-03-01 10:01:00',
    {
      $session_id: 's1',
      $elements_chain: 'button.buy:attr__class="buy"nth-child="1"nth-of-type="1"text="Buy"',
    },
    { plan: 'free' },
  ),
  // Bob's session s2: one pageview, a bounce; then an event of no session, with a price that is no number.
  event(
    1,
    '$pageview',
    'bob',
    BOB,
    '2024-03-02 09:00:00',
    { $session_id: 's2', $current_url: 'https://x.io/blog', $pathname: '/blog', price: 'n/a' },
    {},
  ),
  event(1, 'purchase', 'bob', BOB, '2024-03-03 12:00:00', { price: 7, paid: true }, {}),
  // Another project's event in Ann's session id: never seen from project 1.
  event(2, '$pageview', 'ann', ANN, '2024-03-05 00:00:00', {
    $session_id: 's1',
    $current_url: 'https://evil',
  }),
]);
await store.insert('persons', [
  person(ANN, { email: 'ann@acme.io' }, 1, '2024-01-10 00:00:00'),
  person(BOB, { email: 'bob@mail.io' }, 0, '2024-02-01 00:00:00'),
  { ...person(OLD, {}, 0, '2024-01-01 00:00:00'), is_deleted: 1 },
]);
await store.insert('person_distinct_ids', [
  { project_id: 1, distinct_id: 'ann', person_id: ANN, version: 1 },
  { project_id: 1, distinct_id: 'ann-old', person_id: ANN, version: 2 }, // followed the merge
  { project_id: 1, distinct_id: 'bob', person_id: BOB, version: 1 },
]);
await store.insert('groups', [
  {
    project_id: 1,
    group_type_index: 0,
    group_type: 'company',
    group_key: 'acme',
    properties: JSON.stringify({ name: 'Acme', seats: 12 }),
    created_at: '2023-06-01 00:00:00',
    version: 1,
  },
]);

function person(
  id: string,
  properties: object,
  identified: number,
  createdAt: string,
): Record<string, unknown> {
  return {
    project_id: 1,
    id,
    properties: JSON.stringify(properties),
    is_identified: identified,
    created_at: createdAt,
    version: 1,
  };
}

const TYPES: PropertyTypeLookup = {
  event: (name) => ({ price: 'Numeric', paid: 'Boolean' })[name],
  person: (name) => ({ trial_started: 'DateTime' })[name],
};

async function rows(text: string, typed = true): Promise<unknown[][]> {
  const resolved = resolveQuery(parseDialect(text), { properties: typed ? TYPES : undefined });
  const printed = printClickHouse(resolved, bindVariables(resolved.variables, {}), 1);
  const table = await store.queryTable(printed.sql, printed.params);
  return table.rows.map((r) => r.map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)));
}

t.test('pdi, pdi.person and person.* beyond the event columns read the current person', async (t) => {
  t.same(
    await rows(
      `SELECT event, pdi.person_id, pdi.person.properties.email, person.created_at, person.is_identified
       FROM events ORDER BY timestamp`,
    ),
    [
      ['$pageview', ANN, 'ann@acme.io', '2024-01-10 00:00:00.000000', 1],
      ['$pageview', ANN, 'ann@acme.io', '2024-01-10 00:00:00.000000', 1],
      // The event was stored for the merged-away person; pdi follows the merge to Ann.
      ['$autocapture', ANN, 'ann@acme.io', '2024-01-10 00:00:00.000000', 1],
      ['$pageview', BOB, 'bob@mail.io', '2024-02-01 00:00:00.000000', 0],
      ['purchase', BOB, 'bob@mail.io', '2024-02-01 00:00:00.000000', 0],
    ],
  );
  // person.id and poe read the person as the event saw it (person-on-events).
  t.same(
    await rows("SELECT person.id, poe.id, poe.properties.plan FROM events WHERE event = '$autocapture'"),
    [[OLD, OLD, 'free']],
  );
  t.same(
    await rows(
      'SELECT pdi.person.properties.email AS email, count() FROM events GROUP BY email ORDER BY email',
    ),
    [
      ['ann@acme.io', 3],
      ['bob@mail.io', 2],
    ],
  );
});

t.test("last_seen_at is the newest event of any of a person's distinct ids", async (t) => {
  t.same(await rows('SELECT properties.email, last_seen_at FROM persons ORDER BY properties.email'), [
    ['ann@acme.io', '2024-03-01 10:01:00.000000'],
    ['bob@mail.io', '2024-03-03 12:00:00.000000'],
  ]);
  t.same(await rows("SELECT DISTINCT person.last_seen_at FROM events WHERE distinct_id = 'bob'"), [
    ['2024-03-03 12:00:00.000000'],
  ]);
});

t.test('group_N reads the group of that type index; groups answer to PostHog names', async (t) => {
  t.same(
    await rows(
      'SELECT group_0.properties.name, group_0.key, group_0.index, count() FROM events GROUP BY 1, 2, 3 ORDER BY 1',
    ),
    [
      ['Acme', 'acme', 0, 2],
      [null, '', 0, 3], // no group: the join finds none
    ],
  );
  t.same(await rows('SELECT index, key, properties.name, group_properties.seats FROM groups'), [
    [0, 'acme', 'Acme', '12'],
  ]);
});

t.test('sessions: one row per $session_id of the project, derived from its events', async (t) => {
  t.same(
    await rows(
      `SELECT session_id, distinct_id, $start_timestamp, $end_timestamp, $session_duration, duration, $entry_pathname,
         $end_pathname, $exit_current_url, $pageview_count, $autocapture_count, $event_count, $is_bounce, arraySort($urls)
       FROM sessions ORDER BY session_id`,
    ),
    [
      [
        's1',
        'ann',
        '2024-03-01 10:00:00.000000',
        '2024-03-01 10:01:00.000000',
        60,
        60,
        '/home',
        '/pricing',
        'https://x.io/pricing',
        2,
        1,
        3,
        0,
        ['https://x.io/home', 'https://x.io/pricing'],
      ],
      [
        's2',
        'bob',
        '2024-03-02 09:00:00.000000',
        '2024-03-02 09:00:00.000000',
        0,
        0,
        '/blog',
        '/blog',
        'https://x.io/blog',
        1,
        0,
        1,
        1,
        ['https://x.io/blog'],
      ],
    ],
  );
  t.same(
    await rows(
      `SELECT $session_id, session.$session_duration, session.$entry_current_url, elements_chain != ''
       FROM events ORDER BY timestamp`,
    ),
    [
      ['s1', 60, 'https://x.io/home', 0],
      ['s1', 60, 'https://x.io/home', 0],
      ['s1', 60, 'https://x.io/home', 1],
      ['s2', 0, 'https://x.io/blog', 0],
      ['', 0, null, 0], // no session: the join finds none
    ],
  );
  t.same(
    await rows(
      "SELECT avg($session_duration), countIf($is_bounce) FROM sessions WHERE $entry_pathname = '/home'",
    ),
    [[60, 0]],
  );
});

t.test('properties read as their definitions type them, null when a value does not convert', async (t) => {
  t.same(
    await rows('SELECT sum(properties.price), countIf(properties.paid), max(properties.price) FROM events'),
    [
      [19.5, 2, 10], // 10 + 2.5 + 7 ('n/a' is null); paid: true, 'false', true
    ],
  );
  t.same(await rows('SELECT count() FROM events WHERE properties.price < 5'), [[1]]); // 2.5, not 'n/a' or '10' as text
  // Untyped, a property is text: '10' and '2.5' are less than '5' as strings ('n/a', '7' and missing are not).
  t.same(await rows("SELECT count() FROM events WHERE properties.price < '5'", false), [[2]]);
  // A function that parses text itself takes the text (HogQL leaves toFloatOrZero's argument alone).
  t.same(await rows('SELECT sum(toFloat64OrZero(properties.price)) FROM events'), [[19.5]]);
  // A DateTime person property: an interval added, null for persons without it.
  t.same(
    await rows(
      "SELECT person.properties.trial_started + INTERVAL 30 DAY FROM events WHERE distinct_id != 'ann-old' ORDER BY timestamp",
    ),
    [['2024-03-21 00:00:00.000000'], ['2024-03-21 00:00:00.000000'], [null], [null]],
  );
  t.same(
    await rows(
      "SELECT dateDiff('day', person.properties.trial_started, timestamp) FROM events WHERE distinct_id = 'ann' LIMIT 1",
    ),
    [[10]],
  );
  // Nested keys stay text: only a top-level property has a definition.
  t.same(await rows("SELECT properties.price.x FROM events WHERE event = 'purchase'"), [[null]]);
});

t.test('a virtual field keeps every table confined and the query readable', async (t) => {
  // Unqualified names stay unambiguous beside the joined tables' same-named columns.
  t.same(await rows("SELECT distinct_id, person_id, pdi.person_id FROM events WHERE event = 'purchase'"), [
    ['bob', BOB, BOB],
  ]);
  // `*` is the query's own table, not the joined ones.
  const star = await rows("SELECT *, pdi.person_id FROM events WHERE event = 'purchase'");
  t.equal(star[0]!.length, 19);
  // Another project's rows never join: project 2's event in session s1 changes nothing above.
  t.same(await rows("SELECT count() FROM events WHERE session.$entry_current_url = 'https://evil'"), [[0]]);
});

t.test('virtual fields refuse what they cannot mean, saying what they have', (t) => {
  const refusal = (text: string): string => {
    try {
      resolveQuery(parseDialect(text), {});
      return 'resolved';
    } catch (err) {
      return err instanceof QueryResolveError ? err.message : String(err);
    }
  };
  t.match(
    refusal('SELECT pdi FROM events'),
    /'pdi' is not a column: read one of its fields \(pdi\.<field>: distinct_id and person_id\)/,
  );
  t.match(
    refusal('SELECT poe.created_at FROM events'),
    /there is no poe\.created_at: the person on an event \(poe\) has properties, id, \$virt_initial_channel_type and \$virt_initial_referring_domain_type/,
  );
  t.match(refusal('SELECT person.email FROM events'), /a property is read as person\.properties\.email/);
  t.match(refusal('SELECT session.nope FROM events'), /the event's session has no column 'nope'/);
  t.end();
});

t.test("HogQL's meaning of NULL in comparisons and concat, {filters}, numbers() of constants", async (t) => {
  t.same(
    await rows('SELECT null = 2, null = null, null != 2, null < 2, null LIKE null, null BETWEEN 1 AND 10'),
    [[0, 1, 1, 0, 1, 0]],
  );
  // An event without $current_url is not 'https://x.io/home': 4 of 5 events (project 1).
  t.same(await rows("SELECT count() FROM events WHERE properties.$current_url != 'https://x.io/home'"), [
    [4],
  ]);
  t.same(await rows("SELECT count() FROM events WHERE properties.$current_url NOT LIKE '%x.io%'"), [[2]]);
  t.same(
    await rows(
      "SELECT concat(event, ':', properties.$pathname), event || '/' || properties.$pathname FROM events WHERE distinct_id = 'bob' ORDER BY timestamp",
    ),
    [
      ['$pageview:/blog', '$pageview//blog'],
      ['purchase:', 'purchase/'],
    ],
  );
  t.same(await rows("SELECT count() FROM events WHERE {filters} AND event = 'purchase'"), [[1]]);
  t.same(await rows('SELECT sum(number) FROM numbers(2 + 2)'), [[6]]);
  t.same(
    await rows(
      "SELECT count() FROM numbers(assumeNotNull(dateDiff('day', toDate('2024-01-01'), toDate('2024-01-15'))))",
    ),
    [[14]],
  );
  t.same(
    await rows('SELECT distinct_id, person.properties.email FROM person_distinct_ids ORDER BY distinct_id'),
    [
      ['ann', 'ann@acme.io'],
      ['ann-old', 'ann@acme.io'],
      ['bob', 'bob@mail.io'],
    ],
  );
  t.same(await rows('SELECT session_id, $num_uniq_urls FROM sessions ORDER BY session_id'), [
    ['s1', 2],
    ['s2', 1],
  ]);
});

t.test(
  'as HogQL reads them: a WITH over a whole UNION ALL, property columns of a CTE, time windows',
  async (t) => {
    const union = await rows(
      `WITH buys AS (SELECT event FROM events WHERE event = 'purchase'), views AS (SELECT event FROM events WHERE event = '$pageview')
       SELECT * FROM buys UNION ALL SELECT * FROM views`,
    );
    t.same(union.map((r) => r[0]).sort(), ['$pageview', '$pageview', '$pageview', 'purchase']);
    t.same(
      await rows(
        `WITH paths AS (SELECT properties.$pathname, count() AS n FROM events GROUP BY properties.$pathname)
       SELECT $pathname, n FROM paths WHERE $pathname IS NOT NULL ORDER BY $pathname`,
      ),
      [
        ['/blog', 1],
        ['/home', 1],
        ['/pricing', 1],
      ],
    );
    // A name the subquery already uses for a column keeps its meaning: no alias is made over it.
    t.same(
      await rows("SELECT * FROM (SELECT properties.event, event FROM events WHERE event = 'purchase')"),
      [[null, 'purchase']],
    );
    t.same(
      await rows(
        "SELECT tumbleStart(toDateTime('2020-01-01 10:30:00'), toIntervalHour(1)), hopEnd(timestamp, toIntervalDay(1), toIntervalDay(2)) FROM events WHERE event = 'purchase'",
      ),
      [['2020-01-01 10:00:00', '2024-03-04 00:00:00']],
    );
  },
);
