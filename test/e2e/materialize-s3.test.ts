/**
 * Materialization on S3 (a real S3-compatible server, moto, on loopback), and the object store failing
 * (issue 25's fault tests): while the server does not answer, a refresh fails and says why, runs keep being
 * answered (from the result the pool holds), and once it answers again the next refresh completes.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createEndpoint, endpointsApi, runOk } from '../helpers/endpoints.ts';
import { captureAll } from '../helpers/query-api.ts';
import { startS3Server, type S3Server } from '../helpers/s3-server.ts';
import { startTestWeir, waitFor } from '../helpers/weir.ts';

let s3: S3Server | undefined;
try {
  s3 = await startS3Server();
} catch (err) {
  const why = `materialization on S3 needs an S3 server: ${(err as Error).message}`;
  if (process.env['CI']) t.fail(why);
  else t.comment(`SKIPPED: ${why}`);
}

if (s3) {
  const server = s3;
  t.teardown(() => server.close());
  const bucket = `weir-${randomBytes(4).toString('hex')}`;
  await server.createBucket(bucket);
  const w = await startTestWeir({
    WEIR_S3_BUCKET: bucket,
    WEIR_S3_ENDPOINT: server.endpoint,
    WEIR_S3_ACCESS_KEY_ID: 'test',
    WEIR_S3_SECRET_ACCESS_KEY: 'test',
    WEIR_S3_FORCE_PATH_STYLE: 'true',
    // A paused server fails a request after this; three tries, so a refresh fails within seconds.
    WEIR_S3_TIMEOUT_SECONDS: '1',
  });
  t.teardown(() => w.close());

  const batch = Array.from({ length: 40 }, (_, i) => ({
    event: '$pageview',
    distinct_id: `u${i % 5}`,
    timestamp: new Date(Date.UTC(2020, 0, 1 + (i % 10))).toISOString(),
    properties: { $browser: ['Chrome', 'Safari'][i % 2] },
  }));
  await captureAll(w, batch);

  type State = { status: string; last_materialized_at: string | null; error: string | null };
  const state = async (): Promise<State> =>
    ((await endpointsApi(w, 'GET', 'daily/')).json as { materialization: State }).materialization;
  const until = (what: string, ok: (s: State) => boolean): Promise<State> =>
    waitFor(
      async () => {
        const s = await state();
        return ok(s) ? s : undefined;
      },
      60_000,
      what,
    );

  t.test('a version is materialized to S3 and served from it', async (t) => {
    await createEndpoint(w, {
      name: 'daily',
      query: {
        kind: 'HogQLQuery',
        query: `SELECT properties.$browser AS b, count() AS n FROM events
          WHERE timestamp >= {variables.since} GROUP BY b ORDER BY b`,
      },
      variables: { since: { type: 'date' } },
      is_materialized: true,
    });
    await until('the first refresh', (s) => s.status === 'completed');
    const variables = { since: '2020-01-05' };
    const served = await runOk(w, 'daily', { variables, refresh: 'force' });
    t.equal(served.endpoint_materialized, true);
    t.same(served.results, (await runOk(w, 'daily', { variables, refresh: 'direct' })).results);
  });

  t.test('S3 unanswering: the refresh fails and says so; runs still answer; then it recovers', async (t) => {
    const before = await state();
    await server.pause();
    try {
      t.equal((await endpointsApi(w, 'POST', 'daily/materialize')).status, 202);
      const failed = await until('the refresh to fail', (s) => s.status === 'failed');
      t.ok(failed.error, `the error is shown: ${failed.error}`);
      t.equal(failed.last_materialized_at, before.last_materialized_at, 'the previous result is kept');
      const run = await runOk(w, 'daily', { variables: { since: '2020-01-02' }, refresh: 'force' });
      t.equal(run.endpoint_materialized, true, 'answered from the result the pool holds');
    } finally {
      server.resume();
    }
    t.equal((await endpointsApi(w, 'POST', 'daily/materialize')).status, 202);
    const recovered = await until(
      'a refresh after S3 is back',
      (s) => s.status === 'completed' && s.last_materialized_at !== before.last_materialized_at,
    );
    t.equal(recovered.error, null);
  });
}
