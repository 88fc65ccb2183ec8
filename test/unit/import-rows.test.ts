/**
 * What `weir import` sends of a row and what it refuses; the uuid it derives for a row without one; where a
 * checkpoint says reading starts.
 */
import t from 'tap';
import { startOf, defaultCheckpointPath, type Checkpoint } from '../../src/import/checkpoint.ts';
import { toImportEvent } from '../../src/import/event-row.ts';
import { canonicalJson, deriveUuid } from '../../src/import/row-uuid.ts';
import { waitFor } from '../../src/import/sender.ts';

const row = {
  event: '$pageview',
  distinct_id: 'u1',
  timestamp: '2023-02-03T04:05:06.789Z',
  properties: { $browser: 'Chrome', token: 'phc_other_project' },
  person_properties: { email: 'a@b' },
  team_id: 2,
};

t.test(
  "PostHog's export row: fields kept, timestamp as written, other projects' keys and export-only fields dropped",
  (t) => {
    const r = toImportEvent(
      { ...row, uuid: '0190A000-0000-7000-8000-000000000001', $set: { plan: 'pro' } },
      0,
    );
    t.ok(r.ok);
    if (r.ok) {
      t.same(JSON.parse(r.event.json), {
        uuid: '0190a000-0000-7000-8000-000000000001',
        event: '$pageview',
        distinct_id: 'u1',
        timestamp: '2023-02-03T04:05:06.789Z',
        properties: { $browser: 'Chrome' },
        $set: { plan: 'pro' },
      });
    }
    const fromText = toImportEvent(
      { ...row, properties: '{"a":1}', distinct_id: 42, timestamp: 1675397106 },
      0,
    );
    t.ok(
      fromText.ok && (JSON.parse(fromText.event.json) as { properties: { a: number } }).properties.a === 1,
    );
    t.ok(
      fromText.ok &&
        (JSON.parse(fromText.event.json) as { timestamp: string }).timestamp === '2023-02-03T04:05:06.000Z',
      'Unix seconds',
    );
    t.ok(fromText.ok && fromText.event.distinctId === '42');
    t.end();
  },
);

t.test('a row that is already a batch item is sent as read; any other is written anew', (t) => {
  const plain = {
    uuid: '0190a000-0000-7000-8000-000000000009',
    event: 'e',
    distinct_id: 'u',
    timestamp: '2023-01-01T00:00:00Z',
    properties: { a: 1 },
  };
  const text = `${JSON.stringify(plain)}  `;
  const asRead = toImportEvent(plain, 0, text);
  t.ok(asRead.ok && asRead.event.json === text);
  const withKey = { ...plain, properties: { a: 1, token: 'phc_x' } };
  const rewritten = toImportEvent(withKey, 0, JSON.stringify(withKey));
  t.ok(rewritten.ok && !rewritten.event.json.includes('phc_x'));
  const exportOnly = { ...plain, team_id: 1 };
  const dropped = toImportEvent(exportOnly, 0, JSON.stringify(exportOnly));
  t.ok(dropped.ok && !dropped.event.json.includes('team_id'));
  t.end();
});

t.test('rows refused, each with its reason', (t) => {
  const reasons = [
    toImportEvent([1], 0),
    toImportEvent({ ...row, event: '' }, 0),
    toImportEvent({ ...row, distinct_id: null }, 0),
    toImportEvent({ ...row, timestamp: undefined }, 0),
    toImportEvent({ ...row, timestamp: 'soon' }, 0),
    toImportEvent({ ...row, properties: '[1]' }, 0),
    toImportEvent({ ...row, properties: { big: 'x'.repeat(1024 * 1024) } }, 0),
  ].map((r) => (r.ok ? 'ok' : r.reason));
  t.same(reasons, [
    'not_an_object',
    'missing_event',
    'missing_distinct_id',
    'missing_timestamp',
    'invalid_timestamp',
    'invalid_properties',
    'event_too_large',
  ]);
  t.end();
});

t.test('a derived uuid: the same for the same row and row number, other for another, a valid v5', (t) => {
  const a = toImportEvent(row, 7);
  const again = toImportEvent(
    {
      team_id: 2,
      properties: { $browser: 'Chrome' },
      timestamp: row.timestamp,
      distinct_id: 'u1',
      event: '$pageview',
    },
    7,
  );
  const elsewhere = toImportEvent(row, 8);
  const invalid = toImportEvent({ ...row, uuid: 'not-a-uuid' }, 7);
  t.ok(a.ok && again.ok && elsewhere.ok && invalid.ok);
  if (a.ok && again.ok && elsewhere.ok && invalid.ok) {
    t.equal(a.event.uuid, again.event.uuid, 'key order and dropped fields change nothing');
    t.not(a.event.uuid, elsewhere.event.uuid, 'two identical rows of a file stay two events');
    t.equal(invalid.event.uuid, a.event.uuid, 'a uuid that is not one is replaced by the derived one');
    t.match(a.event.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  }
  t.equal(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null }), '{"a":null,"b":[1,{"c":2,"d":1}]}');
  t.equal(deriveUuid({ x: 1 }, 0), deriveUuid({ x: 1 }, 0));
  t.end();
});

t.test('where a checkpoint says reading starts', (t) => {
  const cp: Checkpoint = {
    version: 1,
    inputs: ['a', 'b', 'c'],
    file: 1,
    row: 40,
    offset: 4096,
    updatedAt: '',
  };
  t.same(startOf(undefined, 0), { row: 0 });
  t.equal(startOf(cp, 0), 'done');
  t.same(startOf(cp, 1), { row: 40, offset: 4096 });
  t.same(startOf(cp, 2), { row: 0 });
  t.same(startOf({ ...cp, offset: undefined }, 1), { row: 40 });
  t.equal(defaultCheckpointPath('/x/events/'), '/x/events.weir-import.json');
  t.equal(defaultCheckpointPath('-'), undefined);
  t.end();
});

t.test('back-off: Retry-After honoured (seconds or a date), else exponential with jitter', (t) => {
  t.equal(waitFor(503, '2', 0), 2000);
  t.equal(waitFor(429, '0', 3), 0);
  const at = waitFor(503, new Date(Date.now() + 5000).toUTCString(), 0);
  t.ok(at > 3000 && at <= 5000);
  const first = waitFor(502, null, 0);
  t.ok(first >= 125 && first <= 250);
  t.ok(waitFor(503, null, 20) <= 30_000);
  t.end();
});
