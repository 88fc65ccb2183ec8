/**
 * Typed properties end to end (issue 26): events captured over HTTP into a real Weir, their property types
 * detected by ingest, and the query API and a SQL endpoint reading `properties.x` as those types — then a type
 * changed through the API, and the endpoint's next run (cached before) answering by the new type.
 */
import t from 'tap';
import { createEndpoint, hogql, runOk } from '../helpers/endpoints.ts';
import { captureAll, rows } from '../helpers/query-api.ts';
import { PERSONAL_API_KEY, request, startTestWeir, waitFor, type TestWeir } from '../helpers/weir.ts';

const w: TestWeir = await startTestWeir();
t.teardown(() => w.close());

const recent = Math.floor(Date.now() / 1000) - 3600;
const at = (s: number): string => new Date((recent + s) * 1000).toISOString();

await captureAll(w, [
  {
    event: 'purchase',
    distinct_id: 'ann',
    timestamp: at(0),
    properties: { price: 10, paid: true, $set: { trial_started: '2024-02-20T00:00:00Z' } },
  },
  { event: 'purchase', distinct_id: 'ann', timestamp: at(1), properties: { price: 9, paid: false } },
  { event: 'purchase', distinct_id: 'bob', timestamp: at(2), properties: { price: '2.5', paid: 'true' } },
  { event: 'purchase', distinct_id: 'cat', timestamp: at(3), properties: { price: 'n/a' } },
]);

/** Waits until ingest's definitions are visible to queries (they are written off the hot path). */
async function definitionsSeen(): Promise<void> {
  await waitFor(
    async () => {
      const res = await request(`${w.url}/api/projects/1/property_definitions/?limit=100`, {
        headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
      });
      const names = (res.json as { results: { name: string }[] }).results.map((d) => d.name);
      return ['price', 'paid', 'trial_started'].every((n) => names.includes(n)) ? true : undefined;
    },
    10_000,
    'the property definitions',
  );
}

t.test('the query API reads properties as ingest typed them', async (t) => {
  await definitionsSeen();
  t.same(
    await rows(
      w,
      'SELECT sum(properties.price), max(properties.price), countIf(properties.paid) FROM events',
    ),
    [[21.5, 10, 2]], // 10 + 9 + 2.5 ('n/a' is null); 10 > 9 as numbers; true and 'true'
  );
  t.same(
    await rows(
      w,
      "SELECT dateDiff('day', person.properties.trial_started, toDateTime('2024-03-01 00:00:00')) FROM events WHERE distinct_id = 'ann' LIMIT 1",
    ),
    [[10]],
  );
  // A person without the property reads null, rather than failing the query.
  t.same(
    await rows(
      w,
      "SELECT person.properties.trial_started + INTERVAL 30 DAY FROM events WHERE distinct_id = 'cat'",
    ),
    [[null]],
  );
});

t.test('a type changed through the API changes the next run of an endpoint, cached or not', async (t) => {
  await definitionsSeen();
  await createEndpoint(w, {
    name: 'top_price',
    query: hogql('SELECT max(properties.price) AS top FROM events'),
  });
  t.same((await runOk(w, 'top_price')).results, [[10]]);
  t.equal((await runOk(w, 'top_price')).is_cached, true);
  const res = await request(`${w.url}/api/projects/1/property_definitions/event/price/`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ property_type: 'String' }),
  });
  t.equal(res.status, 200, res.text);
  // As text, the greatest is 'n/a' ('n' sorts after the digits).
  const run = await runOk(w, 'top_price');
  t.same(run.results, [['n/a']]);
  t.equal(run.is_cached, false);
});
