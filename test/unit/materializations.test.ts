/**
 * What the run path asks of a version's materialization: a result is served while it is younger than twice
 * its sync interval (SPEC §4), never when the version is not materialized or has no result; and the status
 * the API shows.
 */
import t from 'tap';
import type { Endpoint, EndpointVersion, MaterializationState } from '../../src/core/ports.ts';
import { Materializations } from '../../src/query/materialize/materializations.ts';

const at = '2026-01-01T00:00:00.000Z';
const state: MaterializationState = {
  status: 'completed',
  lastMaterializedAt: at,
  rows: 3,
  bytes: 100,
  error: null,
  objectKey: 'materializations/1/e/v1/x.parquet',
  lease: null,
  refreshedAt: at,
  serving: { kind: 'sql' },
};
const version: EndpointVersion = {
  version: 1,
  query: { kind: 'HogQLQuery', query: 'SELECT 1' },
  variables: {},
  isActive: true,
  isMaterialized: true,
  materialization: state,
  createdAt: at,
  createdBy: null,
};
const endpoint: Endpoint = {
  id: 'e',
  projectId: 1,
  name: 'e',
  description: '',
  cacheAgeSeconds: 300,
  isActive: true,
  syncFrequency: '1hour',
  materializationBucket: 'day',
  createdAt: at,
  updatedAt: at,
  versions: [version],
};
const projects: Record<number, { dataDeletedAt: string | null }> = { 1: { dataDeletedAt: null } };
const catalog = { project: (id: number) => projects[id] } as never;
const m = new Materializations({}, { catalog, writer: {} as never, logger: {} as never });
const t0 = Date.parse(at);

t.test('a result is served until it is twice its sync interval old', (t) => {
  t.match(m.servable(endpoint, version, t0 + 3600_000), { objectKey: state.objectKey, at });
  t.ok(m.servable(endpoint, version, t0 + 2 * 3600_000), 'at exactly twice');
  t.equal(m.servable(endpoint, version, t0 + 2 * 3600_000 + 1), undefined, 'older: the raw data answers');
  t.end();
});

t.test('a result computed before data of its project was erased is not served again', (t) => {
  projects[1] = { dataDeletedAt: new Date(t0 + 1).toISOString() };
  t.equal(m.servable(endpoint, version, t0 + 1000), undefined, 'erased after it was computed');
  projects[1] = { dataDeletedAt: new Date(t0).toISOString() };
  t.ok(m.servable(endpoint, version, t0 + 1000), 'computed at the same moment or after: served');
  projects[1] = { dataDeletedAt: null };
  t.end();
});

t.test('no result, or not materialized: nothing is served', (t) => {
  t.equal(m.servable(endpoint, { ...version, isMaterialized: false }, t0), undefined);
  t.equal(
    m.servable(endpoint, { ...version, materialization: { ...state, objectKey: null } }, t0),
    undefined,
  );
  t.equal(m.servable(endpoint, { ...version, materialization: undefined }, t0), undefined);
  t.end();
});

t.test('the status shown', (t) => {
  t.equal(Materializations.status({ ...version, isMaterialized: false }), 'none');
  t.equal(
    Materializations.status({ ...version, materialization: undefined }),
    'pending',
    'enabled, never refreshed',
  );
  t.equal(Materializations.status(version), 'completed');
  t.end();
});
