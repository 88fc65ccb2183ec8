/**
 * The real posthog-node SDK pointed at Weir: what it sends (gzip batches to /batch/, sent_at, uuids,
 * historical_migration) must land as rows, and its feature-flag calls get the answer of a project with no
 * flags.
 */
import t from 'tap';
import { PostHog } from 'posthog-node';
import { PROJECT_API_KEY, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

interface EventRow {
  event: string;
  distinct_id: string;
  uuid: string;
  timestamp: string;
  properties: string;
}

t.test('live events, identify, alias and group identify from the SDK are stored', async (t) => {
  const client = new PostHog(PROJECT_API_KEY, { host: w.url, flushAt: 5, flushInterval: 0 });
  const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  client.capture({ distinctId: 'sdk-user-1', event: 'sdk test', properties: { plan: 'pro', n: 1 }, uuid });
  client.capture({
    distinctId: 'sdk-user-1',
    event: '$pageview',
    properties: { $current_url: 'https://example.com/a' },
  });
  client.identify({ distinctId: 'sdk-user-1', properties: { email: 'one@example.com' } });
  client.alias({ distinctId: 'sdk-user-1', alias: 'sdk-user-1-alias' });
  client.groupIdentify({ groupType: 'company', groupKey: 'acme', properties: { name: 'Acme' } });
  client.capture({ distinctId: 'sdk-user-1', event: 'with group', groups: { company: 'acme' } });
  await client.shutdown();

  const rows = await w.rows<EventRow>(
    `SELECT event, distinct_id, toString(uuid) AS uuid, properties FROM events
     WHERE distinct_id LIKE 'sdk-user-1%' OR event = '$groupidentify' ORDER BY timestamp`,
  );
  t.same(
    rows.map((r) => r.event).sort(),
    ['$create_alias', '$groupidentify', '$identify', '$pageview', 'sdk test', 'with group'].sort(),
  );
  const custom = rows.find((r) => r.event === 'sdk test')!;
  t.equal(custom.uuid, uuid, 'the SDK uuid is the stored uuid');
  const props = JSON.parse(custom.properties) as Record<string, unknown>;
  t.equal(props['plan'], 'pro');
  t.equal(props['$lib'], 'posthog-node', 'SDK properties are kept');
  const identify = JSON.parse(rows.find((r) => r.event === '$identify')!.properties) as Record<
    string,
    unknown
  >;
  t.same(identify['$set'], { email: 'one@example.com' });
  const alias = JSON.parse(rows.find((r) => r.event === '$create_alias')!.properties) as Record<
    string,
    unknown
  >;
  t.equal(alias['alias'], 'sdk-user-1-alias');
});

t.test('a historical migration backfill keeps its old timestamps and order', async (t) => {
  const client = new PostHog(PROJECT_API_KEY, {
    host: w.url,
    historicalMigration: true,
    flushAt: 100,
    flushInterval: 0,
  });
  const start = Date.UTC(2021, 0, 1, 12, 0, 0);
  const n = 250;
  for (let i = 0; i < n; i++) {
    client.capture({
      distinctId: `backfill-${i % 7}`,
      event: 'backfilled',
      properties: { seq: i },
      timestamp: new Date(start + i * 60_000),
    });
  }
  await client.shutdown();

  const rows = await w.rows<{ seq: string; ts: string }>(
    `SELECT JSONExtractString(properties, 'seq') AS seq, toString(toUnixTimestamp64Milli(timestamp)) AS ts
     FROM events WHERE event = 'backfilled' ORDER BY timestamp`,
  );
  t.equal(rows.length, n, 'every backfilled event is stored');
  const drift = rows.map((r) => Math.abs(Number(r.ts) - (start + Number(r.seq) * 60_000)));
  t.ok(
    Math.max(...drift) < 2_000,
    `timestamps kept within the clock-skew correction (max drift ${Math.max(...drift)} ms)`,
  );
  t.same(
    rows.map((r) => Number(r.seq)),
    Array.from({ length: n }, (_, i) => i),
  );
});

t.test('feature flag calls get a sane empty answer: no flags, nothing failed', async (t) => {
  const errors: unknown[] = [];
  const client = new PostHog(PROJECT_API_KEY, { host: w.url, flushAt: 1, flushInterval: 0 });
  client.on('error', (err: unknown) => errors.push(err));
  t.same(await client.getAllFlags('flag-user'), {}, 'getAllFlags: no flags');
  t.same(
    await client.getAllFlagsAndPayloads('flag-user', { groups: { company: 'acme' } }),
    { featureFlags: {}, featureFlagPayloads: {} },
    'getAllFlagsAndPayloads: none',
  );
  // undefined is the SDK's "no such flag", what a PostHog project without the flag answers.
  t.equal(await client.isFeatureEnabled('new-checkout', 'flag-user'), undefined, 'isFeatureEnabled: no flag');
  t.equal(await client.getFeatureFlag('new-checkout', 'flag-user'), undefined, 'getFeatureFlag: no flag');
  t.equal(await client.getFeatureFlagPayload('new-checkout', 'flag-user'), undefined, 'no payload');
  await client.shutdown();
  t.same(errors, [], 'the SDK reported no error');
});

t.test('feature flag calls with a key that names no project fail as PostHog fails them', async (t) => {
  const errors: unknown[] = [];
  const client = new PostHog('phc_nobody_has_this_key', { host: w.url, flushAt: 1, flushInterval: 0 });
  client.on('error', (err: unknown) => errors.push(err));
  t.same(await client.getAllFlags('flag-user'), {}, 'getAllFlags: no flags');
  t.equal(await client.isFeatureEnabled('new-checkout', 'flag-user'), undefined, 'isFeatureEnabled: unknown');
  await client.shutdown();
  t.match(String(errors[0]), /401/, 'the SDK reports the 401');
});
