/**
 * `weir backup` and `weir restore` (issue 43) as an operator runs them: against a Weir that is running
 * (through its control socket) and one that is stopped, to a directory and to S3 (moto), then restored into
 * an empty data directory and compared with the original table by table, row by row, and catalog by catalog;
 * a Weir started on the restored directory serves its keys, endpoints and materializations.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { bearer, capture } from '../helpers/persons.ts';
import { sqlRows } from '../helpers/roles.ts';
import { startS3Server } from '../helpers/s3-server.ts';
import {
  PROJECT_API_KEY,
  request,
  runWeir,
  spawnWeir,
  tempDir,
  waitFor,
  type SpawnedWeir,
} from '../helpers/weir.ts';

const auth = bearer();

async function api(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await request(`${url}/api/projects/1/${path}`, {
    method,
    headers: auth,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.json;
}

async function stop(w: SpawnedWeir): Promise<void> {
  w.child.kill('SIGTERM');
  await w.exited;
}

/**
 * Every table of a stopped Weir's data directory: its rows and a sum of one hash a row over every column
 * (order-free; a row missing, added or changed changes it). One `weir sql` a directory: each is a process.
 */
async function tables(dataDir: string, names: readonly string[]): Promise<Record<string, string>> {
  const each = names.map(
    (n) =>
      `SELECT '${n}' AS t, toString(count()) AS n, toString(sum(cityHash64(formatRow('TSV', *)))) AS h FROM \`${n}\``,
  );
  const rows = await sqlRows<Record<string, unknown>>(dataDir, each.join(' UNION ALL '));
  return Object.fromEntries(rows.map((r) => [String(r['t']), `${String(r['n'])} rows, ${String(r['h'])}`]));
}

/** Events of users with $set, an alias, a group, a person deleted: every table and catalog record has some. */
async function fill(url: string): Promise<void> {
  const events = Array.from({ length: 3_000 }, (_, i) => ({
    event: i % 4 === 0 ? 'signed up' : '$pageview',
    distinct_id: `user-${i % 60}`,
    timestamp: new Date(Date.UTC(2026, 10, 1 + (i % 28), i % 24)).toISOString(),
    properties: {
      $browser: ['Chrome', 'Safari', 'Firefox'][i % 3],
      $set: { email: `user-${i % 60}@example.com` },
      $groups: { company: `co-${i % 5}` },
    },
  }));
  await capture({ url }, PROJECT_API_KEY, events);
  await capture({ url }, PROJECT_API_KEY, [
    { event: '$identify', distinct_id: 'user-1', properties: { $anon_distinct_id: 'anon-1' } },
    {
      event: '$groupidentify',
      distinct_id: 'user-2',
      properties: { $group_type: 'company', $group_key: 'co-1', $group_set: { plan: 'pro' } },
    },
  ]);
  await api(url, 'POST', 'endpoints/', {
    name: 'browsers',
    query: {
      kind: 'HogQLQuery',
      query: `SELECT properties.$browser AS b, count() AS n FROM events WHERE event = {variables.event} GROUP BY b ORDER BY b`,
    },
    variables: { event: { type: 'string' } },
    is_materialized: true,
  });
  await waitFor(
    async () => {
      const e = (await api(url, 'GET', 'endpoints/browsers/')) as { materialization: { status: string } };
      return e.materialization.status === 'completed' ? true : undefined;
    },
    60_000,
    'the materialization',
  );
  const persons = (await api(url, 'GET', 'persons/?distinct_id=user-7')) as { results: { id: string }[] };
  const deletion = (
    await request(`${url}/api/projects/1/persons/${persons.results[0]!.id}/?delete_events=true`, {
      method: 'DELETE',
      headers: auth,
    })
  ).json as { id: string };
  await waitFor(
    async () =>
      ((await api(url, 'GET', `deletions/${deletion.id}/`)) as { status: string }).status === 'done' ||
      undefined,
    60_000,
    'the erasure',
  );
}

const runBody = { variables: { event: '$pageview' } };

t.test('a running Weir backed up to a directory and restored compares equal, table by table', async (t) => {
  const data = tempDir();
  const backupDir = join(tempDir(), 'nightly');
  const restored = tempDir();
  const w = await spawnWeir(data);
  t.teardown(() => void (w.child.exitCode === null && w.child.kill('SIGKILL')));
  await fill(w.url);
  const run = await api(w.url, 'POST', 'endpoints/browsers/run', runBody);

  const b = await runWeir(['backup', backupDir, '--data-dir', data]);
  t.equal(b.code, 0, b.stderr);
  const manifest = JSON.parse(b.stdout) as { tables: Record<string, number>; objects: { count: number } };
  t.ok(manifest.tables['events']! > 2_900, 'the events are in it');
  t.ok(manifest.objects.count > 0, 'the materialization is in it');
  // Weir went on serving all the while.
  t.equal((await request(`${w.url}/_ready`)).status, 200);
  const again = await runWeir(['backup', backupDir, '--data-dir', data]);
  t.equal(again.code, 1);
  t.match(again.stderr, /is not empty: a backup goes to a new place/);
  await stop(w);

  const r = await runWeir(['restore', backupDir, '--data-dir', restored]);
  t.equal(r.code, 0, r.stderr);
  const names = (
    await sqlRows<Record<string, unknown>>(
      restored,
      `SELECT name FROM system.tables WHERE database = 'default' ORDER BY name`,
    )
  ).map((r) => String(r['name']));
  t.same(names, Object.keys(manifest.tables), 'every table');
  const want = await tables(data, names);
  t.same(await tables(restored, names), want, 'every table, row for row');
  t.comment(JSON.stringify(want));
  t.same(
    JSON.parse(readFileSync(join(restored, 'catalog.json'), 'utf8')),
    JSON.parse(readFileSync(join(data, 'catalog.json'), 'utf8')),
    'the catalog',
  );
  const twice = await runWeir(['restore', backupDir, '--data-dir', restored]);
  t.equal(twice.code, 1);
  t.match(twice.stderr, /is not empty .*: a backup is restored into an empty data directory/);

  const back = await spawnWeir(restored);
  t.teardown(() => void (back.child.exitCode === null && back.child.kill('SIGKILL')));
  const served = (await api(back.url, 'POST', 'endpoints/browsers/run', runBody)) as Record<string, unknown>;
  t.same(served['results'], (run as Record<string, unknown>)['results'], 'the endpoint answers as before');
  t.equal(served['endpoint_materialized'], true, 'from its materialization');
  await capture(back, PROJECT_API_KEY, [{ event: 'after restore', distinct_id: 'user-1' }]);
  const persons = (await api(back.url, 'GET', 'persons/?distinct_id=user-7')) as { results: unknown[] };
  t.equal(persons.results.length, 0, 'the erased person stays erased');
  await stop(back);
});

t.test('a backup to S3 taken while events arrive holds every event acknowledged before it', async (t) => {
  const s3 = await startS3Server();
  t.teardown(() => s3.close());
  await s3.createBucket('weir-backups');
  const env = {
    WEIR_S3_ENDPOINT: s3.endpoint,
    WEIR_S3_ACCESS_KEY_ID: 'test',
    WEIR_S3_SECRET_ACCESS_KEY: 'test',
    WEIR_S3_FORCE_PATH_STYLE: 'true',
  };
  const data = tempDir();
  const restored = tempDir();
  const w = await spawnWeir(data);
  t.teardown(() => void (w.child.exitCode === null && w.child.kill('SIGKILL')));

  let sent = 0;
  let flowing = true;
  const acked: number[] = [];
  const flow = (async () => {
    while (flowing) {
      const n = sent++;
      await capture(w, PROJECT_API_KEY, [{ event: 'tick', distinct_id: `d-${n % 10}`, properties: { n } }]);
      acked.push(n);
    }
  })();
  await waitFor(() => Promise.resolve(acked.length >= 50 ? true : undefined), 30_000, 'events to flow');
  const before = acked.length;
  const b = await runWeir(['backup', 's3://weir-backups/weir/2026-12-04', '--data-dir', data], env);
  const after = acked.length;
  flowing = false;
  await flow;
  t.equal(b.code, 0, b.stderr);
  await stop(w);

  const r = await runWeir(['restore', 's3://weir-backups/weir/2026-12-04', '--data-dir', restored], env);
  t.equal(r.code, 0, r.stderr);
  const ticks = (
    await sqlRows<Record<string, unknown>>(
      restored,
      `SELECT toUInt32(JSONExtractInt(properties, 'n')) AS n FROM events ORDER BY n`,
    )
  ).map((row) => Number(row['n']));
  const got = new Set(ticks);
  t.ok(
    acked.slice(0, before).every((n) => got.has(n)),
    `all ${before} events acknowledged before the backup are in it`,
  );
  t.ok(ticks.length <= after + 1, 'nothing after the backup finished');
  t.equal(got.size, ticks.length, 'none twice');
  t.comment(`${before} acknowledged before the backup, ${ticks.length} in it, ${after} by its end`);
  const manifest = JSON.parse(r.stdout) as { tables: Record<string, number> };
  t.equal(manifest.tables['events'], ticks.length);
});

t.test(
  'a Weir killed leaves its socket behind harmlessly; a stopped one is backed up by opening its directory',
  async (t) => {
    const data = tempDir();
    const killed = await spawnWeir(data);
    await capture(killed, PROJECT_API_KEY, [{ event: 'one', distinct_id: 'a' }]);
    killed.child.kill('SIGKILL');
    await killed.exited;
    t.ok(existsSync(join(data, 'weir.sock')), 'kill -9 left the socket');
    const w = await spawnWeir(data);
    t.teardown(() => void (w.child.exitCode === null && w.child.kill('SIGKILL')));
    const live = await runWeir(['backup', join(tempDir(), 'live'), '--data-dir', data]);
    t.equal(live.code, 0, live.stderr);
    await stop(w);
    t.notOk(existsSync(join(data, 'weir.sock')), 'a clean stop removes it');
    const dest = join(tempDir(), 'b');
    const b = await runWeir(['backup', dest, '--data-dir', data]);
    t.equal(b.code, 0, b.stderr);
    t.same(
      (JSON.parse(b.stdout) as { tables: unknown }).tables,
      (JSON.parse(live.stdout) as { tables: unknown }).tables,
      'the same tables, stopped or running',
    );
    t.equal((JSON.parse(b.stdout) as { tables: Record<string, number> }).tables['events'], 1);

    const missing = await runWeir(['restore', join(tempDir(), 'nothing'), '--data-dir', tempDir()]);
    t.equal(missing.code, 1);
    t.match(missing.stderr, /holds no complete Weir backup/);
    const notData = await runWeir(['backup', join(tempDir(), 'x'), '--data-dir', join(tempDir(), 'empty')]);
    t.equal(notData.code, 1);
    t.match(notData.stderr, /is not a Weir data directory/);
    const url = await runWeir(['backup', 'https://example.com/x', '--data-dir', data]);
    t.equal(url.code, 1);
    t.match(url.stderr, /a backup goes to a directory or to s3:\/\/bucket\/prefix/);
  },
);
