/**
 * The plan each ingest process makes of its share of the leased units, from its view of the `weir_ingest`
 * bucket: shares that add up whatever the order members see each other in, no unit of a live member taken,
 * a silent member's units free once its record has stood unchanged for the lease, and the view's head.
 * Time is passed in, so nothing here waits.
 */
import t from 'tap';
import { LeaseView, leaseKey, memberKey, plan } from '../../src/bus/jetstream/lease-view.ts';
import { leaseUnits } from '../../src/bus/jetstream/partition-consumers.ts';

const LEASE = 5000;
const units = leaseUnits(8); // 9 units: historical + 8 partitions

function viewOf(members: string[], leases: Record<string, string>, seenAt = 0): LeaseView {
  const v = new LeaseView();
  let seq = 0;
  for (const m of members) v.apply(memberKey(m), {}, ++seq, seenAt);
  for (const [u, owner] of Object.entries(leases)) v.apply(leaseKey(u), { owner }, ++seq, seenAt);
  return v;
}

const input = (self: string, held: string[] = [], now = 0) => ({
  self,
  units,
  held: new Set(held),
  busy: new Set<string>(),
  now,
  leaseMs: LEASE,
});

t.test('an empty bucket: the first member takes every unit', (t) => {
  const p = plan(viewOf(['a'], {}), input('a'));
  t.same([...p.take].sort(), [...units].sort());
  t.same(p.release, []);
  t.end();
});

t.test('shares add up: each of three members plans its own third, and never a live member’s unit', (t) => {
  const v = viewOf(['a', 'b', 'c'], {});
  const takes = ['a', 'b', 'c'].map((m) => plan(v, input(m)).take);
  t.same(
    takes.map((x) => x.length),
    [3, 3, 3],
  );
  // They start at different places, so members taking at once mostly want different units.
  t.equal(new Set(takes.flat()).size, 9, 'no unit wanted twice');

  const owned = viewOf(['a', 'b'], Object.fromEntries(units.map((u) => [u, 'a'])));
  t.same(plan(owned, input('b')).take, [], 'b takes nothing a live member holds');
  const a = plan(owned, input('a', units));
  t.equal(a.release.length, 4, 'a holds 9 of 9 and its share is 5: it hands 4 over');
  t.same(a.release, ['live-7', 'live-6', 'live-5', 'live-4'], 'the last units go first');
  t.end();
});

t.test('a member silent for longer than the lease: its units are free, and only then', (t) => {
  const leases = { historical: 'dead', 'live-0': 'dead', 'live-1': 'b' };
  const v = viewOf(['b', 'dead'], leases, 0);
  const early = plan(v, input('b', ['live-1'], LEASE)).take;
  t.equal(early.length, 4, 'at exactly the lease b takes only free units, its share of two members');
  t.notOk(early.includes('historical') || early.includes('live-0'), 'not the silent member’s yet');
  v.apply(memberKey('b'), {}, 100, LEASE + 1);
  const p = plan(v, input('b', ['live-1'], LEASE + 1));
  t.ok(p.take.includes('historical') && p.take.includes('live-0'), 'the silent member’s units are taken');
  t.equal(p.take.length, 8, 'with the rest: b is the only live member');
  t.end();
});

t.test(
  'a unit held whose lease names another member now is lost; one named this member is taken back',
  (t) => {
    const v = viewOf(['a', 'b'], { 'live-0': 'b', 'live-1': 'a' });
    const p = plan(v, input('a', ['live-0']));
    t.same(p.lost, ['live-0']);
    t.ok(
      p.take.includes('live-1'),
      'a lease naming a, not consumed (after a suspension), is taken again first',
    );
    t.equal(p.take[0], 'live-1');
    t.end();
  },
);

t.test('a member that left (its record deleted) frees its units at once', (t) => {
  const v = viewOf(['a', 'b'], { 'live-0': 'b' });
  v.apply(memberKey('b'), undefined, 50, 0);
  t.ok(plan(v, input('a')).take.includes('live-0'));
  t.end();
});

t.test(
  'busy units are not taken; older revisions do not undo newer ones; the head moves only in order',
  (t) => {
    const v = viewOf(['a'], {});
    const p = plan(v, { ...input('a'), busy: new Set(['live-3']) });
    t.notOk(p.take.includes('live-3'));

    v.apply(leaseKey('live-2'), { owner: 'a' }, 10, 0);
    v.apply(leaseKey('live-2'), { owner: 'x' }, 9, 0);
    t.equal(v.ownerOf('live-2'), 'a', 'an older write arriving late changes nothing');

    const h = new LeaseView();
    h.delivered(5);
    h.advance(7);
    t.equal(h.head, 5, 'a write of ours at 7 does not vouch for 6');
    h.advance(6);
    t.equal(h.head, 6);
    t.end();
  },
);
