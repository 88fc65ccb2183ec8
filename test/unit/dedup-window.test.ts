import t from 'tap';
import { randomUUID } from 'node:crypto';
import { DedupWindow } from '../../src/ingest/dedup-window.ts';
import { UuidSet } from '../../src/ingest/uuid-set.ts';

const key = (uuid: string, projectId = 1): { projectId: number; uuid: string } => ({ projectId, uuid });
const uuids = (n: number): string[] => Array.from({ length: n }, () => randomUUID());

t.test('a committed uuid is a duplicate; a failed commit forgets it', async (t) => {
  const w = new DedupWindow(10);
  const [a, b] = uuids(2) as [string, string];
  t.equal(w.check(key(a)), 'new');
  const ok = Promise.resolve();
  t.same(w.claim([key(a)], ok), { fresh: [key(a)], waits: [] });
  t.equal(w.check(key(a)), ok, 'in flight: the duplicate waits for the first copy');
  const later = Promise.resolve();
  const again = w.claim([key(a), key(a, 2)], later);
  t.same(again.fresh, [key(a, 2)], 'the same uuid in another project is another event');
  t.equal(again.waits.length, 1);
  t.equal(again.waits[0], ok, 'the copy waits for the commit of the first');
  await ok;
  await Promise.resolve();
  t.equal(w.check(key(a)), 'committed');
  t.same(w.claim([key(a)], Promise.resolve()), { fresh: [], waits: [] }, 'a committed copy is dropped');

  const failed = Promise.reject(new Error('insert failed'));
  failed.catch(() => undefined);
  w.claim([key(b)], failed);
  await failed.catch(() => undefined);
  await Promise.resolve();
  t.equal(w.check(key(b)), 'new', 'a retry after a failed commit is stored');
});

t.test('the same uuid twice in one claim is one event, claimed by the first copy', (t) => {
  const w = new DedupWindow(10);
  const [a, b] = uuids(2) as [string, string];
  const first = { ...key(a), copy: 1 };
  const claimed = w.claim(
    [first, { ...key(b), copy: 1 }, { ...key(a), copy: 2 }],
    new Promise<void>(() => {}),
  );
  t.same(
    claimed.fresh.map((e) => e.copy),
    [1, 1],
  );
  t.equal(claimed.fresh[0], first);
  t.same(claimed.waits, [], 'no wait on its own commit');
  t.end();
});

t.test('a failed claim forgets its own events only, though a copy among them was dropped', async (t) => {
  const w = new DedupWindow(10);
  const [a, b, c] = uuids(3) as [string, string, string];
  const ok = Promise.resolve();
  w.claim([key(a)], ok);
  await ok;
  await Promise.resolve();
  const failed = Promise.reject(new Error('insert failed'));
  failed.catch(() => undefined);
  // The committed copy of `a` comes first and is dropped: `b` and `c` are the claim's events.
  t.same(w.claim([key(a), key(b), key(c)], failed).fresh, [key(b), key(c)]);
  await failed.catch(() => undefined);
  await Promise.resolve();
  t.same(
    [a, b, c].map((u) => w.check(key(u))),
    ['committed', 'new', 'new'],
  );
});

t.test('memory is bounded by two generations', (t) => {
  const w = new DedupWindow(3);
  const ids = uuids(7);
  for (const u of ids) w.remember(key(u));
  t.ok(w.size <= 6);
  t.equal(w.check(key(ids[6]!)), 'committed');
  t.equal(w.check(key(ids[3]!)), 'committed', 'the previous generation is still remembered');
  t.equal(w.check(key(ids[0]!)), 'new', 'the oldest generation is forgotten');
  t.end();
});

t.test('size 0 turns the window off; copies of an event being committed still wait for it', async (t) => {
  const w = new DedupWindow(0);
  const [a, b] = uuids(2) as [string, string];
  w.remember(key(a));
  t.equal(w.check(key(a)), 'new');
  t.equal(w.size, 0);
  const commit = Promise.resolve();
  w.claim([key(b)], commit);
  t.equal(w.check(key(b)), commit, 'in flight');
  await commit;
  await Promise.resolve();
  t.equal(w.check(key(b)), 'new', 'committed, and not remembered');
});

t.test('a claim being committed outlives the generations around it', async (t) => {
  const w = new DedupWindow(3);
  const [a, b] = uuids(2) as [string, string];
  let fail!: (err: Error) => void;
  const slow = new Promise<void>(() => {});
  const failing = new Promise<void>((_, reject) => (fail = reject));
  failing.catch(() => undefined);
  w.claim([key(a)], slow);
  w.claim([key(b)], failing);
  // Ten more uuids, committed, turn the generations over several times.
  const others = uuids(10);
  for (const u of others) {
    w.claim([key(u)], Promise.resolve());
    await Promise.resolve();
  }
  t.equal(w.check(key(a)), slow, 'the copy still waits for the first, generations later');
  t.equal(w.check(key(b)), failing);
  t.equal(w.check(key(others[9]!)), 'committed');
  t.equal(w.check(key(others[0]!)), 'new', 'committed uuids age out as before');
  fail(new Error('insert failed'));
  await failing.catch(() => undefined);
  await Promise.resolve();
  t.equal(w.check(key(b)), 'new', 'a failed claim is forgotten wherever its entries went');
  t.same(w.claim([key(b)], Promise.resolve()).fresh, [key(b)], 'and a retry is claimed afresh');
});

t.test('a claim of more events than a generation holds keeps them all while it is committed', (t) => {
  const w = new DedupWindow(2);
  const ids = uuids(5);
  const slow = new Promise<void>(() => {});
  t.equal(
    w.claim(
      ids.map((u) => key(u)),
      slow,
    ).fresh.length,
    5,
  );
  for (const u of ids) t.equal(w.check(key(u)), slow, `${u} waits for the claim`);
  t.end();
});

t.test('size 0: a committed uuid is claimed again by its next copy', async (t) => {
  const w = new DedupWindow(0);
  const [a] = uuids(1) as [string];
  const first = Promise.resolve();
  t.same(w.claim([key(a)], first).fresh, [key(a)]);
  t.same(w.claim([key(a)], Promise.resolve()).waits, [first], 'while the first is committed, a copy waits');
  await first;
  await Promise.resolve();
  t.same(w.claim([key(a)], Promise.resolve()).fresh, [key(a)], 'once it is, nothing is remembered');
});

t.test('UuidSet: exact membership at its fill limit, over many uuids', (t) => {
  const limit = 50_000;
  const set = new UuidSet(limit);
  const inside = uuids(limit);
  let refused = 0;
  for (const u of inside) if (!set.add(7, u)) refused++;
  t.equal(refused, 0, 'every new uuid is added');
  t.equal(set.size, limit);
  t.equal(set.full, true);
  let missing = 0;
  for (const u of inside) if (!set.has(7, u)) missing++;
  t.equal(missing, 0, 'every uuid added is found');
  let phantom = 0;
  for (const u of uuids(limit)) if (set.has(7, u)) phantom++;
  t.equal(phantom, 0, 'no uuid that was not added is found');
  let otherProject = 0;
  for (const u of inside.slice(0, 1000)) if (set.has(8, u)) otherProject++;
  t.equal(otherProject, 0, 'the project is part of the key');
  t.equal(set.add(7, inside[0]!), false, 'adding a present pair again is a no-op');
  t.throws(() => set.add(7, randomUUID()), RangeError, 'a full set refuses more');
  set.clear();
  t.equal(set.size, 0);
  t.equal(set.has(7, inside[0]!), false, 'clear forgets everything');
  t.end();
});

t.test('UuidSet: case does not matter; uuids that differ in one digit do; odd strings still work', (t) => {
  const set = new UuidSet(100);
  const u = '0190f1a2-b3c4-7d5e-8f60-718293a4b5c6';
  set.add(1, u);
  t.ok(set.has(1, u.toUpperCase()), 'upper-case is the same uuid');
  for (let i = 0; i < 36; i++) {
    if (u[i] === '-') continue;
    const other = u.slice(0, i) + (u[i] === '0' ? '1' : '0') + u.slice(i + 1);
    if (set.has(1, other)) t.fail(`a uuid one digit off (at ${i}) was found`);
  }
  // Made-up uuids that share their random tail do not collide either.
  const tail = '-0000-7000-8000-000000000000';
  for (let i = 0; i < 50; i++) set.add(1, `${i.toString(16).padStart(8, '0')}${tail}`);
  for (let i = 0; i < 50; i++) t.ok(set.has(1, `${i.toString(16).padStart(8, '0')}${tail}`));
  t.notOk(set.has(1, `000000ff${tail}`));
  set.add(2, 'not-a-uuid');
  t.ok(set.has(2, 'not-a-uuid'));
  t.notOk(set.has(2, 'not-a-uuie'));
  t.end();
});
