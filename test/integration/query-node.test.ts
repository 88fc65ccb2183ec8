/**
 * `weir query` nodes against the store owner (`weir ingest`), all in this process on a real nats-server (the
 * catalog in its KV bucket), real chDB and a real S3-compatible server (moto): a query node answers what the
 * owner answers, its engine errors included; the store API answers only the token; a property type set on a
 * node is the owner's; an endpoint changed through one node is not answered from another's cache; one
 * refresh per version across the nodes, served by every node from S3; an owner away is a 503.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { startCaptureRole } from '../../src/roles/capture-role.ts';
import { startIngestRole } from '../../src/roles/ingest-role.ts';
import { startQueryRole, type QueryRole } from '../../src/roles/query-role.ts';
import { createEndpoint, endpointsApi, hogql, runOk, type EndpointBody } from '../helpers/endpoints.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { captureAll, queryApi, rows } from '../helpers/query-api.ts';
import { startS3Server, type S3Server } from '../helpers/s3-server.ts';
import {
  PERSONAL_API_KEY,
  PROJECT_API_KEY,
  request,
  tempDir,
  waitFor,
  type HttpResult,
} from '../helpers/weir.ts';

const TOKEN = 'store-token-for-tests-0123456789';

let s3: S3Server | undefined;
try {
  s3 = await startS3Server();
} catch (err) {
  const why = `query nodes serve materializations from S3, which needs an S3 server: ${(err as Error).message}`;
  if (process.env['CI']) t.fail(why);
  else t.comment(`SKIPPED: ${why}`);
}

if (s3) {
  const server = s3;
  t.teardown(() => server.close());
  const bucket = `weir-${randomBytes(4).toString('hex')}`;
  await server.createBucket(bucket);
  const nats = await startNatsServer();
  t.teardown(() => nats.close());

  const dirs: string[] = [];
  t.teardown(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const configOf = (env: Record<string, string>): ReturnType<typeof loadConfig> => {
    const dir = tempDir();
    dirs.push(dir);
    return loadConfig({
      WEIR_PORT: '0',
      WEIR_DATA_DIR: dir,
      WEIR_NATS_URL: nats.url,
      WEIR_CATALOG: 'nats',
      WEIR_STORE_TOKEN: TOKEN,
      WEIR_BOOTSTRAP_PROJECT_API_KEY: PROJECT_API_KEY,
      WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_API_KEY,
      WEIR_LOG_LEVEL: process.env['WEIR_TEST_LOG_LEVEL'] ?? 'silent',
      WEIR_S3_BUCKET: bucket,
      WEIR_S3_ENDPOINT: server.endpoint,
      WEIR_S3_ACCESS_KEY_ID: 'test',
      WEIR_S3_SECRET_ACCESS_KEY: 'test',
      WEIR_S3_FORCE_PATH_STYLE: 'true',
      ...env,
    });
  };
  const logger = (config: ReturnType<typeof loadConfig>): ReturnType<typeof createLogger> =>
    createLogger(config.logLevel);

  const ingestConfig = configOf({});
  const ingest = await startIngestRole(ingestConfig, logger(ingestConfig));
  let ingestClosed = false;
  t.teardown(async () => {
    if (!ingestClosed) await ingest.close();
  });
  const captureConfig = configOf({});
  const capture = await startCaptureRole(captureConfig, logger(captureConfig));
  t.teardown(() => capture.close());
  const nodes: QueryRole[] = [];
  for (let i = 0; i < 2; i++) {
    // The first is told where the owner is; the second finds it in NATS, where the owner advertised it.
    const config = configOf(i === 0 ? { WEIR_STORE_URL: ingest.url } : {});
    const node = await startQueryRole(config, logger(config));
    nodes.push(node);
    t.teardown(() => node.close());
  }
  const [a, b] = nodes as [QueryRole, QueryRole];
  await waitFor(
    async () => ((await request(`${a.url}/_ready`)).status === 200 ? true : undefined),
    20_000,
    'query node ready',
  );

  const batch = Array.from({ length: 30 }, (_, i) => ({
    event: i % 3 === 0 ? 'signup' : '$pageview',
    distinct_id: `u${i % 6}`,
    timestamp: new Date(Date.UTC(2024, 0, 1 + (i % 10))).toISOString(),
    properties: { $browser: ['Chrome', 'Safari', 'Firefox'][i % 3], amount: i, flag: i % 2 === 0 },
  }));
  await captureAll(capture, batch, a);
  // Ingest records the property types; a node reads them within a second.
  await waitFor(
    async () => {
      const res = await request(`${b.url}/api/projects/1/property_definitions/?search=amount`, {
        headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
      });
      const list = res.json as { results: { property_type: string | null }[] };
      return list.results[0]?.property_type === 'Numeric' ? true : undefined;
    },
    10_000,
    'the property types on a query node',
  );

  t.test('a query node answers what the store owner answers', async (t) => {
    const queries = [
      'SELECT event, count() AS n, sum(properties.amount) FROM events GROUP BY event ORDER BY event',
      'SELECT properties.$browser AS b, uniq(distinct_id) FROM events WHERE properties.flag = true GROUP BY b ORDER BY b',
      'SELECT toStartOfDay(timestamp) AS d, count() FROM events GROUP BY d ORDER BY d LIMIT 3',
      'SELECT distinct_id, person_id FROM events ORDER BY distinct_id, timestamp LIMIT 4',
    ];
    for (const sql of queries) {
      const [onNode, onOwner] = await Promise.all([queryApi(a, sql), queryApi(ingest, sql)]);
      t.equal(onNode.status, 200, sql);
      const strip = (j: unknown): unknown => {
        const { timings: _timings, ...rest } = j as Record<string, unknown>;
        return rest;
      };
      t.same(strip(onNode.json), strip(onOwner.json), `same answer: ${sql}`);
    }
    // Refused by the engine, not the dialect: the owner's error, unchanged.
    const failing = "SELECT count() FROM events WHERE timestamp < 'abc'";
    const [onNode, onOwner] = await Promise.all([queryApi(a, failing), queryApi(ingest, failing)]);
    t.not(onOwner.status, 200, 'the engine refuses it');
    t.equal(onNode.status, onOwner.status, 'the same status');
    const { timings: _a, ...nodeError } = onNode.json as Record<string, unknown>;
    const { timings: _b, ...ownerError } = onOwner.json as Record<string, unknown>;
    t.same(nodeError, ownerError, 'the same error body');
  });

  t.test('persons and their erasure through a query node, as the owner answers them', async (t) => {
    const auth = { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' };
    const list = async (url: string, query: string): Promise<HttpResult> =>
      request(`${url}/api/projects/1/persons/${query}`, { headers: auth });
    const [onNode, onOwner] = await Promise.all([list(a.url, ''), list(ingest.url, '')]);
    t.equal(onNode.status, 200, onNode.text);
    t.same(onNode.json, onOwner.json, 'the same listing');
    // A person of its own, so the erasure leaves the others' counts to the tests after this one.
    const mine = Array.from({ length: 4 }, () => ({ event: 'seen', distinct_id: 'erase-me' }));
    const sent = await request(`${capture.url}/batch/`, {
      method: 'POST',
      body: JSON.stringify({ api_key: PROJECT_API_KEY, batch: mine }),
    });
    t.equal(sent.status, 200, sent.text);
    const mineSql = "SELECT count() FROM events WHERE distinct_id = 'erase-me'";
    await waitFor(
      async () => ((await rows(a, mineSql))[0]![0] === 4 ? true : undefined),
      20_000,
      'the events to erase',
    );
    const one = (await list(a.url, '?distinct_id=erase-me')).json as { results: { id: string }[] };
    t.equal(one.results.length, 1);
    const deleted = await request(
      `${a.url}/api/projects/1/persons/${one.results[0]!.id}/?delete_events=true`,
      {
        method: 'DELETE',
        headers: auth,
      },
    );
    t.equal(deleted.status, 202, deleted.text);
    const { id } = deleted.json as { id: string };
    // The owner runs it (the deletion is a record of the shared catalog); the node reads its state.
    const done = await waitFor(
      async () => {
        const d = (await request(`${b.url}/api/projects/1/deletions/${id}/`, { headers: auth })).json as {
          status: string;
          counts: { events: number } | null;
        };
        return d.status === 'done' ? d : undefined;
      },
      30_000,
      'the erasure',
    );
    t.equal(done.counts?.events, 4, 'its events');
    t.same(((await list(b.url, '?distinct_id=erase-me')).json as { results: unknown[] }).results, []);
    t.same(await rows(a, mineSql), [[0]]);
  });

  t.test('the store API answers only the token', async (t) => {
    const body = JSON.stringify({ sql: 'SELECT 1 AS x', params: {} });
    const url = `${ingest.url}/_store/table`;
    const none = await request(url, { method: 'POST', body });
    t.equal(none.status, 401, 'no token: 401');
    const wrong = await request(url, {
      method: 'POST',
      body,
      headers: { authorization: `Bearer ${TOKEN}x` },
    });
    t.equal(wrong.status, 401, 'another token: 401');
    const right = await request(url, { method: 'POST', body, headers: { authorization: `Bearer ${TOKEN}` } });
    t.equal(right.status, 200);
    t.same((right.json as { rows: unknown[][] }).rows, [[1]]);
    // A node's own API has no store API: only the owner runs the engine.
    t.equal((await request(`${a.url}/_store/table`, { method: 'POST', body })).status, 404);
  });

  t.test('a property type set through a node is the owner’s, and every node reads by it', async (t) => {
    const typeOf = async (w: { url: string }): Promise<unknown> =>
      (await rows(w, 'SELECT toTypeName(properties.amount) FROM events LIMIT 1'))[0]![0];
    t.equal(await typeOf(a), 'Nullable(Float64)', 'Numeric, as detected');
    const res = await request(`${a.url}/api/projects/1/property_definitions/event/amount/`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ property_type: 'String' }),
    });
    t.equal(res.status, 200, res.text);
    t.equal((res.json as { property_type: string }).property_type, 'String');
    t.equal(await typeOf(a), 'Nullable(String)', 'the node that set it reads it so at once');
    t.equal(await typeOf(ingest), 'Nullable(String)', 'the owner, which records the types, has it');
    await waitFor(
      async () => ((await typeOf(b)) === 'Nullable(String)' ? true : undefined),
      5_000,
      'the other node to read the new type',
    );
    // Back, for the tests after this one.
    await request(`${b.url}/api/projects/1/property_definitions/event/amount/`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ property_type: 'Numeric' }),
    });
  });

  t.test('an endpoint changed through one node is not answered from another node’s cache', async (t) => {
    await createEndpoint(a, {
      name: 'signups',
      query: hogql("SELECT count() FROM events WHERE event = 'signup'"),
    });
    const first = await runOk(b, 'signups');
    t.same(first.results, [[10]]);
    t.equal((await runOk(b, 'signups')).is_cached, true, 'the second run is cached on that node');
    const changed = await endpointsApi(a, 'PATCH', 'signups/', {
      query: hogql("SELECT count() FROM events WHERE event = '$pageview'"),
    });
    t.equal(changed.status, 200, changed.text);
    const after = await waitFor(
      async () => {
        const run = await runOk(b, 'signups');
        return run.endpoint_version === 2 ? run : undefined;
      },
      1_000,
      'the other node to run version 2',
    );
    t.same(after.results, [[20]], 'the new version’s answer');
    t.equal(after.is_cached, false);
  });

  t.test(
    'a change conditional on an ETag: of two nodes changing from one read, one wins, one gets 409',
    async (t) => {
      const made = await endpointsApi(a, 'POST', '', { name: 'guarded', query: hogql('SELECT 1 AS n') });
      t.equal(made.status, 201);
      const read = await endpointsApi(b, 'GET', 'guarded/');
      const etag = read.headers.get('etag')!;
      t.match(etag, /^"[\w-]+"$/, 'GET answers an ETag');
      t.equal(made.headers.get('etag'), etag, 'the same on every node');
      const patch = (node: { url: string }, n: number, tag: string): Promise<HttpResult> =>
        request(`${node.url}/api/projects/1/endpoints/guarded/`, {
          method: 'PATCH',
          headers: {
            authorization: `Bearer ${PERSONAL_API_KEY}`,
            'content-type': 'application/json',
            'if-match': tag,
          },
          body: JSON.stringify({ query: hogql(`SELECT ${n} AS n`) }),
        });
      const [one, two] = await Promise.all([patch(a, 2, etag), patch(b, 3, etag)]);
      t.same([one.status, two.status].sort(), [200, 409], 'exactly one of the two');
      const lost = one.status === 409 ? one : two;
      t.match(lost.json, { type: 'conflict', code: 'endpoint_changed', attr: 'If-Match' });
      const now = (await endpointsApi(a, 'GET', 'guarded/')).json as EndpointBody;
      t.equal(now.versions_count, 2, 'one new version, the winner’s');
      const winner = one.status === 200 ? one : two;
      t.equal(winner.headers.get('etag'), (await endpointsApi(b, 'GET', 'guarded/')).headers.get('etag'));
      // Without If-Match a change is made on the newest state, as before; with the new ETag it passes.
      t.equal((await patch(b, 4, winner.headers.get('etag')!)).status, 200);
      const stale = await request(`${a.url}/api/projects/1/endpoints/guarded/`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'if-match': etag },
      });
      t.equal(stale.status, 409, 'a delete from a stale read is refused');
      t.equal((await endpointsApi(a, 'GET', 'guarded/')).status, 200, 'and deletes nothing');
    },
  );

  t.test('one refresh per version across the nodes; every node serves it from S3', async (t) => {
    await createEndpoint(b, {
      name: 'browsers',
      query: hogql(
        'SELECT properties.$browser AS browser, count() AS n FROM events WHERE timestamp >= {variables.since} GROUP BY browser ORDER BY browser',
      ),
      variables: { since: { type: 'date' } },
      is_materialized: true,
    });
    const done = await waitFor(
      async () => {
        const e = (await endpointsApi(a, 'GET', 'browsers/')).json as EndpointBody;
        return e.materialization['status'] === 'completed' ? e : undefined;
      },
      60_000,
      'the refresh',
    );
    t.ok(done.materialization['last_materialized_at']);
    const variables = { since: '2024-01-04' };
    const direct = await runOk(ingest, 'browsers', { variables, refresh: 'direct' });
    for (const node of [a, b, ingest]) {
      const served = await runOk(node, 'browsers', { variables, refresh: 'force' });
      t.equal(served.endpoint_materialized, true, `served from the materialization by ${node.url}`);
      t.same(served.results, direct.results, 'the direct answer');
    }
    // Nobody refreshes again before the sync interval: the version's refresh stays the one.
    const again = (await endpointsApi(b, 'GET', 'browsers/')).json as EndpointBody;
    t.equal(again.materialization['last_materialized_at'], done.materialization['last_materialized_at']);
  });

  t.test(
    'the store owner away: a direct run on a node is a 503 to retry, the rest still answers',
    async (t) => {
      ingestClosed = true;
      await ingest.close();
      const res = await queryApi(a, 'SELECT count() FROM events');
      t.equal(res.status, 503, res.text);
      t.equal(res.headers.get('retry-after'), '1');
      t.match(res.json, { type: 'unavailable', code: 'unavailable' });
      const list = await request(`${a.url}/api/projects/`, {
        headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
      });
      t.equal(list.status, 200, 'the management API needs no store');
      const served = await runOk(a, 'browsers', { variables: { since: '2024-01-04' }, refresh: 'force' });
      t.equal(served.endpoint_materialized, true, 'a materialized run needs no store either');
    },
  );

  t.test('NATS away: a query node is not ready, and is again when NATS is back', async (t) => {
    const ready = async (): Promise<number> => (await request(`${b.url}/_ready`)).status;
    t.equal(await ready(), 200);
    await nats.stop();
    await waitFor(async () => ((await ready()) === 503 ? true : undefined), 10_000, 'not ready');
    await nats.restart();
    await waitFor(async () => ((await ready()) === 200 ? true : undefined), 20_000, 'ready again');
    const list = await request(`${b.url}/api/projects/`, {
      headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
    });
    t.equal(list.status, 200);
  });
}
