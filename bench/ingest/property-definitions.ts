/**
 * What recording property definitions adds to ingest per event, once the properties are known (the steady
 * state): `observe` on the events of the hot-path bench, with 3 properties and with 43 (about what posthog-js
 * sends), and with a `$set` of 5 person properties. Measured alone, because on a shared machine the whole
 * hot path varies by more than this costs.
 *
 *   node bin/run-ts.js bench/ingest/property-definitions.ts [--events 200000]
 */
import { parseArgs } from 'node:util';
import { createLogger } from '../../src/core/logger.ts';
import type { Row, Store } from '../../src/core/ports.ts';
import type { PipelineEvent } from '../../src/core/step.ts';
import { PropertyDefinitionRegistry } from '../../src/ingest/property-definitions.ts';

const { values } = parseArgs({ options: { events: { type: 'string', default: '200000' } } });
const count = Number(values.events);

/** A store that holds nothing: only the in-memory work is measured (writes happen off the hot path anyway). */
const store = {
  insert: () => Promise.resolve(),
  query: <T = Row>(): Promise<T[]> => Promise.resolve([]),
} as unknown as Store;

function events(props: number, personSet: boolean): PipelineEvent[] {
  const out: PipelineEvent[] = [];
  for (let seq = 0; seq < 1000; seq++) {
    const properties: Record<string, unknown> = {
      $current_url: `https://example.com/p/${seq}`,
      $browser: 'Chrome',
      $os: 'Mac OS X',
    };
    for (let p = 0; p < props; p++) properties[`prop_${p}`] = p % 2 === 0 ? `value ${seq}` : seq;
    if (personSet)
      properties['$set'] = { email: `u${seq}@x.com`, plan: 'pro', age: 30, vip: true, city: 'Oslo' };
    out.push({
      projectId: 1,
      uuid: '',
      event: '$pageview',
      distinctId: `user-${seq}`,
      timestamp: 0,
      // Parsed from JSON, as capture hands properties on: V8 gives such objects shapes of their own.
      properties: JSON.parse(JSON.stringify(properties)) as Record<string, unknown>,
      receivedAt: 0,
      personId: '',
      personMode: 'full',
      personProperties: {},
      groups: ['', '', '', '', ''],
    });
  }
  return out;
}

async function measure(label: string, batch: PipelineEvent[]): Promise<void> {
  const registry = new PropertyDefinitionRegistry({}, { store, logger: createLogger('silent') });
  await registry.start();
  registry.observe(batch); // first sight: the definitions are made
  const rounds = Math.ceil(count / batch.length);
  let best = Infinity;
  for (let r = 0; r < 5; r++) {
    // CPU time, not wall time: on a shared machine the wall clock counts other processes' turns.
    const started = process.cpuUsage();
    for (let i = 0; i < rounds; i++) registry.observe(batch);
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / (rounds * batch.length));
  }
  console.log(`${label}: ${best.toFixed(3)} µs CPU per event (best of 5 runs of ${rounds * batch.length})`);
  await registry.close();
}

await measure('3 properties', events(0, false));
await measure('43 properties', events(40, false));
await measure('43 properties and a $set of 5', events(40, true));
