/**
 * The rule by which processes recording property definitions into one store merge the store's rows into
 * theirs: every order of merges ends on one state, and a state already stored is not written again.
 */
import t from 'tap';
import {
  mergeDefinition,
  sameDefinition,
  type DefinitionState,
} from '../../src/ingest/property-definition-merge.ts';

function def(overrides: Partial<DefinitionState>): DefinitionState {
  return {
    propertyType: null,
    events: [],
    firstSeenAt: 1000,
    lastSeenAt: 1000,
    typeChangedAt: null,
    ...overrides,
  };
}

t.test('events are the union, the stored order first, capped', (t) => {
  const held = def({ events: ['a', 'b', 'c'] });
  const stored = def({ events: ['c', 'd'] });
  t.same(mergeDefinition(held, stored, 100).events, ['c', 'd', 'a', 'b']);
  t.same(mergeDefinition(held, stored, 3).events, ['c', 'd', 'a'], 'past the cap, the held extras are left');
  t.same(mergeDefinition(held, def({ events: ['x', 'y', 'z'] }), 3).events, ['x', 'y', 'z']);
  t.end();
});

t.test('first seen is the earlier, last seen the later', (t) => {
  const m = mergeDefinition(
    def({ firstSeenAt: 5, lastSeenAt: 50 }),
    def({ firstSeenAt: 3, lastSeenAt: 40 }),
    100,
  );
  t.equal(m.firstSeenAt, 3);
  t.equal(m.lastSeenAt, 50);
  t.end();
});

t.test('of two detected types, the one of the definition first seen earlier wins, either way round', (t) => {
  const early = def({ propertyType: 'String', firstSeenAt: 100 });
  const late = def({ propertyType: 'Numeric', firstSeenAt: 200 });
  t.equal(mergeDefinition(early, late, 100).propertyType, 'String');
  t.equal(mergeDefinition(late, early, 100).propertyType, 'String');
  const tied = def({ propertyType: 'Numeric', firstSeenAt: 100 });
  t.equal(mergeDefinition(early, tied, 100).propertyType, 'Numeric', 'a tie: the name sorting first');
  t.equal(mergeDefinition(tied, early, 100).propertyType, 'Numeric');
  t.equal(mergeDefinition(def({ firstSeenAt: 1 }), late, 100).propertyType, 'Numeric', 'a type beats none');
  t.equal(mergeDefinition(late, def({ firstSeenAt: 1 }), 100).propertyType, 'Numeric');
  t.equal(mergeDefinition(def({}), def({}), 100).propertyType, null);
  t.end();
});

t.test('a type set on purpose beats a detected one, and the later change wins', (t) => {
  const detected = def({ propertyType: 'Numeric', firstSeenAt: 1 });
  const set = def({ propertyType: 'String', firstSeenAt: 500, typeChangedAt: 900 });
  for (const [a, b] of [
    [detected, set],
    [set, detected],
  ] as const) {
    const m = mergeDefinition(a, b, 100);
    t.equal(m.propertyType, 'String');
    t.equal(m.typeChangedAt, 900);
    t.equal(m.firstSeenAt, 1);
  }
  const later = def({ propertyType: 'Boolean', typeChangedAt: 901 });
  t.equal(mergeDefinition(set, later, 100).propertyType, 'Boolean');
  t.equal(mergeDefinition(later, set, 100).propertyType, 'Boolean');
  t.equal(mergeDefinition(later, set, 100).typeChangedAt, 901);
  t.end();
});

t.test('every order of merging ends on one state, which needs no more writes', (t) => {
  const views = [
    def({ propertyType: 'Numeric', events: ['buy'], firstSeenAt: 300, lastSeenAt: 300 }),
    def({ propertyType: 'String', events: ['view', 'buy'], firstSeenAt: 200, lastSeenAt: 400 }),
    def({ propertyType: 'Boolean', events: ['open'], firstSeenAt: 250, lastSeenAt: 250 }),
  ];
  // The store holds one row; each process in turn merges it into its view and writes back what differs.
  const ends = new Set<string>();
  for (const order of [
    [0, 1, 2],
    [2, 1, 0],
    [1, 0, 2],
  ]) {
    const held = [...views];
    let stored = held[order[0]!]!;
    let writes = 0;
    for (let round = 0; round < 4; round++)
      for (const i of order) {
        const merged = mergeDefinition(held[i]!, stored, 100);
        held[i] = merged;
        if (!sameDefinition(merged, stored)) {
          stored = merged;
          writes++;
        }
      }
    t.ok(
      held.every((h) => sameDefinition(h, stored)),
      `order ${order.join(',')}: all hold the row`,
    );
    t.equal(stored.propertyType, 'String', 'the type of the earliest first seen');
    t.same([...stored.events].sort(), ['buy', 'open', 'view']);
    t.ok(writes <= 3, `order ${order.join(',')}: ${writes} writes`);
    ends.add(JSON.stringify({ ...stored, events: [...stored.events].sort() }));
  }
  t.equal(ends.size, 1, 'one end state whatever the order');
  t.end();
});

t.test('sameDefinition compares every recorded field, the events in order', (t) => {
  const a = def({ propertyType: 'String', events: ['a', 'b'] });
  t.ok(sameDefinition(a, { ...a, events: ['a', 'b'] }));
  t.notOk(sameDefinition(a, { ...a, events: ['b', 'a'] }));
  t.notOk(sameDefinition(a, { ...a, lastSeenAt: 2 }));
  t.notOk(sameDefinition(a, { ...a, typeChangedAt: 2 }));
  t.notOk(sameDefinition(a, { ...a, propertyType: 'Numeric' }));
  t.end();
});
