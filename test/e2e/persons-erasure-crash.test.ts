/**
 * An erasure survives what a store does to it (issue 43): a delete the engine refuses (a table it needs moved
 * away by the operator) leaves it `running`, saying why, and it is tried again;
 * `weir start` is killed with SIGKILL meanwhile; the operator fixes the table; the next start completes it.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { bearer, capture, deletionWhen, personPage, type DeletionJson } from '../helpers/persons.ts';
import { rows as queryRows } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, request, spawnWeir, tempDir, weirSql, type SpawnedWeir } from '../helpers/weir.ts';

const dataDir = tempDir('weir-erasure-crash-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

async function start(): Promise<SpawnedWeir> {
  const w = await spawnWeir(dataDir);
  t.teardown(() => void w.child.kill('SIGKILL'));
  return w;
}

async function stop(w: SpawnedWeir): Promise<void> {
  w.child.kill('SIGTERM');
  if ((await w.exited) !== 0) throw new Error(`SIGTERM did not end weir cleanly:\n${w.output()}`);
}

t.test('a deletion refused by the engine, a kill -9, a fix, and a restart that completes it', async (t) => {
  let w = await start();
  await capture(w, PROJECT_API_KEY, [
    { event: 'a', distinct_id: 'gone', properties: { $set: { email: 'gone@example.com' } } },
    { event: 'b', distinct_id: 'gone', properties: {} },
    { event: 'c', distinct_id: 'kept', properties: {} },
  ]);
  const person = (await personPage(w, 'distinct_id=gone')).results[0]!;
  await stop(w);
  // The quarantine table moved away: the erasure's delete of the rows set aside fails until it is back.
  const moved = await weirSql(dataDir, 'RENAME TABLE quarantine TO quarantine_moved');
  t.equal(moved.code, 0, moved.stderr);

  w = await start();
  const res = await request(`${w.url}/api/projects/1/persons/${person.id}/?delete_events=true`, {
    method: 'DELETE',
    headers: bearer(),
  });
  t.equal(res.status, 202, res.text);
  const id = (res.json as DeletionJson).id;
  const failing = await deletionWhen(w, id, (d) => d.last_error !== null);
  t.equal(failing.status, 'running', 'a deletion the engine refuses stays running');
  t.match(failing.last_error, /quarantine/, 'and says why');
  t.ok(failing.attempts >= 1);

  w.child.kill('SIGKILL');
  await w.exited;
  const back = await weirSql(dataDir, 'RENAME TABLE quarantine_moved TO quarantine');
  t.equal(back.code, 0, back.stderr);

  w = await start();
  const done = await deletionWhen(w, id, (d) => d.status === 'done');
  t.match(done.counts, { persons: 1, distinct_ids: 1, events: 2 });
  t.ok(done.attempts >= 2, 'taken again after the crash');
  t.same(await queryRows(w, "SELECT count() FROM events WHERE distinct_id = 'gone'"), [[0]]);
  t.same(await queryRows(w, "SELECT count() FROM events WHERE distinct_id = 'kept'"), [[1]]);
  t.same((await personPage(w, 'distinct_id=gone')).results, []);
  await stop(w);
});
