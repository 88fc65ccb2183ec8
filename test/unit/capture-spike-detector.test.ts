import t from 'tap';
import { SpikeDetector } from '../../src/capture/spike-detector.ts';

const take = (d: SpikeDetector, n: number, now: number, id = 'd', project = 1): boolean[] =>
  Array.from({ length: n }, () => d.allow(project, id, now));

t.test('a key may send its burst at once, then is over its bucket', (t) => {
  const d = new SpikeDetector({ ratePerSecond: 10, burst: 5 });
  t.same(take(d, 7, 1_000), [true, true, true, true, true, false, false]);
  t.end();
});

t.test('the bucket refills at the rate, never above the burst', (t) => {
  const d = new SpikeDetector({ ratePerSecond: 10, burst: 5 });
  take(d, 5, 1_000);
  t.equal(d.allow(1, 'd', 1_050), false, 'half a token after 50 ms');
  t.equal(d.allow(1, 'd', 1_100), true, 'one token after 100 ms');
  t.equal(d.allow(1, 'd', 1_100), false);
  t.same(
    take(d, 7, 60_000),
    [true, true, true, true, true, false, false],
    'a long pause gives back the burst only',
  );
  t.end();
});

t.test('keys are independent, per project and distinct_id', (t) => {
  const d = new SpikeDetector({ ratePerSecond: 1, burst: 2 });
  t.same(take(d, 3, 0, 'a'), [true, true, false]);
  t.same(take(d, 3, 0, 'b'), [true, true, false], 'another distinct_id');
  t.same(take(d, 3, 0, 'a', 2), [true, true, false], 'the same distinct_id in another project');
  t.equal(d.trackedKeys, 3);
  t.end();
});

t.test('buckets that have refilled are forgotten', (t) => {
  // 100/s with a burst of 1000: a bucket is full again 10 s after its last use.
  const d = new SpikeDetector({ ratePerSecond: 100, burst: 1000 });
  take(d, 1, 0, 'old');
  take(d, 1, 60_000, 'recent');
  t.equal(d.trackedKeys, 2, 'no sweep within the first minute');
  // The next use after a minute sweeps: 'old' is full again, 'recent' (5 s ago) is not.
  take(d, 1, 65_000, 'new');
  t.equal(d.trackedKeys, 2, "'old' was forgotten, 'recent' and 'new' are kept");
  take(d, 1, 130_000, 'newer');
  t.equal(d.trackedKeys, 1, 'only the key just used is left');
  t.same(
    take(d, 1000, 130_001, 'old').filter(Boolean).length,
    1000,
    'a forgotten key starts with a full bucket',
  );
  t.end();
});
