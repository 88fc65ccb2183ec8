import t from 'tap';
import {
  applyPropertyUpdates,
  illegalIdOf,
  isIllegalDistinctId,
  mergeRequest,
} from '../../src/ingest/persons/person-rules.ts';
import { mergeOneLevel } from '../../src/ingest/persons/group-state.ts';

t.test('illegal distinct ids are refused whatever their case, quoting or padding', (t) => {
  for (const id of [
    'anonymous',
    'Anonymous',
    'NULL',
    'null',
    'undefined',
    '0',
    'guest',
    'distinctid',
    'distinct_id',
    'id',
    'not_authenticated',
    'email',
    'true',
    'FALSE',
    '[object Object]',
    'NaN',
    'None',
    '',
    '   ',
    '"null"',
    "'undefined'",
    ' guest ',
  ])
    t.ok(isIllegalDistinctId(id), `${JSON.stringify(id)} is illegal`);
  for (const id of ['user-1', 'anonymous-1', '00', 'idx', 'a@b.io', '019c200b-f248-7253-8869-e0dc2fe874e6'])
    t.notOk(isIllegalDistinctId(id), `${JSON.stringify(id)} is legal`);
  t.end();
});

t.test('merge requests: $identify with $anon_distinct_id, $create_alias with alias', (t) => {
  t.same(mergeRequest('$identify', 'u', { $anon_distinct_id: 'a' }), { other: 'a', into: 'u' });
  t.same(mergeRequest('$create_alias', 'u', { alias: 'b' }), { other: 'b', into: 'u' });
  t.equal(mergeRequest('$identify', 'u', {}), undefined, 'an $identify without an anonymous id only sets');
  t.equal(mergeRequest('$identify', 'u', { $anon_distinct_id: 'u' }), undefined, 'an id merged with itself');
  t.equal(mergeRequest('$pageview', 'u', { $anon_distinct_id: 'a', alias: 'b' }), undefined);
  t.same(mergeRequest('$identify', 'u', { $anon_distinct_id: null }), { other: 'null', into: 'u' });
  t.same(
    mergeRequest('$identify', 'u', { $anon_distinct_id: `${'x'.repeat(250)}\u0000` }),
    { other: 'x'.repeat(200), into: 'u' },
    'cut to 200 characters as capture cuts a distinct_id',
  );
  t.equal(illegalIdOf({ other: 'null', into: 'u' }), 'null');
  t.equal(illegalIdOf({ other: 'a', into: 'anonymous' }), 'anonymous');
  t.equal(illegalIdOf({ other: 'a', into: 'u' }), undefined);
  t.end();
});

t.test('$set_once, then $set, then $unset, without touching the old object', (t) => {
  const current = Object.freeze({ a: 1, b: 2, nested: { x: 1 } });
  const next = applyPropertyUpdates(current, {
    $set_once: { a: 9, c: 3 },
    $set: { b: 5, nested: { x: 1 } },
    $unset: ['a'],
  });
  t.same(next, { b: 5, nested: { x: 1 }, c: 3 });
  t.same(current, { a: 1, b: 2, nested: { x: 1 } }, 'the old object is unchanged');
  t.same(applyPropertyUpdates({ a: 1, b: 2 }, { $unset: { a: true } }), { b: 2 }, '$unset as an object');
  t.end();
});

t.test('no change gives the same object back (so nothing is written)', (t) => {
  const current = { a: 1, nested: { x: [1, 2] } };
  t.equal(applyPropertyUpdates(current, {}), current);
  t.equal(applyPropertyUpdates(current, { $set: { a: 1, nested: { x: [1, 2] } } }), current);
  t.equal(applyPropertyUpdates(current, { $set_once: { a: 2 }, $unset: ['missing'] }), current);
  t.equal(applyPropertyUpdates(current, { $set: 'not an object', $unset: 'a' }), current);
  t.end();
});

t.test('$group_set merges one level deep', (t) => {
  const current = { name: 'Acme', address: { city: 'Oslo', zip: '1' } };
  t.same(mergeOneLevel(current, { address: { city: 'Bergen' }, size: 3 }), {
    name: 'Acme',
    address: { city: 'Bergen' },
    size: 3,
  });
  t.equal(mergeOneLevel(current, { name: 'Acme' }), current, 'unchanged');
  t.equal(mergeOneLevel(current, {}), current);
  t.end();
});
