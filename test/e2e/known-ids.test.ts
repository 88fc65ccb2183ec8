/**
 * Ingest reads which distinct ids have a person, and which groups are stored, when it starts (KnownIds), so
 * that a new id or group needs no lookup. Two things must hold, each checked against a real `weir start`:
 * - an id or group stored by an earlier run is still known after a restart: its events keep their person,
 *   and the group's properties are merged into, not started afresh;
 * - a new user's event, and a new group's `$groupidentify` (of a group type the project never had), are
 *   answered while a long query holds the embedded engine. Before, their lookups waited for the running
 *   statement to finish.
 */
import t from 'tap';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  spawnWeir,
  tempDir,
  waitFor,
  type SpawnedWeir,
} from '../helpers/weir.ts';

const loaded = (w: SpawnedWeir): Promise<true> =>
  waitFor(
    () => Promise.resolve(/known groups read/.test(w.output()) ? true : undefined),
    30_000,
    'the known distinct ids and groups to be read',
  );

async function capture(w: SpawnedWeir, distinctId: string, event = 'seen'): Promise<number> {
  const res = await fetch(`${w.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: PROJECT_API_KEY, event, distinct_id: distinctId }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function identifyGroup(w: SpawnedWeir, key: string, set: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${w.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({
      api_key: PROJECT_API_KEY,
      event: '$groupidentify',
      distinct_id: `admin-of-${key}`,
      properties: { $group_type: 'company', $group_key: key, $group_set: set },
    }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function query(w: SpawnedWeir, sql: string): Promise<{ status: number; results: unknown[][] }> {
  const res = await fetch(`${w.url}/api/projects/1/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: sql } }),
  });
  const body = (await res.json()) as { results?: unknown[][] };
  return { status: res.status, results: body.results ?? [] };
}

async function stop(w: SpawnedWeir): Promise<void> {
  w.child.kill('SIGTERM');
  await w.exited;
}

t.test('an id stored by an earlier run keeps its person after a restart', async (t) => {
  const dataDir = tempDir();
  const first = await spawnWeir(dataDir);
  t.teardown(() => first.child.kill('SIGKILL'));
  t.equal(await capture(first, 'returning', 'before'), 200);
  t.equal(await identifyGroup(first, 'acme', { plan: 'free' }), 200);
  await stop(first);

  const second = await spawnWeir(dataDir);
  t.teardown(() => second.child.kill('SIGKILL'));
  await loaded(second);
  t.match(second.output(), /"keys":2,.*known distinct ids read/, 'the two stored ids were read');
  t.match(second.output(), /"keys":1,.*known groups read/, 'and the one stored group');
  t.equal(await identifyGroup(second, 'acme', { seats: 5 }), 200);
  const groups = await query(second, 'SELECT group_key, properties FROM groups');
  t.same(
    groups.results.map(([key, properties]) => [key, JSON.parse(String(properties)) as unknown]),
    [['acme', { plan: 'free', seats: 5 }]],
    "the group's properties from before the restart are kept: it was looked up, not made anew",
  );
  t.equal(await capture(second, 'returning', 'after'), 200);
  t.equal(await capture(second, 'brand-new', 'after'), 200);
  const { results } = await query(
    second,
    "SELECT distinct_id, uniqExact(person_id) AS persons, count() AS n FROM events WHERE distinct_id IN ('returning', 'brand-new') GROUP BY distinct_id ORDER BY distinct_id",
  );
  t.same(
    results,
    [
      ['brand-new', 1, 1],
      ['returning', 1, 2],
    ],
    "the returning id's events, before and after the restart, name one person",
  );
  await stop(second);
});

t.test("a new user's event is answered while a long query holds the engine", async (t) => {
  const w = await spawnWeir(tempDir());
  t.teardown(() => w.child.kill('SIGKILL'));
  t.equal(await capture(w, 'seed'), 200);
  await loaded(w);
  // 0.3-3 s of engine time each on this project's 2-core machine; two, so that one is surely running.
  const slow =
    "SELECT sum(cityHash64(toString(x))) AS h FROM events ARRAY JOIN range(20000000) AS x WHERE distinct_id = 'seed'";
  const answered: string[] = [];
  const queries = [0, 1].map((i) =>
    query(w, slow).then((r) => {
      answered.push(`query ${i}`);
      return r.status;
    }),
  );
  await waitFor(
    async () => {
      const text = await (await fetch(`${w.url}/metrics`)).text();
      // A project's reads run one at a time: the second waits for a reader connection.
      return Number(/^weir_store_reads_waiting\{kind="adhoc"\} (\S+)$/m.exec(text)?.[1] ?? 0) >= 1
        ? true
        : undefined;
    },
    20_000,
    'one query running and one waiting for the engine',
  );
  t.equal(await capture(w, 'first-seen-during-a-long-query'), 200);
  answered.push('capture');
  t.equal(await identifyGroup(w, 'new-during-a-long-query', { plan: 'trial' }), 200);
  answered.push('group');
  t.same(await Promise.all(queries), [200, 200], 'both queries are answered');
  t.same(
    answered.slice(0, 2),
    ['capture', 'group'],
    `the event and the new group were answered first (${answered.join(', ')})`,
  );
  const { results } = await query(
    w,
    "SELECT count() FROM events WHERE distinct_id = 'first-seen-during-a-long-query'",
  );
  t.same(results, [[1]], 'and stored');
  const metrics = await (await fetch(`${w.url}/metrics`)).text();
  t.match(
    metrics,
    /^weir_ingest_person_lookups_total\{result="new"\} [1-9]/m,
    'the metrics count the id as new, not looked up',
  );
  await stop(w);
});
