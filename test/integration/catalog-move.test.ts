/**
 * `weir catalog export | weir catalog import`: the real CLI moves a file catalog into NATS KV and back, every
 * project, key (as its hash: the key still works, its value is never written) and endpoint intact; an import
 * never overwrites a catalog that exists. Without nats-server on PATH this skips with the reason (fails under CI).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { FileCatalog } from '../../src/catalog/file-catalog.ts';
import { CATALOG_BUCKET, KvCatalog } from '../../src/catalog/kv-catalog.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { tempDir } from '../helpers/weir.ts';

const BIN = join(import.meta.dirname, '../../bin/weir.js');
const NO_ENV = { bootstrapProjectApiKey: undefined, bootstrapPersonalApiKey: undefined };

function weir(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('WEIR_')) delete env[k];
  const r = spawnSync(process.execPath, [BIN, 'catalog', ...args], { input, encoding: 'utf8', env });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const probe = spawnSync('nats-server', ['--version']);
if (probe.error) {
  const why = `moving a catalog to NATS KV needs nats-server on PATH: ${probe.error.message}`;
  if (process.env['CI']) t.fail(why);
  else t.comment(`SKIPPED: ${why}`);
} else {
  const nats = await startNatsServer();
  t.teardown(() => nats.close());
  const from = tempDir('weir-catalog-from-');
  const back = tempDir('weir-catalog-back-');
  t.teardown(() => {
    rmSync(from, { recursive: true, force: true });
    rmSync(back, { recursive: true, force: true });
  });

  // A file catalog with a second project, a second key and an endpoint with two versions.
  const file = await FileCatalog.open({ dataDir: from, ...NO_ENV });
  const rootKey = file.bootstrap!.personalApiKey!;
  const marketing = await file.createProject({ name: 'Marketing' });
  const reader = await file.createPersonalKey({
    label: 'reader',
    scopes: ['query:read'],
    projects: [1, 2],
    createdBy: null,
  });
  const query = (text: string): { kind: 'HogQLQuery'; query: string } => ({
    kind: 'HogQLQuery',
    query: text,
  });
  await file.createEndpoint(1, {
    name: 'daily',
    description: '',
    cacheAgeSeconds: 300,
    isActive: true,
    syncFrequency: '24hour',
    materializationBucket: 'day',
    query: query('SELECT count() FROM events'),
    variables: {},
    isMaterialized: false,
    createdBy: null,
  });
  await file.updateEndpoint(1, 'daily', () => ({
    newVersion: { query: query('SELECT 1'), variables: {}, isMaterialized: false, createdBy: null },
  }));

  t.test('file → KV: every record moves, keys as hashes', async (t) => {
    const exported = weir(['export', '--data-dir', from]);
    t.equal(exported.status, 0, exported.stderr);
    t.notMatch(exported.stdout, rootKey, 'a key value is never exported');
    const imported = weir(['import', '--nats-url', nats.url, '-'], exported.stdout);
    t.equal(imported.status, 0, imported.stderr);
    t.match(imported.stderr, /imported 2 projects, 2 keys and 1 endpoints into the NATS KV bucket/);

    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const kv = await KvCatalog.open(nc, { bucket: CATALOG_BUCKET, ...NO_ENV });
    t.teardown(() => kv.close());
    t.equal(kv.bootstrap, undefined, 'an imported bucket is not bootstrapped again');
    t.same(kv.listProjects(), file.listProjects());
    t.same(kv.listPersonalKeys(), file.listPersonalKeys());
    t.same(kv.listEndpoints(1), file.listEndpoints(1));
    t.equal(
      kv.personalKeyByValue(rootKey)?.id,
      file.personalKeyByValue(rootKey)?.id,
      'the root key still works',
    );
    t.equal(kv.personalKeyByValue(reader.value)?.label, 'reader');
    t.equal(kv.projectByApiToken(marketing.apiToken)?.id, 2);
    // The id counter moved too: the next project is 3, not a second 2.
    t.equal((await kv.createProject({ name: 'Next' })).id, 3);

    const again = weir(['import', '--nats-url', nats.url, '-'], exported.stdout);
    t.equal(again.status, 1);
    t.match(again.stderr, /already holds a catalog/);
  });

  t.test('KV → file: back into an empty data directory, and never over a catalog that exists', async (t) => {
    const exported = weir(['export', '--nats-url', nats.url]);
    t.equal(exported.status, 0, exported.stderr);
    const imported = weir(['import', '--data-dir', back, '-'], exported.stdout);
    t.equal(imported.status, 0, imported.stderr);
    const moved = await FileCatalog.open({ dataDir: back, ...NO_ENV });
    t.same(
      moved.listProjects().map((p) => p.name),
      ['Default project', 'Marketing', 'Next'],
    );
    t.equal(moved.personalKeyByValue(rootKey)?.scopes[0], '*');
    t.equal(moved.endpoint(1, 'daily')?.versions.length, 2);
    t.equal((await moved.createProject({ name: 'After' })).id, 4);

    const over = weir(['import', '--data-dir', from, '-'], exported.stdout);
    t.equal(over.status, 1);
    t.match(over.stderr, /exists already: an import never overwrites a catalog/);
    const junk = weir(['import', '--data-dir', tempDir('weir-catalog-junk-'), '-'], '{"nope": true}');
    t.equal(junk.status, 1);
    t.match(junk.stderr, /not a catalog export/);
  });
}
