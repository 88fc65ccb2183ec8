/**
 * The capture benchmark's (and `weir bench capture --max`'s) search for the highest rate a server sustains, against servers whose limit is
 * known: which fractions of the probe rate it tries, and which it reports.
 */
import t from 'tap';
import { searchBelowProbe } from '../../src/loadgen/max-throughput.ts';

interface Step {
  readonly fraction: number;
  readonly sustained: boolean;
}

/** Runs the search against a server that sustains every fraction up to `limit`. */
async function search(limit: number, failed: number[] = []): Promise<{ tried: number[]; found?: number }> {
  const tried: number[] = [];
  const best = await searchBelowProbe((fraction): Promise<Step> => {
    tried.push(fraction);
    return Promise.resolve({ fraction, sustained: fraction <= limit });
  }, failed);
  return { tried, found: best?.fraction };
}

t.test('a server that misses 90% is found within 2.5% of the probe, not at the next bisection', async (t) => {
  t.same(await search(0.88), { tried: [0.9, 0.85, 0.875], found: 0.875 });
  t.same(await search(0.86), { tried: [0.9, 0.85, 0.875], found: 0.85 });
  t.same(await search(0.81), { tried: [0.9, 0.85, 0.8, 0.825], found: 0.8 });
  t.same(await search(0.72), { tried: [0.9, 0.85, 0.8, 0.75, 0.7, 0.725], found: 0.7 });
});

t.test('a server that holds 90% is tried higher, up to the probe rate', async (t) => {
  t.same(await search(0.93), { tried: [0.9, 0.95, 0.925], found: 0.925 });
  t.same(await search(0.97), { tried: [0.9, 0.95, 1, 0.975], found: 0.95 });
  t.same(await search(1.2), { tried: [0.9, 0.95, 1], found: 1 });
});

t.test('below the walk it bisects, and reports nothing when even the floor fails', async (t) => {
  t.same(await search(0.5), { tried: [0.9, 0.85, 0.8, 0.75, 0.7, 0.45, 0.575, 0.513], found: 0.45 });
  t.same(await search(0.1), {
    tried: [0.9, 0.85, 0.8, 0.75, 0.7, 0.45, 0.325, 0.263, 0.2],
    found: undefined,
  });
});

t.test('with a fraction already failed, it starts below it', async (t) => {
  t.same(await search(0.88, [0.9]), { tried: [0.85, 0.875], found: 0.875 });
});
