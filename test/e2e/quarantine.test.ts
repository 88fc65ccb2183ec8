/**
 * The issue's attack and a row the engine refuses anyway, end to end on `weir start` (embedded), as a user
 * meets them: HTTP in, the query API, the quarantine API, `weir quarantine`, restarts on the same data.
 *
 * The refusal is the engine's own: a CHECK constraint an operator adds to `events` (`weir sql`) makes it
 * refuse every row named `poison` (VIOLATED_CONSTRAINT), whatever the block holds beside it. Dropping the
 * constraint is the fix, after which a replay stores them.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import t from 'tap';
import { ok as okQuery } from '../helpers/query-api.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  runWeir,
  spawnWeir,
  tempDir,
  waitFor,
  weirSql,
  type SpawnedWeir,
} from '../helpers/weir.ts';

const dataDir = tempDir('weir-quarantine-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const auth = { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' };

async function start(): Promise<SpawnedWeir> {
  const w = await spawnWeir(dataDir);
  t.teardown(() => void w.child.kill('SIGKILL'));
  await waitFor(
    async () => ((await request(`${w.url}/_ready`)).status === 200 ? true : undefined),
    60_000,
    'ready',
  );
  return w;
}

async function stop(w: SpawnedWeir): Promise<void> {
  w.child.kill('SIGTERM');
  if ((await w.exited) !== 0) throw new Error(`SIGTERM did not end weir cleanly:\n${w.output()}`);
}

/** The uuids stored of `uuids`, each with how many rows it has. */
async function storedCounts(w: SpawnedWeir, uuids: readonly string[]): Promise<Record<string, number>> {
  const list = uuids.map((u) => `'${u}'`).join(', ');
  const body = await okQuery(
    w,
    `SELECT toString(uuid), count() FROM events WHERE toString(uuid) IN (${list}) GROUP BY uuid`,
  );
  return Object.fromEntries(body.results.map(([u, n]) => [u as string, Number(n)]));
}

async function listQuarantine(w: SpawnedWeir, status = ''): Promise<Record<string, unknown>[]> {
  const res = await request(`${w.url}/api/projects/1/quarantine/${status ? `?status=${status}` : ''}`, {
    headers: auth,
  });
  t.equal(res.status, 200, res.text);
  return (res.json as { results: Record<string, unknown>[] }).results;
}

let w: SpawnedWeir;
const surrogate = randomUUID();
const good = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
const poison = [randomUUID(), randomUUID(), randomUUID()];

t.test('the operator adds a constraint that makes the engine refuse some rows', async (t) => {
  // The schema exists once Weir has started on the directory.
  await stop(await start());
  const added = await weirSql(dataDir, "ALTER TABLE events ADD CONSTRAINT no_poison CHECK event != 'poison'");
  t.equal(added.code, 0, added.stderr);
  w = await start();
});

t.test("the issue's request is stored with U+FFFD, and nothing behind it stops", async (t) => {
  // Lone surrogates as JSON \u escapes in a property key and value, sent as the issue sent them.
  const raw = `{"api_key":"${PROJECT_API_KEY}","event":"x","distinct_id":"a","uuid":"${surrogate}","properties":{"k\\ud800":"v\\udc00","nested":{"n":1}}}`;
  const res = await post(`${w.url}/i/v0/e/`, raw);
  t.equal(res.status, 200, res.text);
  const after = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'after', distinct_id: 'a', uuid: good[0] }),
  );
  t.equal(after.status, 200);
  t.same(await storedCounts(w, [surrogate, good[0]!]), { [surrogate]: 1, [good[0]!]: 1 });
  const body = await okQuery(
    w,
    `SELECT properties.\`k\uFFFD\`, properties.nested.n FROM events WHERE toString(uuid) = '${surrogate}'`,
  );
  t.same(body.results, [['v\uFFFD', 1]], 'its properties read back, with U+FFFD where the surrogates were');
});

t.test('rows the engine refuses are set aside; the rest of their batch is stored', async (t) => {
  const batch = [
    { event: 'fine', distinct_id: 'p1', uuid: good[1] },
    { event: 'poison', distinct_id: 'p1', uuid: poison[0] },
    { event: 'fine', distinct_id: 'p2', uuid: good[2] },
    { event: 'poison', distinct_id: 'p3', uuid: poison[1] },
  ];
  const res = await post(`${w.url}/batch/`, JSON.stringify({ api_key: PROJECT_API_KEY, batch }));
  t.equal(res.status, 200, res.text);
  // One alone in its request, and so alone in what the store applies at once: it stops nothing either.
  for (const [event, uuid] of [
    ['poison', poison[2]],
    ['fine', good[3]],
  ] as const) {
    const one = await post(
      `${w.url}/i/v0/e/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, event, distinct_id: 'p4', uuid }),
    );
    t.equal(one.status, 200);
  }
  t.same(await storedCounts(w, [...good, ...poison]), Object.fromEntries(good.map((u) => [u, 1])));
  const held = await listQuarantine(w);
  t.same(held.map((r) => r['event_uuid']).sort(), [...poison].sort());
  for (const r of held)
    t.match(r, { table: 'events', reason: 'VIOLATED_CONSTRAINT', status: 'held', row: { event: 'poison' } });
  const warnings = await okQuery(
    w,
    "SELECT count() FROM ingestion_warnings WHERE type = 'row_quarantined' AND source = 'store'",
  );
  t.same(warnings.results, [[3]], 'an ingestion warning for each, which the project can query');
  const metrics = (await request(`${w.url}/metrics`)).text;
  t.match(metrics, /weir_ingest_rows_quarantined_total\{table="events",reason="VIOLATED_CONSTRAINT"\} 3/);
  const other = await request(`${w.url}/api/projects/2/quarantine/`, { headers: auth });
  t.ok([403, 404].includes(other.status), 'no other project is listed');
});

t.test('a restart becomes ready with nothing lost and the quarantine kept', async (t) => {
  await stop(w);
  w = await start();
  t.same(
    await storedCounts(w, [surrogate, ...good]),
    Object.fromEntries([surrogate, ...good].map((u) => [u, 1])),
  );
  t.equal((await listQuarantine(w, 'held')).length, 3);
});

t.test('after the fix, `weir quarantine` lists and replays them on the stopped data directory', async (t) => {
  await stop(w);
  const dropped = await weirSql(dataDir, 'ALTER TABLE events DROP CONSTRAINT no_poison');
  t.equal(dropped.code, 0, dropped.stderr);
  const listed = await runWeir(['quarantine', 'list', '--data-dir', dataDir, '--status', 'held']);
  t.equal(listed.code, 0, listed.stderr);
  t.equal(listed.stdout.trim().split('\n').length, 3);
  // One by the command, by its id; the others by the API once Weir runs again.
  const first = JSON.parse(listed.stdout.split('\n')[0]!) as { id: string; eventUuid: string };
  const replayed = await runWeir(['quarantine', 'replay', '--data-dir', dataDir, '--id', first.id]);
  t.equal(replayed.code, 0, replayed.stderr);
  t.match(JSON.parse(replayed.stdout), { id: first.id, result: 'stored' });

  w = await start();
  const res = await post(`${w.url}/api/projects/1/quarantine/replay/`, '{}', auth);
  t.equal(res.status, 200, res.text);
  t.match(res.json, { stored: 2, refused: 0 });
  t.same(
    await storedCounts(w, [...good, ...poison]),
    Object.fromEntries([...good, ...poison].map((u) => [u, 1])),
    'every event stored, once',
  );
  t.same(await listQuarantine(w, 'held'), []);
  const again = await post(`${w.url}/api/projects/1/quarantine/replay/`, '{}', auth);
  t.match(again.json, { stored: 0, refused: 0, results: [] });
  await stop(w);
});
