/** The catalog's in-memory state: changes make a new state and never touch the one readers hold. */
import t from 'tap';
import { CatalogState, type StoredPersonalApiKey } from '../../src/catalog/catalog-state.ts';
import { hashKey, hashKeyOfCaller } from '../../src/catalog/keys.ts';
import type { Endpoint } from '../../src/core/ports.ts';

const T0 = '2026-01-01T00:00:00.000Z';

function key(id: string, value: string, projects: readonly number[] | '*'): StoredPersonalApiKey {
  return {
    id,
    label: id,
    valueHash: hashKey(value),
    mask: 'phx_…0000',
    scopes: ['*'],
    projects,
    createdAt: T0,
    createdBy: null,
    revokedAt: null,
  };
}

function base(): CatalogState {
  return new CatalogState({
    version: 1,
    nextProjectId: 2,
    projects: [
      {
        id: 1,
        name: 'one',
        apiToken: 'phc_one',
        createdAt: T0,
        anonymizeIps: false,
        eventRetentionDays: null,
        suppressedDistinctIds: [],
        dataDeletedAt: null,
      },
    ],
    personalApiKeys: [key('a', 'phx_a', [1]), key('all', 'phx_all', '*')],
    endpoints: [],
    deletions: [],
  });
}

t.test('a file written before keys had createdBy / revokedAt reads as never revoked', (t) => {
  const old = JSON.stringify({
    version: 1,
    nextProjectId: 2,
    projects: [{ id: 1, name: 'one', apiToken: 'phc_one', createdAt: T0 }],
    personalApiKeys: [
      {
        id: '1',
        label: 'bootstrap',
        valueHash: hashKey('phx_old'),
        mask: 'm',
        scopes: ['*'],
        projects: [1],
        createdAt: T0,
      },
    ],
  });
  const state = CatalogState.fromJson(old);
  t.match(state.personalKeyByValue('phx_old'), { id: '1', createdBy: null, revokedAt: null });
  t.equal(state.projectByApiToken('phc_one')?.id, 1);
  t.equal(state.project(1)?.anonymizeIps, false, 'a project written before the setting keeps IPs');
  t.end();
});

t.test('a new project takes the next id, and the granted key gains it', (t) => {
  const before = base();
  const { state, project } = before.withProject(
    {
      name: 'two',
      apiToken: 'phc_two',
      createdAt: T0,
      anonymizeIps: false,
      eventRetentionDays: null,
      suppressedDistinctIds: [],
      dataDeletedAt: null,
    },
    'a',
  );
  t.equal(project.id, 2);
  t.equal(state.snapshot.nextProjectId, 3);
  t.equal(state.projectByApiToken('phc_two'), project);
  t.same(state.personalKey('a')?.projects, [1, 2]);
  t.equal(before.projectByApiToken('phc_two'), undefined, 'the old state is untouched');
  t.same(before.personalKey('a')?.projects, [1]);

  const toAll = state.withProject(
    {
      name: 'three',
      apiToken: 'phc_three',
      createdAt: T0,
      anonymizeIps: false,
      eventRetentionDays: null,
      suppressedDistinctIds: [],
      dataDeletedAt: null,
    },
    'all',
  );
  t.equal(toAll.state.personalKey('all')?.projects, '*', 'a key reaching every project stays so');
  t.throws(
    () =>
      state.withProject(
        {
          name: 'x',
          apiToken: 'phc_x',
          createdAt: T0,
          anonymizeIps: false,
          eventRetentionDays: null,
          suppressedDistinctIds: [],
          dataDeletedAt: null,
        },
        'nobody',
      ),
    /no personal API key/,
  );
  t.end();
});

t.test('a rename keeps id and API key', (t) => {
  const renamed = base().withProjectPatch(1, { name: 'uno' });
  t.match(renamed?.project, {
    id: 1,
    name: 'uno',
    apiToken: 'phc_one',
    anonymizeIps: false,
    eventRetentionDays: null,
    suppressedDistinctIds: [],
    dataDeletedAt: null,
  });
  t.equal(renamed?.state.projectByApiToken('phc_one')?.name, 'uno', 'capture sees the same project');
  t.equal(base().withProjectPatch(9, { name: 'x' }), undefined);
  t.equal(base().withProjectPatch(1, { name: 'one' }), undefined, 'a patch that changes nothing');
  t.end();
});

t.test('anonymize_ips is a setting of its own; the name stays', (t) => {
  const on = base().withProjectPatch(1, { anonymizeIps: true });
  t.match(on?.project, { id: 1, name: 'one', anonymizeIps: true });
  t.equal(on?.state.projectByApiToken('phc_one')?.anonymizeIps, true, 'capture reads it by key');
  t.equal(on?.state.withProjectPatch(1, { anonymizeIps: true }), undefined);
  t.match(on?.state.withProjectPatch(1, { anonymizeIps: false })?.project, { anonymizeIps: false });
  t.end();
});

t.test('keys: found by value through their hash, revoked once, never duplicated', (t) => {
  const state = base().withKey(key('b', 'phx_b', [1]));
  t.equal(state.personalKeyByValue('phx_b')?.id, 'b');
  t.equal(state.personalKeyByValue('phx_nope'), undefined);
  t.throws(() => state.withKey(key('b', 'phx_other', [1])), /already exists/, 'same id');
  t.throws(() => state.withKey(key('c', 'phx_b', [1])), /already exists/, 'same value');

  const revoked = state.withKeyRevoked('b', T0);
  t.equal(revoked?.personalKeyByValue('phx_b')?.revokedAt, T0, 'still found, so auth can say it is revoked');
  t.equal(state.personalKeyByValue('phx_b')?.revokedAt, null, 'the old state is untouched');
  t.equal(revoked?.withKeyRevoked('b', T0), undefined, 'revoking twice changes nothing');
  t.equal(state.withKeyRevoked('missing', T0), undefined);
  t.end();
});

const Q1 = { kind: 'HogQLQuery' as const, query: 'SELECT 1' };

function endpoint(name: string, projectId = 1): Endpoint {
  return {
    id: `id-${name}`,
    projectId,
    name,
    description: '',
    cacheAgeSeconds: 300,
    isActive: true,
    syncFrequency: '24hour',
    materializationBucket: 'day',
    createdAt: T0,
    updatedAt: T0,
    versions: [
      {
        version: 1,
        query: Q1,
        variables: {},
        isActive: true,
        isMaterialized: false,
        createdAt: T0,
        createdBy: null,
      },
    ],
  };
}

t.test("a caller's key hashes as hashKey does, before and after the remembered hashes are dropped", (t) => {
  // 5000 values: past the 4096 remembered, so the memo is cleared once on the way; then each again.
  const values = Array.from({ length: 5000 }, (_, i) => `phx_value_${i}`);
  let differ = 0;
  for (let round = 0; round < 2; round++)
    for (const v of values) if (hashKeyOfCaller(v) !== hashKey(v)) differ++;
  t.equal(differ, 0);
  t.not(hashKeyOfCaller('phx_a'), hashKeyOfCaller('phx_b'));
  t.end();
});

t.test('a file written before endpoints existed reads with none', (t) => {
  const old = JSON.stringify({ ...base().snapshot, endpoints: undefined });
  const state = CatalogState.fromJson(old);
  t.same(state.snapshot.endpoints, []);
  t.same(state.endpointsOf(1), []);
  t.end();
});

t.test('endpoints: unique by name in a project, found by name, listed oldest first', (t) => {
  const withTwo = base().withProject(
    {
      name: 'two',
      apiToken: 'phc_two',
      createdAt: T0,
      anonymizeIps: false,
      eventRetentionDays: null,
      suppressedDistinctIds: [],
      dataDeletedAt: null,
    },
    'a',
  ).state;
  const state = withTwo.withEndpoint(endpoint('daily')).withEndpoint(endpoint('weekly'));
  t.equal(state.endpoint(1, 'daily')?.id, 'id-daily');
  t.equal(state.endpoint(1, 'Daily'), undefined, 'names are case-sensitive, as paths are');
  t.same(
    state.endpointsOf(1).map((e) => e.name),
    ['daily', 'weekly'],
  );
  t.throws(() => state.withEndpoint({ ...endpoint('daily'), id: 'other' }), {
    code: 'endpoint_exists',
    attr: 'name',
  });
  const other = state.withEndpoint(endpoint('daily', 2));
  t.equal(other.endpoint(2, 'daily')?.projectId, 2, 'the same name in another project is another endpoint');
  t.equal(state.endpoint(2, 'daily'), undefined, 'the old state is untouched');
  t.throws(() => state.withEndpoint(endpoint('x', 9)), /no project 9/);
  t.end();
});

t.test('endpoint changes: a new version appends, flags change in place, renames stay unique', (t) => {
  const state = base().withEndpoint(endpoint('daily')).withEndpoint(endpoint('weekly'));
  const T1 = '2026-02-01T00:00:00.000Z';
  const v2 = state.withEndpointChanged(
    1,
    'daily',
    {
      description: 'new',
      newVersion: {
        query: { kind: 'HogQLQuery', query: 'SELECT 2' },
        variables: {},
        isMaterialized: false,
        createdBy: 'k',
      },
    },
    T1,
  )!;
  t.same(
    v2.endpoint.versions.map((v) => [v.version, v.query.query, v.createdAt]),
    [
      [1, 'SELECT 1', T0],
      [2, 'SELECT 2', T1],
    ],
  );
  t.equal(v2.endpoint.description, 'new');
  t.equal(v2.endpoint.updatedAt, T1);
  t.equal(v2.endpoint.createdAt, T0);
  t.equal(state.endpoint(1, 'daily')?.versions.length, 1, 'the old state is untouched');

  const off = v2.state.withEndpointChanged(1, 'daily', { version: { version: 1, isActive: false } }, T1)!;
  t.same(
    off.endpoint.versions.map((v) => v.isActive),
    [false, true],
  );
  t.equal(off.endpoint.versions[1], v2.endpoint.versions[1], 'the other version is the same object');

  t.throws(() => off.state.withEndpointChanged(1, 'daily', { name: 'weekly' }, T1), {
    code: 'endpoint_exists',
  });
  const renamed = off.state.withEndpointChanged(1, 'daily', { name: 'everyday' }, T1)!;
  t.equal(renamed.state.endpoint(1, 'daily'), undefined);
  t.equal(renamed.state.endpoint(1, 'everyday')?.id, 'id-daily', 'a rename keeps the id');
  t.equal(state.withEndpointChanged(1, 'missing', {}, T1), undefined);

  const gone = renamed.state.withoutEndpoint(1, 'everyday')!;
  t.same(
    gone.endpointsOf(1).map((e) => e.name),
    ['weekly'],
  );
  t.equal(gone.withoutEndpoint(1, 'everyday'), undefined);
  t.end();
});
