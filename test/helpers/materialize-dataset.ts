/**
 * A fixed dataset for the materialization equality tests: seeded events over three months of 2024 (so
 * hour, day, week and month buckets all hold several), some without a browser, with amounts (integers and
 * fractions) and quantities, from a few dozen people; written as ingest writes them.
 */
import type { Store } from '../../src/core/ports.ts';
import { insertEvents, type TestEvent } from './insights.ts';

export const DATASET_FROM = Date.UTC(2024, 2, 1);
export const DATASET_TO = Date.UTC(2024, 5, 1);

const EVENTS = ['$pageview', '$pageview', '$pageview', 'signed up', 'purchase', 'search'];
const BROWSERS = ['Chrome', 'Chrome', 'Firefox', 'Safari', 'Édge', null];

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function datasetEvents(count = 3000): TestEvent[] {
  const random = mulberry32(25);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const events: TestEvent[] = [];
  for (let i = 0; i < count; i++) {
    // Whole seconds: a time on a bucket's edge is an edge for every bucket size.
    const at = DATASET_FROM + Math.floor((random() * (DATASET_TO - DATASET_FROM)) / 1000) * 1000;
    const event = pick(EVENTS);
    const browser = pick(BROWSERS);
    const properties: Record<string, unknown> = {};
    if (browser !== null) properties['$browser'] = browser;
    if (event === 'purchase') {
      properties['amount'] = random() < 0.5 ? Math.floor(random() * 100) : Math.round(random() * 10_000) / 4;
      properties['qty'] = 1 + Math.floor(random() * 5);
    }
    events.push({
      event,
      distinctId: `user${Math.floor(random() * 40)}`,
      timestamp: new Date(at).toISOString(),
      properties,
    });
  }
  // Events exactly on bucket edges: a range bound on a boundary must take them on the right side.
  for (const edge of [
    '2024-04-01T00:00:00Z',
    '2024-04-07T00:00:00Z',
    '2024-04-10T00:00:00Z',
    '2024-04-10T13:00:00Z',
  ]) {
    events.push({
      event: 'purchase',
      distinctId: 'edge',
      timestamp: edge,
      properties: { $browser: 'Chrome', amount: 7, qty: 2 },
    });
  }
  return events;
}

export async function insertDataset(store: Pick<Store, 'insert'>): Promise<void> {
  await insertEvents(store, datasetEvents());
}
