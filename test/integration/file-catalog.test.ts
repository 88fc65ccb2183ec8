/**
 * The file catalog on a real file system: first start, reopen, concurrent changes never lost, a change
 * visible only once it is on disk, a failed write leaving everything as it was.
 */
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { FileCatalog } from '../../src/catalog/file-catalog.ts';
import { tempDir } from '../helpers/weir.ts';

const NO_ENV = { bootstrapProjectApiKey: undefined, bootstrapPersonalApiKey: undefined };

async function fresh(t: Test): Promise<{ dir: string; catalog: FileCatalog }> {
  const dir = tempDir('weir-catalog-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, catalog: await FileCatalog.open({ dataDir: dir, ...NO_ENV }) };
}

t.test('a first open makes project 1 and a * key; a reopen reads them back', async (t) => {
  const { dir, catalog } = await fresh(t);
  const boot = catalog.bootstrap!;
  t.match(boot.project, { id: 1, apiToken: /^phc_[A-Za-z0-9]{43}$/ });
  t.match(boot.personalApiKey, /^phx_[A-Za-z0-9]{43}$/);
  t.match(catalog.personalKeyByValue(boot.personalApiKey!), {
    scopes: ['*'],
    projects: [1],
    revokedAt: null,
  });
  t.equal(statSync(join(dir, 'catalog.json')).mode & 0o777, 0o600, 'only the owner reads the file');

  const again = await FileCatalog.open({ dataDir: dir, ...NO_ENV });
  t.equal(again.bootstrap, undefined);
  t.same(again.listProjects(), catalog.listProjects());
  t.same(again.listPersonalKeys(), catalog.listPersonalKeys());
});

t.test('bootstrap keys from the environment are used and not echoed back', async (t) => {
  const dir = tempDir('weir-catalog-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const catalog = await FileCatalog.open({
    dataDir: dir,
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
  t.notMatch(readFileSync(join(dir, 'catalog.json'), 'utf8'), /phx_from_env/);
});

t.test('200 concurrent changes of every kind: none lost, all on disk', async (t) => {
  const { dir, catalog } = await fresh(t);
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

  const reopened = await FileCatalog.open({ dataDir: dir, ...NO_ENV });
  t.same(reopened.listProjects(), catalog.listProjects(), 'projects on disk');
  t.same(reopened.listPersonalKeys(), catalog.listPersonalKeys(), 'keys on disk');
  for (const p of projects) t.equal(reopened.projectByApiToken(p.apiToken)?.id, p.id);
  for (const k of keys) t.equal(reopened.personalKeyByValue(k.value)?.id, k.key.id);
  for (const v of victims)
    t.ok(reopened.personalKeyByValue(v.value)?.revokedAt, `${v.key.label} revoked on disk`);
  const text = readFileSync(join(dir, 'catalog.json'), 'utf8');
  t.notOk(
    [...keys, ...victims].some((k) => text.includes(k.value)),
    'no key value in the file',
  );
});

t.test('a change is visible the moment it resolves, and not before it is on disk', async (t) => {
  const { dir, catalog } = await fresh(t);
  const made = await catalog.createPersonalKey({ label: 'x', scopes: ['*'], projects: [1], createdBy: null });
  t.equal(catalog.personalKeyByValue(made.value)?.revokedAt, null);
  const revoking = catalog.revokePersonalKey(made.key.id);
  t.equal(catalog.personalKeyByValue(made.value)?.revokedAt, null, 'not yet: it is not durable yet');
  t.equal(await revoking, true);
  t.ok(catalog.personalKeyByValue(made.value)?.revokedAt, 'revoked as soon as the call resolves');
  t.equal(await catalog.revokePersonalKey(made.key.id), false, 'a second revoke is a no-op');
  t.ok((await FileCatalog.open({ dataDir: dir, ...NO_ENV })).personalKeyByValue(made.value)?.revokedAt);
});

t.test('a failed write changes nothing, and later changes still run', async (t) => {
  const { dir, catalog } = await fresh(t);
  const blocker = join(dir, `catalog.json.${process.pid}.tmp`);
  mkdirSync(blocker); // opening the temporary file for writing now fails
  await t.rejects(catalog.createProject({ name: 'lost' }));
  t.same(
    catalog.listProjects().map((p) => p.name),
    ['Default project'],
    'the refused project is not visible',
  );
  rmSync(blocker, { recursive: true });
  const next = await catalog.createProject({ name: 'kept' });
  t.equal(next.id, 2, 'the failed change took no id');
  t.same(
    (await FileCatalog.open({ dataDir: dir, ...NO_ENV })).listProjects().map((p) => p.name),
    ['Default project', 'kept'],
  );
});

t.test('renames: unknown project is undefined; the same name writes nothing', async (t) => {
  const { catalog } = await fresh(t);
  t.equal(await catalog.updateProject(99, { name: 'x' }), undefined);
  const same = await catalog.updateProject(1, { name: 'Default project' });
  t.equal(same, catalog.project(1), 'the same object: no new state was made');
  t.equal((await catalog.updateProject(1, { name: 'Renamed' }))?.name, 'Renamed');
});

t.test('close waits for changes in progress', async (t) => {
  const { dir, catalog } = await fresh(t);
  const pending = catalog.createProject({ name: 'late' });
  await catalog.close();
  t.equal(catalog.listProjects().length, 2);
  await pending;
  t.equal((await FileCatalog.open({ dataDir: dir, ...NO_ENV })).listProjects().length, 2);
});

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

t.test('endpoints: concurrent creates of one name, one wins; versions never lost; all on disk', async (t) => {
  const { dir, catalog } = await fresh(t);
  const racing = await Promise.allSettled(
    Array.from({ length: 20 }, () => catalog.createEndpoint(1, { ...NEW_ENDPOINT, name: 'daily' })),
  );
  const won = racing.filter((r) => r.status === 'fulfilled');
  t.equal(won.length, 1, 'exactly one create wins');
  for (const r of racing) {
    if (r.status === 'rejected') t.match(r.reason, { code: 'endpoint_exists', status: 400, attr: 'name' });
  }
  const others = await Promise.all(
    Array.from({ length: 30 }, (_, i) => catalog.createEndpoint(1, { ...NEW_ENDPOINT, name: `e${i}` })),
  );
  t.equal(new Set(others.map((e) => e.id)).size, 30);

  // 25 concurrent query changes, each deciding from the state it replaces: 25 new versions, none lost.
  await Promise.all(
    Array.from({ length: 25 }, (_, i) =>
      catalog.updateEndpoint(1, 'daily', (current) => ({
        newVersion: {
          query: { kind: 'HogQLQuery', query: `SELECT ${i} -- after v${current.versions.length}` },
          variables: {},
          isMaterialized: false,
          createdBy: null,
        },
      })),
    ),
  );
  const daily = catalog.endpoint(1, 'daily')!;
  t.same(
    daily.versions.map((v) => v.version),
    Array.from({ length: 26 }, (_, i) => i + 1),
  );
  t.same(
    daily.versions.slice(1).map((v) => v.query.query),
    Array.from({ length: 25 }, (_, i) => `SELECT ${i} -- after v${i + 1}`),
    'each change saw the one before it',
  );
  t.equal(await catalog.updateEndpoint(1, 'nope', () => ({ description: 'x' })), undefined);
  const same = await catalog.updateEndpoint(1, 'e0', () => ({}));
  t.equal(same, catalog.endpoint(1, 'e0'), 'an empty change writes nothing');
  await t.rejects(
    catalog.updateEndpoint(1, 'e0', () => {
      throw new Error('refused');
    }),
    /refused/,
  );
  t.equal(await catalog.deleteEndpoint(1, 'e1'), true);
  t.equal(await catalog.deleteEndpoint(1, 'e1'), false);

  const reopened = await FileCatalog.open({ dataDir: dir, ...NO_ENV });
  t.same(reopened.listEndpoints(1), catalog.listEndpoints(1), 'endpoints and versions on disk');
  t.equal(reopened.listEndpoints(1).length, 30);
  t.same(reopened.listEndpoints(2), []);
});
