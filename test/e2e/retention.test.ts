/**
 * Event retention (SPEC §3 `event_retention_days`, issue 43) on the embedded store and on a ClickHouse server:
 * a project that keeps 30 days loses older events (a historical import's included) at the next sweep, a
 * project without retention keeps everything, and a cached answer from before is not served again.
 */
import t, { type Test } from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { createEndpoint, hogql, runOk } from '../helpers/endpoints.ts';
import { bearer } from '../helpers/persons.ts';
import { startServerWeir } from '../helpers/server-weir.ts';
import { rows as queryRows } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, post, request, startTestWeir, waitFor, type TestWeir } from '../helpers/weir.ts';

const ch = await clickHouseForTest();
t.teardown(() => ch.stop());
const DAY = 86_400_000;

async function scenario(t: Test, w: TestWeir): Promise<void> {
  const made = await request(`${w.url}/api/projects/`, {
    method: 'POST',
    headers: bearer(),
    body: JSON.stringify({ name: 'kept' }),
  });
  const kept = made.json as { id: number; api_token: string; event_retention_days: number | null };
  t.equal(kept.event_retention_days, null, 'a new project keeps events for ever by default');
  const ages = [0, 10, 29, 31, 90, 400];
  const batch = ages.map((days) => ({
    event: `aged_${days}`,
    distinct_id: 'u',
    timestamp: new Date(Date.now() - days * DAY).toISOString(),
    properties: {},
  }));
  for (const key of [PROJECT_API_KEY, kept.api_token]) {
    const res = await post(
      `${w.url}/batch/`,
      JSON.stringify({ api_key: key, historical_migration: true, batch }),
    );
    t.equal(res.status, 200, res.text);
  }
  await createEndpoint(w, { name: 'all_events', query: hogql('SELECT count() FROM events') });
  t.same((await runOk(w, 'all_events')).results, [[6]]);

  const patched = await request(`${w.url}/api/projects/1/`, {
    method: 'PATCH',
    headers: bearer(),
    body: JSON.stringify({ event_retention_days: 30 }),
  });
  t.equal(patched.status, 200, patched.text);
  const left = await waitFor(
    async () => {
      const rows = await queryRows(w, 'SELECT event FROM events ORDER BY event');
      return rows.length === 3 ? rows : undefined;
    },
    30_000,
    'the sweep',
  );
  t.same(left, [['aged_0'], ['aged_10'], ['aged_29']], 'only the last 30 days are kept');
  t.same(
    (await queryRows(w, 'SELECT count() FROM events', { project: kept.id }))[0],
    [6],
    'a project without retention keeps everything',
  );
  // Cached for 300 s: only the sweep's mark on the project (set once its deletes are done) ends it sooner.
  const after = await waitFor(
    async () => {
      const run = await runOk(w, 'all_events');
      return run.results[0]?.[0] === 3 ? run : undefined;
    },
    30_000,
    'the cached answer to go',
  );
  t.equal(after.is_cached, false, 'the answer cached before the sweep is not served');
}

const env = { WEIR_RETENTION_INTERVAL_SECONDS: '1' };

t.test('on the embedded store', async (t) => {
  const w = await startTestWeir(env);
  t.teardown(() => w.close());
  await scenario(t, w);
});

t.test('on a ClickHouse server', async (t) => {
  await scenario(t, await startServerWeir(t, ch, 'retention', env));
});
