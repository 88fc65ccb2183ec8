/**
 * Every role on any machine (issue 27): a three-node NATS cluster with JetStream, one `weir ingest` (the store
 * owner), two `weir query` nodes and two `weir capture` processes, each its own OS process with its own data
 * directory, sharing nothing but the cluster (the catalog in the KV bucket `weir_catalog`) and the ingest's
 * store API. Catalog changes made through one node reach every other within a second, concurrent endpoint
 * changes through two nodes are never lost, and a NATS node stopped under load loses or doubles no event
 * answered 200.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { startNatsCluster, type NatsServer } from '../helpers/nats-server.ts';
import { metricValue, spawnRole, startLoad, type RoleProcess, type RunningLoad } from '../helpers/roles.ts';
import { PERSONAL_API_KEY, request, tempDir, waitFor, type HttpResult } from '../helpers/weir.ts';

type Json = Record<string, unknown>;

const STORE_TOKEN = 'scale-out-store-token-0123456789';
/** How soon a catalog change made through one node must be seen by every other (docs/scaling.md). */
const PROPAGATION_MS = 1_000;

const cluster = await startNatsCluster(3);
const dirs: string[] = [];
const dir = (): string => {
  const d = tempDir('weir-scale-out-');
  dirs.push(d);
  return d;
};
const roles: RoleProcess[] = [];
t.teardown(async () => {
  // SIGTERM each; one that does not exit in time is killed, so a hung role cannot hang the suite.
  await Promise.all(
    roles.map(async (r) => {
      const timer = setTimeout(() => void r.kill9(), 20_000);
      await r.stop();
      clearTimeout(timer);
    }),
  );
  await cluster.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
/** Each role's name in messages. */
const names = new Map<RoleProcess, string>();
const started = async (name: string, p: Promise<RoleProcess>): Promise<RoleProcess> => {
  const r = await p;
  roles.push(r);
  names.set(r, name);
  return r;
};

const shared = { WEIR_NATS_URL: cluster.url, WEIR_CATALOG: 'nats' };
// A batch the stopped NATS node had delivered but ingest had not acknowledged comes back after the ack
// wait (30 s by default): keep it short. A publish the stopped node never acknowledges is a 503 after the
// publish timeout (5 s by default), and the client's retry goes through another node.
const ingest = await started(
  'ingest',
  spawnRole('ingest', {
    ...shared,
    WEIR_STORE_TOKEN: STORE_TOKEN,
    WEIR_DATA_DIR: dir(),
    WEIR_BUS_ACK_WAIT_MS: '3000',
  }),
);
const queryEnv = (): Record<string, string> => ({
  ...shared,
  WEIR_STORE_URL: ingest.url,
  WEIR_STORE_TOKEN: STORE_TOKEN,
  WEIR_DATA_DIR: dir(),
});
const captureEnv = (): Record<string, string> => ({
  ...shared,
  WEIR_DATA_DIR: dir(),
  WEIR_PUBLISH_TIMEOUT_MS: '2000',
});
const [query1, query2, captureA, captureB] = await Promise.all([
  started('query node 1', spawnRole('query', queryEnv())),
  started('query node 2', spawnRole('query', queryEnv())),
  started('capture A', spawnRole('capture', captureEnv())),
  started('capture B', spawnRole('capture', captureEnv())),
]);
const captures = [captureA, captureB];
const queries = [query1, query2];

function api(base: string, method: string, path: string, key: string, body?: unknown): Promise<HttpResult> {
  return request(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Runs a query through a query node's query API; throws on anything but 200. */
async function hogql(base: string, projectId: number, query: string): Promise<unknown[][]> {
  const res = await api(base, 'POST', `/api/projects/${projectId}/query/`, PERSONAL_API_KEY, {
    query: { kind: 'HogQLQuery', query },
  });
  if (res.status !== 200) throw new Error(`query ${res.status}: ${res.text}`);
  return (res.json as { results: unknown[][] }).results;
}

/** Raw SQL on the ingest's store API (no FINAL, so a row stored twice shows twice). */
async function storeRows<T>(sql: string, params: Json = {}): Promise<T[]> {
  const res = await api(ingest.url, 'POST', '/_store/rows', STORE_TOKEN, { sql, params });
  if (res.status !== 200) throw new Error(`store API ${res.status}: ${res.text}`);
  return (res.json as { rows: T[] }).rows;
}

/** One record of the catalog bucket, read from NATS directly. */
async function catalogRecord<T>(key: string): Promise<T> {
  const nc = await connect({ servers: cluster.url.split(',') });
  try {
    const kv = await new Kvm(nc).open('weir_catalog');
    const e = await kv.get(key);
    if (!e || e.operation !== 'PUT') throw new Error(`no catalog record ${key}`);
    return e.json<T>();
  } finally {
    await nc.close();
  }
}

/**
 * Polls `attempt` every 20 ms from `since` until it returns true; resolves with the milliseconds from
 * `since` to that success. Fails after `deadlineMs`.
 */
async function msUntil(
  since: number,
  attempt: () => Promise<boolean>,
  what: string,
  deadlineMs = 10_000,
): Promise<number> {
  for (;;) {
    if (await attempt()) return Date.now() - since;
    if (Date.now() - since > deadlineMs)
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function allReady(rs: readonly RoleProcess[]): Promise<true | undefined> {
  for (const r of rs) if ((await fetch(`${r.url}/_ready`)).status !== 200) return undefined;
  return true;
}

t.test('every role starts against the cluster and reports ready', async (t) => {
  await waitFor(() => allReady(roles), 30_000, 'every role to be ready');
  t.pass(`ingest, 2 query nodes and 2 captures ready on ${cluster.url}`);
  for (const r of captures)
    t.equal(metricValue(await r.metrics(), 'weir_nats_connected', 'connection="publish"'), 1);
  t.equal(metricValue(await ingest.metrics(), 'weir_nats_connected', 'connection="consume"'), 1);
  for (const r of queries)
    t.equal(metricValue(await r.metrics(), 'weir_nats_connected', 'connection="catalog"'), 1);
});

t.test(
  'a project made through query node 1 captures on both captures and is listed by query node 2',
  async (t) => {
    const event = 'scale-out new project';
    const created = await api(query1.url, 'POST', '/api/projects/', PERSONAL_API_KEY, { name: 'Scale out' });
    const t0 = Date.now();
    t.equal(created.status, 201, created.text);
    const project = created.json as { id: number; api_token: string };

    let captured = 0;
    const captureWith = async (c: RoleProcess): Promise<boolean> => {
      const res = await request(`${c.url}/i/v0/e/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: project.api_token, event, distinct_id: 'p', uuid: randomUUID() }),
      });
      if (res.status === 200) captured++;
      else if (res.status !== 401) throw new Error(`capture answered ${res.status}: ${res.text}`);
      return res.status === 200;
    };
    const listed = async (): Promise<boolean> => {
      const res = await api(query2.url, 'GET', '/api/projects/', PERSONAL_API_KEY);
      return (res.json as { results: { id: number }[] }).results.some((p) => p.id === project.id);
    };
    const [onA, onB, onQuery2] = await Promise.all([
      msUntil(t0, () => captureWith(captureA), 'capture A to take the new project key'),
      msUntil(t0, () => captureWith(captureB), 'capture B to take the new project key'),
      msUntil(t0, listed, 'query node 2 to list the new project'),
    ]);
    t.comment(
      `after the 201: capture A ${onA} ms, capture B ${onB} ms, query node 2 lists it ${onQuery2} ms`,
    );
    t.ok(onA <= PROPAGATION_MS, `capture A took the key within a second (${onA} ms)`);
    t.ok(onB <= PROPAGATION_MS, `capture B took the key within a second (${onB} ms)`);
    t.ok(onQuery2 <= PROPAGATION_MS, `query node 2 listed the project within a second (${onQuery2} ms)`);

    // More of the new project's events through both captures, then read back through the other query node.
    for (const c of captures) {
      const res = await request(`${c.url}/batch/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          api_key: project.api_token,
          batch: Array.from({ length: 10 }, (_, i) => ({ event, distinct_id: `p-${i}`, uuid: randomUUID() })),
        }),
      });
      t.equal(res.status, 200, res.text);
      captured += 10;
    }
    const sql = `SELECT count() FROM events WHERE event = '${event}'`;
    await waitFor(
      async () => (Number((await hogql(query2.url, project.id, sql))[0]![0]) === captured ? true : undefined),
      30_000,
      `the ${captured} events of the new project through query node 2`,
    );
    t.same(
      await hogql(query2.url, project.id, sql),
      [[captured]],
      `all ${captured} events, through query node 2`,
    );
    t.same(await hogql(query2.url, 1, sql), [[0]], 'none of them in project 1');
  },
);

t.test(
  'a personal key made on query node 2 works on node 1; revoked on node 1, node 2 and ingest refuse it',
  async (t) => {
    const made = await api(query2.url, 'POST', '/api/personal_api_keys/', PERSONAL_API_KEY, {
      label: 'scale-out',
      scopes: ['*'],
      projects: [1],
    });
    const t0 = Date.now();
    t.equal(made.status, 201, made.text);
    const key = made.json as { id: string; value: string };
    const status = (base: string): Promise<number> =>
      api(base, 'GET', '/api/projects/', key.value).then((r) => r.status);

    const onQuery1 = await msUntil(
      t0,
      async () => (await status(query1.url)) === 200,
      'node 1 to take the key',
    );
    t.ok(onQuery1 <= PROPAGATION_MS, `query node 1 took the new key within a second (${onQuery1} ms)`);
    t.equal(await status(ingest.url), 200, 'ingest takes it too');

    const revoked = await api(query1.url, 'DELETE', `/api/personal_api_keys/${key.id}/`, PERSONAL_API_KEY);
    const t1 = Date.now();
    t.equal(revoked.status, 204, revoked.text);
    t.equal(await status(query1.url), 401, 'refused at once by the node that revoked it');
    const [onQuery2, onIngest] = await Promise.all([
      msUntil(t1, async () => (await status(query2.url)) === 401, 'query node 2 to refuse the revoked key'),
      msUntil(t1, async () => (await status(ingest.url)) === 401, 'ingest to refuse the revoked key'),
    ]);
    t.comment(
      `new key on node 1 after ${onQuery1} ms; revoked: node 2 ${onQuery2} ms, ingest ${onIngest} ms`,
    );
    t.ok(onQuery2 <= PROPAGATION_MS, `query node 2 refused it within a second (${onQuery2} ms)`);
    t.ok(onIngest <= PROPAGATION_MS, `ingest refused it within a second (${onIngest} ms)`);
    const refused = await api(query2.url, 'GET', '/api/projects/', key.value);
    t.match(refused.json, { code: 'authentication_failed' });
  },
);

t.test('concurrent changes of one endpoint through two query nodes are all kept', async (t) => {
  const base = '/api/projects/1/endpoints/';
  const name = 'scale-out-versions';
  const created = await api(query1.url, 'POST', base, PERSONAL_API_KEY, {
    name,
    query: { kind: 'HogQLQuery', query: 'SELECT 0 AS n' },
  });
  t.equal(created.status, 201, created.text);
  // Both nodes see it before the race, so each PATCH finds the endpoint.
  await waitFor(
    async () =>
      (await api(query2.url, 'GET', `${base}${name}/`, PERSONAL_API_KEY)).status === 200 ? true : undefined,
    5_000,
    'query node 2 to see the endpoint',
  );

  const texts = Array.from({ length: 10 }, (_, i) => `SELECT ${i + 1} AS n`);
  const patches = await Promise.all(
    texts.map((text, i) =>
      api(queries[i % 2]!.url, 'PATCH', `${base}${name}/`, PERSONAL_API_KEY, {
        query: { kind: 'HogQLQuery', query: text },
      }),
    ),
  );
  const done = Date.now();
  t.same(
    patches.map((p) => p.status),
    texts.map(() => 200),
    `every PATCH answered 200: ${patches
      .filter((p) => p.status !== 200)
      .map((p) => p.text)
      .join('; ')}`,
  );
  // Each answer shows the endpoint as its own change left it: its query is the newest version.
  const answered = patches.map((p) => p.json as { current_version: number; query: { query: string } });
  t.same(
    answered.map((a) => a.query.query),
    texts,
    'each PATCH answered with its own query as the newest version',
  );

  // The endpoint as the bucket holds it now, read from NATS itself (docs/scaling.md's layout).
  const stored = await catalogRecord<{ versions: { version: number; query: { query: string } }[] }>(
    `endpoints.1.n${Buffer.from(name).toString('base64url')}`,
  );
  const newest = stored.versions.at(-1)!;
  const seen = await Promise.all(
    queries.map((q) =>
      msUntil(
        done,
        async () => {
          const e = (await api(q.url, 'GET', `${base}${name}/`, PERSONAL_API_KEY)).json as {
            current_version: number;
            query: { query: string };
          };
          return e.current_version === newest.version && e.query.query === newest.query.query;
        },
        `${names.get(q)} to show version ${newest.version}`,
      ),
    ),
  );
  t.comment(
    `after the last PATCH: query node 1 showed version ${newest.version} after ${seen[0]} ms, query node 2 after ${seen[1]} ms`,
  );
  for (const [i, ms] of seen.entries())
    t.ok(
      ms <= PROPAGATION_MS,
      `query node ${i + 1} showed the stored newest version within a second (${ms} ms)`,
    );
  for (const q of queries) {
    const res = await api(q.url, 'GET', `${base}${name}/versions/`, PERSONAL_API_KEY);
    t.equal(res.status, 200);
    const body = res.json as { results: { version: number; query: { query: string } }[] };
    t.same(
      body.results.map((v) => [v.version, v.query.query]).reverse(),
      stored.versions.map((v) => [v.version, v.query.query]),
      `${names.get(q)} lists the versions the bucket holds`,
    );
  }

  // No update lost: 1 + 10 versions, each PATCH's query in exactly one of them.
  const queriesOf = stored.versions.map((v) => v.query.query);
  const lost = texts.filter((text) => !queriesOf.includes(text));
  t.same(
    answered.map((a) => a.current_version).sort((a, b) => a - b),
    Array.from({ length: 10 }, (_, i) => i + 2),
    'the ten PATCHes made versions 2 to 11, one each',
  );
  t.same(
    stored.versions.map((v) => v.version),
    Array.from({ length: 11 }, (_, i) => i + 1),
    `1 + 10 versions (${stored.versions.length} stored)`,
  );
  t.equal(queriesOf[0], 'SELECT 0 AS n', 'version 1 is the created query');
  t.same(lost, [], 'no PATCH lost');
  for (const text of texts)
    t.ok(queriesOf.filter((q) => q === text).length <= 1, `'${text}' is at most one version`);
});

t.test('of concurrent creates of one endpoint name through two query nodes exactly one wins', async (t) => {
  for (let round = 0; round < 3; round++) {
    const name = `scale-out-race-${round}`;
    const [a, b] = await Promise.all(
      queries.map((q, i) =>
        api(q.url, 'POST', '/api/projects/1/endpoints/', PERSONAL_API_KEY, {
          name,
          query: { kind: 'HogQLQuery', query: `SELECT ${i} AS node` },
        }),
      ),
    );
    const statuses = [a!.status, b!.status].sort();
    t.same(statuses, [201, 400], `round ${round}: one 201 and one 400 (${a!.text} / ${b!.text})`);
    const loser = a!.status === 400 ? a! : b!;
    t.match(loser.json, { code: 'endpoint_exists', attr: 'name' }, 'the other is endpoint_exists');
    const winner = (a!.status === 201 ? a! : b!).json as { query: { query: string } };
    for (const q of queries) {
      const e = await waitFor(
        async () => {
          const r = await api(q.url, 'GET', `/api/projects/1/endpoints/${name}/`, PERSONAL_API_KEY);
          return r.status === 200 ? (r.json as typeof winner & { versions_count: number }) : undefined;
        },
        5_000,
        'the endpoint on both nodes',
      );
      t.equal(e.query.query, winner.query.query, "both nodes show the winner's query");
      t.equal(e.versions_count, 1);
    }
  }
});

/** A role's NATS connection changes as logged, in order: connection name, what happened, the server port. */
function natsLog(text: string): { connection: string; msg: string; port: number }[] {
  const changes: { connection: string; msg: string; port: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let rec: { msg?: string; connection?: string; server?: string };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      continue;
    }
    if (rec.connection === undefined || !rec.msg?.startsWith('nats ')) continue;
    changes.push({
      connection: rec.connection,
      msg: rec.msg,
      port: Number(/:(\d+)$/.exec(rec.server ?? '')?.[1]),
    });
  }
  return changes;
}

/** Where each NATS connection of a role is now, from its log: connection name → server port. */
function connectionsOf(r: RoleProcess): Map<string, number> {
  const on = new Map<string, number>();
  for (const c of natsLog(r.output()))
    if (c.msg === 'nats connected' || c.msg === 'nats reconnected') on.set(c.connection, c.port);
  return on;
}

/**
 * Closed-loop load on both captures until stopped: each client posts /batch/ requests one after another and
 * retries a 503 or a failed connection (same body, same uuids) until it is answered 200, as SDKs do. Stopping
 * lets each client finish its request, so every uuid attempted is answered 200 in the end.
 */
function loadCaptures(event: string, clientsPerCapture: number, eventsPerRequest: number): RunningLoad {
  return startLoad({
    urls: captures.map((c) => c.url),
    event,
    clients: clientsPerCapture * captures.length,
    requests: Number.POSITIVE_INFINITY,
    eventsPerRequest,
    retry: true,
  });
}

/** The servers (`weir-test-N`) leading the EVENTS stream, ingest's live-lane consumer and the catalog bucket. */
async function leaders(): Promise<{ events: string; live: string; catalog: string }> {
  const nc = await connect({ servers: cluster.url.split(',') });
  try {
    const jsm = await jetstreamManager(nc);
    return {
      events: (await jsm.streams.info('EVENTS')).cluster?.leader ?? 'none',
      // One live partition here (WEIR_BUS_PARTITIONS unset): its consumer is the whole live lane's.
      live: (await jsm.consumers.info('EVENTS', 'ingest-live-0')).cluster?.leader ?? 'none',
      catalog: (await jsm.streams.info('KV_weir_catalog')).cluster?.leader ?? 'none',
    };
  } finally {
    await nc.close();
  }
}

t.test(
  'a NATS node stopped under load: roles fail over, every event answered 200 is stored once',
  async (t) => {
    const event = `scale-out load ${randomUUID()}`;
    // The node to stop: the leader of ingest's live-lane consumer, so JetStream must move the consumer
    // (and ingest must keep pulling from its new leader) while captures publish; the roles connected to it
    // must reconnect to another node.
    const before = await leaders();
    const victimIndex = cluster.nodes.findIndex((_, i) => before.live === `weir-test-${i}`);
    t.ok(victimIndex >= 0, `ingest-live-0 is led by node ${victimIndex}`);
    const victim: NatsServer = cluster.nodes[victimIndex]!;
    const victimPort = victim.port;
    /** Each role's connections on the victim, and how much of its log was written before the stop. */
    const onVictim = roles.map((r) => ({
      role: r,
      lost: [...connectionsOf(r)].filter(([, port]) => port === victimPort).map(([conn]) => conn),
      logged: r.output().length,
    }));
    t.comment(
      `stopping node ${victimIndex} (weir-test-${victimIndex}), which holds ` +
        onVictim.flatMap((v) => v.lost.map((conn) => `${names.get(v.role)} ${conn}`)).join(', ') +
        `; leaders before: ${JSON.stringify(before)}`,
    );

    const load = loadCaptures(event, 2, 10);
    t.teardown(() => load.stop().catch(() => undefined));
    const loadStarted = Date.now();
    await waitFor(
      () => Promise.resolve(Date.now() - loadStarted >= 1_500 && load.acks.length >= 20 ? true : undefined),
      30_000,
      'load to be running',
    );
    const ackedBeforeStop = load.acked.size;
    await victim.stop();
    const stoppedAt = Date.now();
    const after = (since: number, capture: number): number =>
      load.acks.filter((a) => a.at > since && a.server === capture).length;
    // Keep the load going with the node down for a few seconds, and until both captures answer 200 again.
    await waitFor(
      () =>
        Promise.resolve(
          Date.now() - stoppedAt >= 3_000 && after(stoppedAt, 0) >= 10 && after(stoppedAt, 1) >= 10
            ? true
            : undefined,
        ),
      45_000,
      'both captures to answer 200 with the node down',
    );
    const firstAfterStop = [0, 1].map(
      (c) => load.acks.find((a) => a.at > stoppedAt && a.server === c)!.at - stoppedAt,
    );
    const okWhileDown = load.acks.filter((a) => a.at > stoppedAt).length;
    t.comment(
      `node ${victimIndex} stopped after ${ackedBeforeStop} events; first 200 after it: capture A ` +
        `${firstAfterStop[0]} ms, capture B ${firstAfterStop[1]} ms; ${okWhileDown} requests answered 200 ` +
        `in the ${Date.now() - stoppedAt} ms it was down; leaders now: ${JSON.stringify(await leaders())}`,
    );
    t.ok(
      after(stoppedAt, 0) > 0,
      `capture A answered 200 with the node down (${after(stoppedAt, 0)} requests)`,
    );
    t.ok(
      after(stoppedAt, 1) > 0,
      `capture B answered 200 with the node down (${after(stoppedAt, 1)} requests)`,
    );
    // Every connection that was on the stopped node logged the loss and a reconnection to another node,
    // both while it was down.
    for (const v of onVictim) {
      const changes = natsLog(v.role.output().slice(v.logged));
      for (const conn of v.lost) {
        const mine = changes.filter((c) => c.connection === conn);
        const lostAt = mine.findIndex((c) => c.msg === 'nats disconnected; reconnecting');
        const back = mine.slice(lostAt + 1).find((c) => c.msg === 'nats reconnected');
        t.ok(lostAt >= 0, `${names.get(v.role)} ${conn} logged the loss`);
        t.ok(
          back !== undefined && back.port !== victimPort,
          `${names.get(v.role)} ${conn} reconnected to another node (port ${back?.port})`,
        );
      }
      // Its connections to the other nodes stayed up.
      const others = [...connectionsOf(v.role).keys()].filter((conn) => !v.lost.includes(conn));
      for (const conn of others)
        t.notOk(
          changes.some((c) => c.connection === conn && c.msg === 'nats disconnected; reconnecting'),
          `${names.get(v.role)} ${conn} stayed connected`,
        );
    }

    await victim.restart();
    const restartedAt = Date.now();
    await waitFor(
      () => Promise.resolve(after(restartedAt, 0) >= 10 && after(restartedAt, 1) >= 10 ? true : undefined),
      45_000,
      'both captures to answer 200 after the node restarted',
    );
    await load.stop();
    const loadStopped = Date.now();
    t.comment(
      `load: ${load.acks.length} requests answered 200 (${load.acked.size} events) in ${loadStopped - loadStarted} ms; ` +
        `answers by status ${JSON.stringify(Object.fromEntries(load.statuses))}`,
    );
    t.equal(load.acked.size, load.attempted.size, 'every request was answered 200 in the end');

    await waitFor(() => allReady(roles), 30_000, 'every role to be ready again');
    t.pass('/_ready of every role answers 200 again');
    for (const r of roles) {
      const m = await r.metrics();
      for (const conn of connectionsOf(r).keys())
        t.equal(
          metricValue(m, 'weir_nats_connected', `connection="${conn}"`),
          1,
          `${names.get(r)} ${conn}: weir_nats_connected 1`,
        );
    }

    // Through a query node: every acknowledged event, counted once.
    const e = event.replaceAll("'", "\\'");
    const distinct = `SELECT count(DISTINCT uuid) FROM events WHERE event = '${e}'`;
    await waitFor(
      async () =>
        Number((await hogql(query2.url, 1, distinct))[0]![0]) >= load.acked.size ? true : undefined,
      90_000,
      `the ${load.acked.size} acknowledged events through query node 2`,
    );
    const drainMs = Date.now() - loadStopped;
    const im = await ingest.metrics();
    t.comment(
      `all stored ${drainMs} ms after the load stopped; ingest: ` +
        `${metricValue(im, 'weir_bus_redelivered_messages_total')} batches redelivered, ` +
        `${metricValue(im, 'weir_ingest_duplicate_events_total')} duplicate events dropped`,
    );
    // With the lane's consumer moved to a live node, ingest pulls from it again within an ack wait (3 s here),
    // so the backlog is stored soon after the load stops.
    t.ok(drainMs <= 10_000, `stored within 10 s of the load stopping (${drainMs} ms)`);
    t.same(
      await hogql(query1.url, 1, distinct),
      [[load.acked.size]],
      'count(DISTINCT uuid) through query node 1 equals the events answered 200',
    );
    t.same(
      await hogql(
        query1.url,
        1,
        `SELECT uuid, count() FROM events WHERE event = '${e}' GROUP BY uuid HAVING count() > 1`,
      ),
      [],
      'no uuid twice through the query API',
    );
    // The query API reads events with FINAL, which would hide a row stored twice: the store must not have one.
    const [raw] = await storeRows<{ rows: number | string; uuids: number | string }>(
      'SELECT count() AS rows, uniqExact(uuid) AS uuids FROM events WHERE event = {e:String}',
      { e: event },
    );
    t.same(
      { rows: Number(raw!.rows), uuids: Number(raw!.uuids) },
      { rows: load.acked.size, uuids: load.acked.size },
      'the store holds each acknowledged event exactly once (raw rows, no FINAL)',
    );
    const stored = await storeRows<{ u: string }>(
      'SELECT toString(uuid) AS u FROM events WHERE event = {e:String}',
      { e: event },
    );
    t.same(
      stored.filter((r) => !load.acked.has(r.u)),
      [],
      'no stored uuid beyond those answered 200',
    );
  },
);
