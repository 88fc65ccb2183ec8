/**
 * Queries of the query API queue for the embedded engine's reader connections (one project's run one at a
 * time). Capture must not queue behind them: the store's own work (ingest's person lookups, applying the
 * commit log) runs on a connection of its own. Before the store ordered its calls, a first-seen user's event,
 * whose person ingest must look up, waited for every query queued ahead of it (1.2-3.5 s with six queries of
 * ~0.3 s each, on this project's 2-core machine).
 */
import t from 'tap';
import { queryApi } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, post, request, startTestWeir, waitFor } from '../helpers/weir.ts';

// The project's ad-hoc limit raised: the queries are to queue, not to be refused.
const w = await startTestWeir({ WEIR_QUERY_ADHOC_CONCURRENCY: '100' });
t.teardown(() => w.close());

/** ~0.3 s of engine time over the one seeded event. */
const SLOW =
  "SELECT sum(cityHash64(toString(x))) AS h FROM events ARRAY JOIN range(20000000) AS x WHERE distinct_id = 'seed'";
const QUERIES = 6;

async function engineWaiting(): Promise<number> {
  const text = (await request(`${w.url}/metrics`)).text;
  const line = /^weir_store_engine_waiting (\S+)$/m.exec(text);
  return line ? Number(line[1]) : 0;
}

async function readsWaiting(): Promise<number> {
  const text = (await request(`${w.url}/metrics`)).text;
  const line = /^weir_store_reads_waiting\{kind="adhoc"\} (\S+)$/m.exec(text);
  return line ? Number(line[1]) : 0;
}

function capture(distinctId: string): Promise<{ status: number }> {
  return post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'queued', distinct_id: distinctId }),
  );
}

t.test("a new user's event is stored while the query API's queries wait for the engine", async (t) => {
  t.equal((await capture('seed')).status, 200);
  const answered: string[] = [];
  const queries = Array.from({ length: QUERIES }, (_, i) =>
    queryApi(w, SLOW).then((res) => {
      answered.push(`query ${i}`);
      return res.status;
    }),
  );
  // The queries are in the engine's queue: one runs, the rest wait their turn.
  await waitFor(
    async () => ((await readsWaiting()) >= 3 ? true : undefined),
    20_000,
    'queries waiting for the engine',
  );
  const res = await capture('first-seen-while-queries-wait');
  answered.push('capture');
  t.equal(res.status, 200);
  t.same(await Promise.all(queries), Array<number>(QUERIES).fill(200), 'every query is answered');
  const before = answered.indexOf('capture');
  t.ok(
    before <= 2,
    `the capture was answered before all but a few queries (${before} of ${QUERIES} first: ${answered.join(', ')})`,
  );
  const stored = await w.rows<{ n: string }>(
    "SELECT count() AS n FROM events WHERE distinct_id = 'first-seen-while-queries-wait'",
  );
  t.equal(Number(stored[0]!.n), 1, 'and its event is stored');
  t.equal(await engineWaiting(), 0, 'nothing waits for the engine afterwards');
  t.equal(await readsWaiting(), 0, 'nor for a reader connection');
});
