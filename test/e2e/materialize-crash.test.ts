/**
 * A refresh interrupted by `kill -9` (issue 25's fault tests): Weir is killed while a materialization is
 * being refreshed, and started again on the same data directory. The refresh its dead process had claimed
 * is taken over at once, the version ends `completed`, its runs equal the direct ones, and the version's
 * objects are the manifest and the one result it names: nothing a crash left is kept.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  post,
  request,
  spawnWeir,
  tempDir,
  waitFor,
} from '../helpers/weir.ts';

const dataDir = tempDir();
const auth = { Authorization: `Bearer ${PERSONAL_API_KEY}`, 'Content-Type': 'application/json' };

async function api(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await request(`${url}/api/projects/1/endpoints/${path}`, {
    method,
    headers: auth,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.json as Record<string, unknown>;
}

type State = { status: string; last_materialized_at: string | null; error: string | null };
const stateOf = async (url: string): Promise<State> =>
  (await api(url, 'GET', 'crashy/'))['materialization'] as State;

t.test('a refresh killed mid-way is taken over after a restart, leaving no orphan', async (t) => {
  const first = await spawnWeir(dataDir);
  t.teardown(() => {
    if (first.child.exitCode === null) first.child.kill('SIGKILL');
  });
  const batch = Array.from({ length: 20_000 }, (_, i) => ({
    event: i % 3 === 0 ? 'signed up' : '$pageview',
    distinct_id: `u${i % 500}`,
    timestamp: new Date(Date.UTC(2020, 0, 1 + (i % 28), i % 24)).toISOString(),
    properties: { $browser: ['Chrome', 'Safari', 'Edge'][i % 3] },
  }));
  const res = await post(
    `${first.url}/batch/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, historical_migration: true, batch }),
  );
  t.equal(res.status, 200);
  await api(first.url, 'POST', '', {
    name: 'crashy',
    query: {
      kind: 'HogQLQuery',
      query: `SELECT properties.$browser AS b, toDate(timestamp) AS d, count() AS n FROM events
        WHERE event = {variables.event} GROUP BY b, d ORDER BY b, d`,
    },
    variables: { event: { type: 'string' } },
    is_materialized: true,
  });
  // Killed as soon as the refresh is seen under way (or, if it was quicker than the poll, just after).
  const seen = await waitFor(
    async () => {
      const s = (await stateOf(first.url)).status;
      return s === 'running' || s === 'completed' ? s : undefined;
    },
    30_000,
    'the refresh to start',
  );
  first.child.kill('SIGKILL');
  await first.exited;
  t.comment(`killed with the refresh ${seen}`);

  const second = await spawnWeir(dataDir);
  t.teardown(() => {
    if (second.child.exitCode === null) second.child.kill('SIGKILL');
  });
  const done = await waitFor(
    async () => {
      const s = await stateOf(second.url);
      return s.status === 'completed' ? s : undefined;
    },
    60_000,
    'the refresh to be taken over and completed',
  );
  t.equal(done.error, null);
  for (const event of ['signed up', '$pageview']) {
    const run = async (refresh: string): Promise<Record<string, unknown>> =>
      api(second.url, 'POST', 'crashy/run', { variables: { event }, refresh });
    const served = await run('force');
    t.equal(served['endpoint_materialized'], true);
    t.same(served['results'], (await run('direct'))['results'], `${event}: the same rows as the raw data`);
  }
  // Another refresh sweeps whatever the crash left: then only the manifest and its object remain.
  await api(second.url, 'POST', 'crashy/materialize');
  await waitFor(
    async () => {
      const s = await stateOf(second.url);
      return s.status === 'completed' && s.last_materialized_at !== done.last_materialized_at ? s : undefined;
    },
    60_000,
    'a second refresh',
  );
  const root = join(dataDir, 'objects');
  const listed = (): string[] =>
    readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.parquet') || f.endsWith('manifest.json'))
      .sort();
  const manifest = listed().find((f) => f.endsWith('manifest.json'))!;
  const named = (JSON.parse(readFileSync(join(root, manifest), 'utf8')) as { objectKey: string }).objectKey;
  // The sweep runs after the catalog says completed, so it is waited for (within a deadline), not assumed.
  const files = await waitFor(
    () => {
      const now = listed();
      return Promise.resolve(now.length === 2 ? now : undefined);
    },
    30_000,
    'the sweep to leave the manifest and its object',
  ).catch(() => listed());
  t.same(files, [manifest, named].sort(), 'the manifest and the result it names, nothing else');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);
});
