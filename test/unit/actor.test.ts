import t from 'tap';
import { Actor, KeyedActors } from '../../src/core/actor.ts';

t.test('an actor handles one message at a time, in order', async (t) => {
  const log: string[] = [];
  let active = 0;
  let maxActive = 0;
  const actor = new Actor<number>(async (n) => {
    active++;
    maxActive = Math.max(maxActive, active);
    log.push(`start ${n}`);
    await new Promise((r) => setImmediate(r));
    log.push(`end ${n}`);
    active--;
  });
  await Promise.all([1, 2, 3].map((n) => actor.send(n)));
  t.equal(maxActive, 1);
  t.same(log, ['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  t.equal(actor.depth, 0);
});

t.test('a failing message fails alone; the actor goes on', async (t) => {
  const done: number[] = [];
  const actor = new Actor<number>((n) => {
    if (n === 2) throw new Error('boom');
    done.push(n);
  });
  const results = await Promise.allSettled([1, 2, 3].map((n) => actor.send(n)));
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.same(done, [1, 3]);
});

t.test('idle resolves once the mailbox is empty', async (t) => {
  let handled = 0;
  const actor = new Actor<number>(async () => {
    await new Promise((r) => setImmediate(r));
    handled++;
  });
  for (let i = 0; i < 5; i++) void actor.send(i);
  await actor.idle();
  t.equal(handled, 5);
});

t.test('keyed actors keep order per key and run keys concurrently', async (t) => {
  const seen = new Map<number, number[]>();
  let active = 0;
  let maxActive = 0;
  const actors = new KeyedActors<{ key: number; seq: number }>(4, () => async (m) => {
    active++;
    maxActive = Math.max(maxActive, active);
    await new Promise((r) => setImmediate(r));
    seen.set(m.key, [...(seen.get(m.key) ?? []), m.seq]);
    active--;
  });
  const sends = [];
  for (let seq = 0; seq < 10; seq++)
    for (let key = 0; key < 4; key++) sends.push(actors.send(key, { key, seq }));
  await Promise.all(sends);
  for (let key = 0; key < 4; key++)
    t.same(seen.get(key), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], `key ${key} in order`);
  t.equal(maxActive, 4, 'different keys ran at the same time');
});
