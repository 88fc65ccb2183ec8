/**
 * The KV catalog against a real nats-server: the file catalog's behaviours (first open, reopen, concurrent
 * changes never lost, a change visible the moment it resolves), and two catalogs on one bucket standing for two
 * nodes: each sees the other's changes within a second, and their concurrent changes neither lose one another
 * nor both win a name. Without nats-server on PATH this skips with the reason (fails under CI).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kvm } from '@nats-io/kv';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { KvCatalog } from '../../src/catalog/kv-catalog.ts';
import type { Endpoint } from '../../src/core/ports.ts';
import { startNatsServer, type NatsServer } from '../helpers/nats-server.ts';
import { waitFor } from '../helpers/weir.ts';

interface Env {
  readonly bootstrapProjectApiKey: string | undefined;
  readonly bootstrapPersonalApiKey: string | undefined;
}
const NO_ENV: Env = { bootstrapProjectApiKey: undefined, bootstrapPersonalApiKey: undefined };
/** The promise: another node's change is visible within a second. */
const WITHIN = 1_000;

const NEW_ENDPOINT = {
  description: '',
  cacheAgeSeconds: 300,
  isActive: true,
  syncFrequency: '24hour' as const,
  materializationBucket: 'day' as const,
  query: { kind: 'HogQLQuery' as const, query: 'SELECT 1' },
  variables: {},
  isMaterialized: false,
  createdBy: null,
};

let nats: NatsServer | undefined;
const probe = spawnSync('nats-server', ['--version']);
if (probe.error) {
  const why = `the KV catalog needs nats-server on PATH: ${probe.error.message}`;
  if (process.env['CI']) t.fail(why);
  else t.comment(`SKIPPED: ${why}`);
} else {
  nats = await startNatsServer();
  const server = nats;
  t.teardown(() => server.close());
}

/** A connection of its own (each stands for a node), closed at the end of the test. */
async function node(t: Test): Promise<NatsConnection> {
  const nc = await connect({ servers: nats!.url });
  t.teardown(() => nc.close());
  return nc;
}

function bucketName(): string {
  return `weir-catalog-${randomBytes(4).toString('hex')}`;
}

async function openOn(t: Test, bucket: string, env: Env = NO_ENV): Promise<KvCatalog> {
  const catalog = await KvCatalog.open(await node(t), { bucket, ...env });
  t.teardown(() => catalog.close());
  return catalog;
}

/** Polls (never sleeps to synchronise) until `check` holds, failing after a second. */
function within(check: () => boolean, what: string): Promise<true> {
  return waitFor(() => Promise.resolve(check() ? true : undefined), WITHIN, what);
}

t.test(
  'a first open makes project 1 and a * key, hashed in KV; a reopen reads them back',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const catalog = await openOn(t, bucket);
    const boot = catalog.bootstrap!;
    t.match(boot.project, { id: 1, name: 'Default project', apiToken: /^phc_[A-Za-z0-9]{43}$/ });
    t.match(boot.personalApiKey, /^phx_[A-Za-z0-9]{43}$/);
    const key = catalog.personalKeyByValue(boot.personalApiKey!);
    t.match(key, { scopes: ['*'], projects: [1], revokedAt: null, createdBy: null });
    t.equal(catalog.projectByApiToken(boot.project.apiToken)?.id, 1);

    const kv = await new Kvm(await node(t)).open(bucket);
    const stored = (await kv.get(`keys.${key!.id}`))!.string();
    t.notMatch(stored, boot.personalApiKey!, 'no key value in KV');
    t.match(JSON.parse(stored), { valueHash: /^[0-9a-f]{64}$/ }, 'the hash, as the file catalog stores it');

    const again = await openOn(t, bucket);
    t.equal(again.bootstrap, undefined);
    t.same(again.listProjects(), catalog.listProjects());
    t.same(again.listPersonalKeys(), catalog.listPersonalKeys());
  },
);

t.test(
  'bootstrap keys from the environment are used and not echoed back',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const catalog = await openOn(t, bucketName(), {
      bootstrapProjectApiKey: 'phc_from_env',
      bootstrapPersonalApiKey: 'phx_from_env',
    });
    t.equal(catalog.projectByApiToken('phc_from_env')?.id, 1);
    t.ok(catalog.personalKeyByValue('phx_from_env'));
    t.match(catalog.bootstrap, {
      personalApiKey: undefined,
      projectKeyFromEnv: true,
      personalKeyFromEnv: true,
    });
  },
);

t.test(
  'two processes opening one empty bucket at once: one bootstrap wins',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const opened = await Promise.all(Array.from({ length: 4 }, () => openOn(t, bucket)));
    t.equal(opened.filter((c) => c.bootstrap !== undefined).length, 1, 'exactly one made the first project');
    const winner = opened.find((c) => c.bootstrap)!;
    for (const c of opened) {
      t.same(c.listProjects(), winner.listProjects(), 'one project 1 for all');
      t.equal(c.listPersonalKeys().length, 1, 'one bootstrap key');
      t.ok(c.personalKeyByValue(winner.bootstrap!.personalApiKey!), "the winner's key works everywhere");
    }
  },
);

t.test(
  '200 concurrent changes of every kind: none lost, all in KV',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const catalog = await openOn(t, bucket);
    const root = catalog.listPersonalKeys()[0]!;
    const victims = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        catalog.createPersonalKey({
          label: `v${i}`,
          scopes: ['query:read'],
          projects: [1],
          createdBy: root.id,
        }),
      ),
    );
    const [projects, keys, revoked, renamed] = await Promise.all([
      Promise.all(
        Array.from({ length: 100 }, (_, i) => catalog.createProject({ name: `p${i}`, grantTo: root.id })),
      ),
      Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          catalog.createPersonalKey({ label: `k${i}`, scopes: ['*'], projects: '*', createdBy: null }),
        ),
      ),
      Promise.all(victims.map((v) => catalog.revokePersonalKey(v.key.id))),
      Promise.all(Array.from({ length: 20 }, (_, i) => catalog.updateProject(1, { name: `name ${i}` }))),
    ]);
    t.same(
      projects.map((p) => p.id).sort((a, b) => a - b),
      Array.from({ length: 100 }, (_, i) => i + 2),
      'project ids 2..101, each once',
    );
    t.equal(new Set(keys.map((k) => k.key.id)).size, 60);
    t.same(revoked, Array(20).fill(true));
    t.equal(renamed.length, 20);
    t.same(
      catalog.personalKey(root.id)?.projects,
      [1, ...projects.map((p) => p.id)],
      'every grant kept, in order',
    );

    const reopened = await openOn(t, bucket);
    t.same(reopened.listProjects(), catalog.listProjects(), 'projects in KV');
    t.same(reopened.listPersonalKeys(), catalog.listPersonalKeys(), 'keys in KV');
    for (const p of projects) t.equal(reopened.projectByApiToken(p.apiToken)?.id, p.id);
    for (const k of keys) t.equal(reopened.personalKeyByValue(k.value)?.id, k.key.id);
    for (const v of victims)
      t.ok(reopened.personalKeyByValue(v.value)?.revokedAt, `${v.key.label} revoked in KV`);
    t.equal((await reopened.createProject({ name: 'next' })).id, 102, 'the id counter is in KV too');
  },
);

t.test(
  'a change is visible in its own reads the moment it resolves',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const catalog = await openOn(t, bucketName());
    const before = catalog.revision;
    const made = await catalog.createPersonalKey({
      label: 'x',
      scopes: ['*'],
      projects: [1],
      createdBy: null,
    });
    t.equal(catalog.personalKeyByValue(made.value)?.revokedAt, null);
    t.not(catalog.revision, before, 'the revision moved');
    t.equal(await catalog.revokePersonalKey(made.key.id), true);
    t.ok(catalog.personalKeyByValue(made.value)?.revokedAt, 'revoked as soon as the call resolves');
    t.equal(await catalog.revokePersonalKey(made.key.id), false, 'a second revoke is a no-op');
    t.equal(await catalog.updateProject(99, { name: 'x' }), undefined);
    t.equal(
      await catalog.updateProject(1, { name: 'Default project' }),
      catalog.project(1),
      'same name: nothing',
    );
    await t.rejects(catalog.createProject({ name: 'x', grantTo: 'no-such-key' }), /no personal API key/);
    t.equal((await catalog.createProject({ name: 'kept' })).id, 2, 'a refused project took no id');
  },
);

t.test(
  'endpoints: one create of a name wins; versions never lost; renames; deletes; in KV',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const catalog = await openOn(t, bucket);
    const racing = await Promise.allSettled(
      Array.from({ length: 20 }, () => catalog.createEndpoint(1, { ...NEW_ENDPOINT, name: 'daily' })),
    );
    t.equal(racing.filter((r) => r.status === 'fulfilled').length, 1, 'exactly one create wins');
    for (const r of racing) {
      if (r.status === 'rejected') t.match(r.reason, { code: 'endpoint_exists', status: 400, attr: 'name' });
    }
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => catalog.createEndpoint(1, { ...NEW_ENDPOINT, name: `e${i}` })),
    );
    await Promise.all(Array.from({ length: 25 }, (_, i) => addVersion(catalog, 'daily', `a${i}`)));
    checkVersions(t, catalog.endpoint(1, 'daily')!, 26);
    t.equal(await catalog.updateEndpoint(1, 'nope', () => ({ description: 'x' })), undefined);
    t.equal(
      await catalog.updateEndpoint(1, 'e0', () => ({})),
      catalog.endpoint(1, 'e0'),
      'an empty change writes nothing',
    );
    await t.rejects(
      catalog.updateEndpoint(1, 'e0', () => {
        throw new Error('refused');
      }),
      /refused/,
    );
    await t.rejects(
      catalog.updateEndpoint(1, 'e0', () => ({ name: 'e1' })),
      { code: 'endpoint_exists' },
    );
    const moved = await catalog.updateEndpoint(1, 'e2', () => ({ name: 'moved' }));
    t.equal(moved?.name, 'moved');
    t.equal(catalog.endpoint(1, 'e2'), undefined, 'the old name is gone at once');
    t.equal(catalog.endpoint(1, 'moved')?.id, moved?.id);
    t.equal(await catalog.deleteEndpoint(1, 'e1'), true);
    t.equal(await catalog.deleteEndpoint(1, 'e1'), false);
    t.equal(catalog.endpoint(1, 'e1'), undefined);
    const again = await catalog.createEndpoint(1, { ...NEW_ENDPOINT, name: 'e1' });
    t.equal(catalog.endpoint(1, 'e1')?.id, again.id, 'a deleted name can be made again');

    const reopened = await openOn(t, bucket);
    t.same(reopened.listEndpoints(1), catalog.listEndpoints(1), 'endpoints and versions in KV');
    t.equal(reopened.listEndpoints(1).length, 31);
    t.same(reopened.listEndpoints(2), []);
  },
);

t.test(
  "two nodes: each sees the other's changes within a second",
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const a = await openOn(t, bucket);
    const b = await openOn(t, bucket);
    const seen: number[] = [];
    b.onChange((projects) => seen.push(projects.length));

    const revisionBefore = b.revision;
    const project = await a.createProject({ name: 'from a' });
    await within(() => b.projectByApiToken(project.apiToken)?.id === project.id, "a's project on b");
    t.not(b.revision, revisionBefore, "b's revision moved");
    t.ok(seen.includes(2), "b's listeners heard of it");

    const key = await b.createPersonalKey({ label: 'from b', scopes: ['*'], projects: '*', createdBy: null });
    await within(() => a.personalKeyByValue(key.value)?.id === key.key.id, "b's key on a");
    await a.revokePersonalKey(key.key.id);
    await within(() => b.personalKeyByValue(key.value)?.revokedAt != null, "a's revoke on b");

    await a.createEndpoint(project.id, { ...NEW_ENDPOINT, name: 'shared' });
    await within(() => b.endpoint(project.id, 'shared') !== undefined, "a's endpoint on b");
    await b.updateEndpoint(project.id, 'shared', () => ({ name: 'renamed' }));
    await within(
      () => a.endpoint(project.id, 'renamed') !== undefined && a.endpoint(project.id, 'shared') === undefined,
      "b's rename on a",
    );
    await a.deleteEndpoint(project.id, 'renamed');
    await within(() => b.listEndpoints(project.id).length === 0, "a's delete on b");
  },
);

t.test(
  'two nodes changing one endpoint at once: no change lost',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const a = await openOn(t, bucket);
    const b = await openOn(t, bucket);
    await a.createEndpoint(1, { ...NEW_ENDPOINT, name: 'hot' });
    await within(() => b.endpoint(1, 'hot') !== undefined, 'the endpoint on b');
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => addVersion(a, 'hot', `a${i}`)),
      ...Array.from({ length: 20 }, (_, i) => addVersion(b, 'hot', `b${i}`)),
    ]);
    // Each node's copy takes the other's last writes from the watch: wait for both (41 = none lost), then check.
    await within(
      () => a.endpoint(1, 'hot')?.versions.length === 41 && b.endpoint(1, 'hot')?.versions.length === 41,
      'both nodes holding all 41 versions',
    );
    const final = checkVersions(t, a.endpoint(1, 'hot')!, 41);
    t.same(
      final.versions
        .slice(1)
        .map((v) => String(v.query.query).split(' ')[1])
        .sort(),
      [
        ...Array.from({ length: 20 }, (_, i) => `a${i}`),
        ...Array.from({ length: 20 }, (_, i) => `b${i}`),
      ].sort(),
      "every node's every change is there once",
    );
    t.same(b.endpoint(1, 'hot'), final, 'both nodes hold the same endpoint');
  },
);

t.test(
  'two nodes creating one endpoint name at once: exactly one wins',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const a = await openOn(t, bucket);
    const b = await openOn(t, bucket);
    const racing = await Promise.allSettled([
      ...Array.from({ length: 10 }, () => a.createEndpoint(1, { ...NEW_ENDPOINT, name: 'contested' })),
      ...Array.from({ length: 10 }, () => b.createEndpoint(1, { ...NEW_ENDPOINT, name: 'contested' })),
    ]);
    const won = racing.filter((r): r is PromiseFulfilledResult<Endpoint> => r.status === 'fulfilled');
    t.equal(won.length, 1, 'exactly one create wins');
    for (const r of racing) if (r.status === 'rejected') t.match(r.reason, { code: 'endpoint_exists' });
    await within(
      () =>
        a.endpoint(1, 'contested')?.id === won[0]!.value.id &&
        b.endpoint(1, 'contested')?.id === won[0]!.value.id,
      'both nodes hold the winner',
    );
  },
);

t.test(
  'two nodes changing different records at once: each change is one write, conditional on its record alone',
  { skip: !nats && 'no nats-server' },
  async (t) => {
    const bucket = bucketName();
    const a = await openOn(t, bucket);
    const b = await openOn(t, bucket);
    // One replica: the per-record condition holds on any server version, so no write waits for the bucket.
    const watcher = await node(t);
    const seen: Msg[] = [];
    watcher.subscribe(`$KV.${bucket}.endpoints.>`, {
      callback: (_err, m) => {
        seen.push(m);
      },
    });
    await watcher.flush();
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => a.createEndpoint(1, { ...NEW_ENDPOINT, name: `a${i}` })),
      ...Array.from({ length: 10 }, (_, i) => b.createEndpoint(1, { ...NEW_ENDPOINT, name: `b${i}` })),
    ]);
    await within(() => a.listEndpoints(1).length === 20 && b.listEndpoints(1).length === 20, 'all on both');
    await watcher.flush();
    t.equal(seen.length, 20, 'one publish per change: none was retried');
    t.ok(
      seen.every(
        (m) =>
          m.headers?.get('Nats-Expected-Last-Subject-Sequence') === '0' &&
          m.headers.get('Nats-Expected-Last-Sequence') === '',
      ),
      'each conditional on its record (never written), none on the bucket',
    );
  },
);

/** A query change decided from the version it follows (so a lost update shows as a wrong `after`). */
function addVersion(catalog: KvCatalog, name: string, tag: string): Promise<Endpoint | undefined> {
  return catalog.updateEndpoint(1, name, (current) => ({
    newVersion: {
      query: { kind: 'HogQLQuery', query: `SELECT ${tag} after v${current.versions.length}` },
      variables: {},
      isMaterialized: false,
      createdBy: null,
    },
  }));
}

/** Versions 1..n, and each new version decided from the one just before it. */
function checkVersions(t: Test, endpoint: Endpoint, n: number): Endpoint {
  t.same(
    endpoint.versions.map((v) => v.version),
    Array.from({ length: n }, (_, i) => i + 1),
  );
  t.same(
    endpoint.versions.slice(1).map((v) => String(v.query.query).split(' after ')[1]),
    Array.from({ length: n - 1 }, (_, i) => `v${i + 1}`),
    'each change saw the one before it',
  );
  return endpoint;
}
