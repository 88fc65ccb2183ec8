/**
 * The property definitions registry on a real embedded store: the types the query path compiles against
 * (`forProject`, its versions), definitions of events that came over JetStream as JSON text, and a process
 * without ingest that reloads what another one recorded.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { NO_PROPERTY_TYPES } from '../../src/core/property-types.ts';
import type { PipelineEvent } from '../../src/core/step.ts';
import { PropertyDefinitionRegistry } from '../../src/ingest/property-definitions.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import { waitFor } from '../helpers/weir.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'weir-property-definitions-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const logger = createLogger('silent');
const store = await openEmbeddedStore(
  { dataDir, storeFsync: false, storeMaxPendingMb: 64, storeApplyIntervalMs: 50 },
  { logger, metrics: new Metrics({ defaultMetrics: false }) },
);
t.teardown(() => store.close());

function event(
  projectId: number,
  name: string,
  properties: Record<string, unknown>,
  extra: Partial<PipelineEvent> = {},
): PipelineEvent {
  return {
    projectId,
    uuid: '',
    event: name,
    distinctId: 'd',
    timestamp: 0,
    properties,
    receivedAt: 0,
    personId: '',
    personMode: 'full',
    personProperties: {},
    groups: ['', '', '', '', ''],
    ...extra,
  };
}

const recorder = new PropertyDefinitionRegistry({ flushMs: 10 }, { store, logger });
await recorder.start();
t.teardown(() => recorder.close());

t.test('forProject: the types of one moment, and a version that changes only with them', (t) => {
  t.equal(recorder.forProject(1), NO_PROPERTY_TYPES, 'nothing seen yet: version 0');
  recorder.observe([event(1, '$pageview', { price: 9.5, note: null, $set: { plan: 'pro' } })]);
  const first = recorder.forProject(1);
  t.equal(first.event('price'), 'Numeric');
  t.equal(first.person('plan'), 'String');
  t.equal(first.event('note'), undefined, 'untyped');
  t.equal(first.event('plan'), undefined, 'a person property is not an event property');
  t.ok(first.version > 0);
  t.equal(recorder.forProject(1), first, 'the same object while nothing changed');

  recorder.observe([
    event(1, 'purchase', { price: 'cheap', other: null }),
    event(1, '$pageview', { price: 3 }),
  ]);
  t.equal(
    recorder.forProject(1).version,
    first.version,
    'a new event of a property and an untyped one change no type',
  );

  recorder.observe([event(1, '$pageview', { note: '2026-01-01' })]);
  const second = recorder.forProject(1);
  t.ok(second.version > first.version, 'an untyped property given a type changes the version');
  t.equal(second.event('note'), 'DateTime');
  t.equal(first.event('note'), undefined, 'an earlier moment is not changed after the fact');
  t.equal(recorder.forProject(2), NO_PROPERTY_TYPES, 'another project');
  t.end();
});

t.test('setType changes the type and the version, and is stored', async (t) => {
  const before = recorder.forProject(1).version;
  const changed = await recorder.setType(1, 'event', 'price', 'String');
  t.equal(changed?.propertyType, 'String');
  t.ok(recorder.forProject(1).version > before);
  t.equal(await recorder.setType(1, 'event', 'never-seen', 'String'), undefined);
  const rows = await store.query<{ property_type: string; changed: number }>(
    `SELECT property_type, type_changed_at IS NOT NULL AS changed FROM property_definitions FINAL
     WHERE project_id = 1 AND type = 'event' AND name = 'price'`,
  );
  t.same(rows, [{ property_type: 'String', changed: 1 }]);
});

t.test('events from the bus are read from their JSON text, after the fact', async (t) => {
  const json = JSON.stringify({ amount: 12, currency: 'EUR', $set: { ignored: 1 } });
  recorder.observe([event(3, 'order', { $set: { tier: 'gold' } }, { propertiesJson: json })]);
  t.equal(
    recorder.forProject(3).person('tier'),
    'String',
    'person properties at once: ingest reads them anyway',
  );
  await waitFor(
    () => Promise.resolve(recorder.forProject(3).event('amount') ? true : undefined),
    5000,
    'the JSON read',
  );
  t.equal(recorder.forProject(3).event('currency'), 'String');
  t.equal(recorder.forProject(3).event('$set'), undefined);
  t.same(recorder.get(3, 'event', 'amount')?.events, ['order']);
});

t.test('a process without ingest reloads what the recorder stored', async (t) => {
  await recorder.flush();
  const reader = new PropertyDefinitionRegistry({ reloadMs: 50 }, { store, logger });
  await reader.start();
  t.teardown(() => reader.close());
  const loaded = reader.forProject(1);
  t.equal(loaded.event('price'), 'String', 'the type set on purpose');
  t.equal(loaded.event('note'), 'DateTime');
  t.same(reader.list(1, { limit: 100, offset: 0 }), recorder.list(1, { limit: 100, offset: 0 }));

  recorder.observe([event(1, '$pageview', { fresh: true })]);
  await recorder.flush();
  await waitFor(
    () => Promise.resolve(reader.forProject(1).event('fresh') ? true : undefined),
    5000,
    'the reload',
  );
  const reloaded = reader.forProject(1);
  t.ok(reloaded.version !== loaded.version, 'a new type: a new version');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(reader.forProject(1), reloaded, 'reloads that find the same types keep the version');
});
