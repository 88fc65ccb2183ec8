/**
 * A query that waits for the embedded engine (busy with the queries ahead of it) for longer than the run's
 * time limit is given up when its turn comes, without running: its caller has been answered 504, and running
 * it would only hold up the queries behind it. (One project's reads run one at a time by default,
 * WEIR_STORE_READERS_PER_PROJECT; its ad-hoc limit is raised here so that they queue rather than are refused.)
 */
import t from 'tap';
import { queryApi } from '../helpers/query-api.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir({ WEIR_QUERY_TIMEOUT_SECONDS: '1', WEIR_QUERY_ADHOC_CONCURRENCY: '100' });
t.teardown(() => w.close());

/**
 * ~0.1-0.25 s of engine time over the one seeded event: the first query runs well within the 1 s limit, and
 * 24 of them queue for several times longer than it.
 */
const SLOW =
  "SELECT sum(cityHash64(toString(x))) AS h FROM events ARRAY JOIN range(5000000) AS x WHERE distinct_id = 'seed'";
const QUERIES = 24;

t.test('a query that waits for the engine past its time limit is answered 504 and never run', async (t) => {
  t.equal(
    (
      await post(
        `${w.url}/i/v0/e/`,
        JSON.stringify({ api_key: PROJECT_API_KEY, event: 'queued', distinct_id: 'seed' }),
      )
    ).status,
    200,
  );
  const answers = await Promise.all(Array.from({ length: QUERIES }, () => queryApi(w, SLOW)));
  const statuses = answers.map((a) => a.status);
  t.ok(
    statuses.every((s) => s === 200 || s === 504),
    `each query is answered 200 or 504 (${statuses.join(' ')})`,
  );
  // Run, not given up: answered, or stopped by its own limit on a machine too busy to finish it in 1 s.
  t.notMatch(answers[0]!.text, /was not run/, `the first query ran: ${answers[0]!.text.slice(0, 300)}`);
  const givenUp = answers.filter((a) => a.status === 504 && /was not run/.test(a.text));
  t.ok(
    givenUp.length > 0,
    `queries that waited past the limit were given up (${givenUp.length} of ${QUERIES})`,
  );
  for (const a of givenUp)
    t.match(a.json, {
      type: 'timeout',
      code: 'timeout',
      detail: /^The query waited [\d.]+ s for the engine/,
    });
  t.equal((await queryApi(w, "SELECT count() AS n FROM events WHERE distinct_id = 'seed'")).status, 200);
});
