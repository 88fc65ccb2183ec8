/**
 * The pure parts of shared person state (ingest/shared/): the keys records live under and the rules that
 * change records (PersonState's merge rules, as records).
 */
import t from 'tap';
import {
  absorbed,
  changeOf,
  isAbsorbed,
  mergedAway,
  newPerson,
  withChange,
  withLink,
  type PersonRecord,
} from '../../src/ingest/shared/person-records.ts';
import {
  decodeToken,
  encodeToken,
  groupKey,
  linkKey,
  personKey,
  projectOfKey,
  typesKey,
} from '../../src/ingest/shared/state-keys.ts';

/** What NATS accepts as a KV key (nats.js `validateKey`). */
const VALID_KEY = /^[-/=.\w]+$/;
const validKey = (k: string): boolean =>
  VALID_KEY.test(k) && !k.startsWith('.') && !k.endsWith('.') && !k.includes('..');

t.test('any distinct id or group key makes a valid key, and reads back', (t) => {
  const ids = [
    '',
    'user@example.com',
    'a.b.c',
    '..',
    'ünïcödé 🦆',
    'with space',
    '*',
    '>',
    'x'.repeat(200),
    '\uFFFD',
  ];
  for (const id of ids) {
    const token = encodeToken(id);
    t.equal(decodeToken(token), id);
    t.ok(validKey(linkKey(7, id)), `link key of ${JSON.stringify(id.slice(0, 20))}`);
    t.ok(validKey(groupKey(7, 4, id)));
    t.equal(projectOfKey(linkKey(7, id)), 7);
  }
  t.equal(new Set(ids.map(encodeToken)).size, ids.length, 'distinct ids never share a key');
  t.ok(validKey(personKey(12, '0190a4c2-1f0e-7c3a-9b1d-2e6b8f4a7d90')));
  t.equal(typesKey(3), 't.3');
  t.equal(projectOfKey(typesKey(3)), 3);
  t.end();
});

const person = (over: Partial<PersonRecord> = {}): PersonRecord => ({
  properties: {},
  isIdentified: false,
  createdAt: 1000,
  ids: ['a'],
  ...over,
});

t.test("an event's updates: $set_once, $set, $unset; unchanged is the same object", (t) => {
  t.equal(changeOf({ other: 1 }), undefined);
  t.same(changeOf({ $set: { a: 1 }, x: 2 }), { $set: { a: 1 } });
  const made = newPerson('d', changeOf({ $set: { a: 1 }, $set_once: { b: 2 } }), false, 5, 'e1');
  t.same(made, {
    properties: { b: 2, a: 1 },
    isIdentified: false,
    createdAt: 5,
    ids: ['d'],
    lastEvent: 'e1',
  });
  t.equal(withChange(made, changeOf({ $set: { a: 1 }, $set_once: { b: 3 } }), false, 'e2'), made);
  const identified = withChange(made, undefined, true, 'e2');
  t.equal(identified.isIdentified, true);
  t.equal(identified.lastEvent, 'e2');
  t.same(withChange(made, changeOf({ $unset: ['a'] }), false, 'e3').properties, { b: 2 });
  t.end();
});

t.test('absorbing a merged-away person follows PostHog: the kept value wins, then the updates', (t) => {
  const into = person({ properties: { plan: 'pro', a: 1 }, createdAt: 2000, ids: ['u', 'u2'] });
  const other = person({ properties: { plan: 'free', utm: 'ads', a: 0 }, createdAt: 1000, ids: ['anon'] });
  const tomb = mergedAway(
    other,
    'P-into',
    changeOf({ $set: { email: 'x@y' }, $set_once: { utm: 'no' } }),
    'e9',
  );
  t.equal(tomb.mergedInto, 'P-into');
  t.same(tomb.properties, other.properties, 'frozen as it was');
  t.notOk(isAbsorbed(tomb, into));
  const after = absorbed(into, tomb);
  t.same(after.properties, { plan: 'pro', utm: 'ads', a: 1, email: 'x@y' });
  t.equal(after.isIdentified, true);
  t.equal(after.createdAt, 1000);
  t.same(after.ids, ['u', 'u2', 'anon']);
  t.equal(after.lastEvent, 'e9');
  t.equal(after.mergedInto, undefined, 'the live person forwards nowhere');
  t.equal(after.change, undefined);
  t.ok(isAbsorbed(tomb, after), 'once absorbed, its first id tells');
  t.end();
});

t.test('completing a link adds the id, identifies, applies the linking event', (t) => {
  const p = person({ properties: { a: 1 } });
  const linked = withLink(p, 'n', { person: 'P', event: 'e5', identify: true, change: { $set: { j: 1 } } });
  t.same(linked, {
    properties: { a: 1, j: 1 },
    isIdentified: true,
    createdAt: 1000,
    ids: ['a', 'n'],
    lastEvent: 'e5',
  });
  t.end();
});
