/**
 * HogQL's syntax and function names on the real engine (chDB, Weir's schema), over four hand-written events:
 * each answer below is worked out by hand from those rows, not by running SQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { runHogQLQuery } from '../../src/query/hogql-query.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-hogql-'));
const store = ChdbClient.open(join(dir, 'chdb'));
await migrate(store, createLogger('silent'));
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const event = (
  n: number,
  name: string,
  distinctId: string,
  timestamp: string,
  properties: Record<string, unknown>,
  project = 1,
): Record<string, unknown> => ({
  project_id: project,
  uuid: `00000000-0000-4000-a000-${n.toString(16).padStart(12, '0')}`,
  event: name,
  distinct_id: distinctId,
  person_id: '00000000-0000-4000-a000-000000000000',
  timestamp,
  properties: JSON.stringify(properties),
  person_properties: '{}',
  person_mode: 'full',
  created_at: timestamp,
});

await store.insert('events', [
  event(1, '$pageview', 'a', '2026-03-01 10:00:00.000', {
    $browser: 'Chrome',
    plan: 'pro',
    arr: [10, 20, 30],
  }),
  event(2, '$pageview', 'b', '2026-03-01 11:00:00.000', { $browser: 'Firefox', arr: [1] }),
  event(3, 'signed up', 'a', '2026-03-02 09:00:00.000', { plan: null }),
  event(4, 'Purchase', 'c', '2026-03-03 12:00:00.000', { $browser: 'chrome', price: '12.5' }),
  // Another project's row, which no answer may count.
  event(5, '$pageview', 'z', '2026-03-01 10:00:00.000', { plan: 'theirs', arr: [99] }, 2),
]);

async function rows(query: string): Promise<unknown[][]> {
  return (await runHogQLQuery({ query, variables: {} }, 1, { store })).results;
}

t.test('?? is ifNull: a missing or null property takes the default', async (t) => {
  t.same(await rows("SELECT event, properties.plan ?? 'free' AS plan FROM events ORDER BY timestamp"), [
    ['$pageview', 'pro'],
    ['$pageview', 'free'],
    ['signed up', 'free'],
    ['Purchase', 'free'],
  ]);
  // Looser than a comparison: (NULL = 'pro') ?? false is false, not NULL = ('pro' ?? false).
  t.same(await rows("SELECT countIf(properties.plan = 'pro' ?? false) FROM events"), [[1]]);
});

t.test('the regex operators match, do not match, and ignore case with *', async (t) => {
  t.same(
    await rows(
      `SELECT countIf(event =~ '^.page'), countIf(event !~ 'page'), countIf(event ~* 'purchase'),
              countIf(event !~* 'PAGEVIEW|signed'), countIf(properties.$browser =~* '^chrome$'),
              countIf(event ~ 'up$'), countIf(event =~* 'PURCHASE')
       FROM events`,
    ),
    // $pageview ×2; signed up and Purchase; Purchase; Purchase; Chrome and chrome; signed up; Purchase.
    [[2, 2, 1, 1, 2, 1, 1]],
  );
});

t.test('GROUP BY GROUPING SETS counts each set, the keys outside a set at their default', async (t) => {
  t.same(
    await rows(
      `SELECT event, distinct_id, count() AS n FROM events
       GROUP BY GROUPING SETS ((event), (event, distinct_id), ())
       ORDER BY event, distinct_id, n`,
    ),
    [
      ['', '', 4],
      ['$pageview', '', 2],
      ['$pageview', 'a', 1],
      ['$pageview', 'b', 1],
      ['Purchase', '', 1],
      ['Purchase', 'c', 1],
      ['signed up', '', 1],
      ['signed up', 'a', 1],
    ],
  );
});

t.test('a name given inside an expression is usable elsewhere in the SELECT', async (t) => {
  t.same(await rows('SELECT (count() + 1 AS b) * 2, b FROM events'), [[10, 5]]);
  t.same(await rows('SELECT (sumMap([event], [toUInt64(1)]) AS m).1 AS keys, m.2 AS counts FROM events'), [
    [
      ['$pageview', 'Purchase', 'signed up'],
      [2, 1, 1],
    ],
  ]);
  t.same(
    await rows(
      "SELECT event FROM events WHERE (lower(event) AS l) = 'purchase' OR l = 'signed up' ORDER BY l",
    ),
    [['Purchase'], ['signed up']],
  );
});

t.test('a number after a JSON array property is its element, counted from 1', async (t) => {
  t.same(
    await rows(
      "SELECT properties.arr.1, properties.arr[3], properties['arr'].2 FROM events WHERE event = '$pageview' ORDER BY timestamp",
    ),
    [
      ['10', '30', '20'],
      ['1', null, null],
    ],
  );
});

t.test("HogQL's function names run with HogQL's meaning", async (t) => {
  t.same(
    await rows(
      `SELECT toInt('42'), toInt('4x'), toFloat('2.5'), toDate('2026-03-05'), toDate('not a date'),
              toDateTime('2026-03-05 10:00:00'), dateName('month', toDate('2026-03-05')), split_part('a/b/c', '/', 2),
              left('abcdef', 2), toUUID('nope'), md5('a')`,
    ),
    [
      [
        42,
        null,
        2.5,
        '2026-03-05',
        null,
        '2026-03-05 10:00:00.000',
        'March',
        'b',
        'ab',
        null,
        '0CC175B9C0F1B6A831C399E269772661',
      ],
    ],
  );
  t.same(await rows('SELECT sparkline([1, 2])'), [[['__hx_tag', 'Sparkline', 'data', [1, 2]]]]);
  t.same(
    await rows("SELECT toDate(timestamp), toFloat(properties.price) FROM events WHERE event = 'Purchase'"),
    [['2026-03-03', 12.5]],
  );
  // lag is lagInFrame of a Nullable over the whole partition, as HogQL prints it: NULL before the first row.
  t.same(await rows('SELECT event, lag(event) OVER (ORDER BY timestamp) FROM events ORDER BY timestamp'), [
    ['$pageview', null],
    ['$pageview', '$pageview'],
    ['signed up', '$pageview'],
    ['Purchase', 'signed up'],
  ]);
  t.same(await rows("SELECT string_agg(event, ',') FROM (SELECT event FROM events ORDER BY timestamp)"), [
    ['$pageview,$pageview,signed up,Purchase'],
  ]);
});
