/**
 * The capture → ingest → commit path in one process without HTTP: how many events/s one core takes through
 * decoding, normalisation, the pipeline and the store's commit, and where the time goes (run it with
 * `--cpu-prof` to see). Prints events/s; used to measure optimisations of the per-event work.
 *
 *   node bin/run-ts.js bench/ingest/hot-path.ts [--batches N] [--size 100] [--ids 10000] [--concurrency 16]
 *     [--props 0] [--definitions on|off]
 *
 * `--props N` adds N more properties to every event (posthog-js sends ~40); `--definitions off` runs ingest
 * without recording property definitions, to measure what recording them costs; `--geoip on` runs GeoIP
 * (the npm GeoLite2 City) on events whose `$ip` is one of `--addresses N` public addresses, each distinct id
 * always seen from the same one (as a real client mostly is).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EmbeddedBus } from '../../src/bus/embedded-bus.ts';
import { CaptureService } from '../../src/capture/capture-service.ts';
import { FileCatalog } from '../../src/catalog/file-catalog.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { IngestService } from '../../src/ingest/ingest-service.ts';
import { PropertyDefinitionRegistry } from '../../src/ingest/property-definitions.ts';
import { Geoip, loadGeoipSource } from '../../src/capture/geoip.ts';
import { openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '3000' },
    size: { type: 'string', default: '100' },
    ids: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '16' },
    props: { type: 'string', default: '0' },
    definitions: { type: 'string', default: 'on' },
    geoip: { type: 'string', default: 'off' },
    addresses: { type: 'string', default: '100' },
  },
});
const batches = Number(values.batches);
const size = Number(values.size);
const ids = Number(values.ids);
const concurrency = Number(values.concurrency);
const props = Number(values.props);

const dataDir = mkdtempSync(join(tmpdir(), 'weir-hot-path-'));
const token = 'phc_hot_path';
const config = loadConfig(
  { ...process.env, WEIR_DATA_DIR: dataDir, WEIR_BOOTSTRAP_PROJECT_API_KEY: token },
  {},
);
const logger = createLogger('warn', process.stderr);
const metrics = new Metrics({ defaultMetrics: false });
const catalog = await FileCatalog.open(config);
const store = await openEmbeddedStore(config, { logger, metrics });
const properties =
  values.definitions === 'off' ? undefined : new PropertyDefinitionRegistry({}, { store, logger });
await properties?.start();
const ingest = new IngestService(config, { store, metrics, logger, properties });
const bus = new EmbeddedBus(config, { sink: ingest, metrics });
const geoip = values.geoip === 'on' ? new Geoip(loadGeoipSource({ kind: 'package' })) : undefined;
const capture = new CaptureService(config, { catalog, bus, metrics, logger, geoip });
const addresses = Number(values.addresses);
/** Public addresses spread over the space (the first octets 1-223 but private, loopback and multicast). */
const address = (n: number): string => {
  const first = [3, 8, 23, 31, 45, 52, 62, 77, 81, 89, 91, 104, 141, 151, 185, 193, 201, 213][n % 18]!;
  return `${first}.${(n * 7) % 256}.${(n * 13) % 256}.${(n % 250) + 1}`;
};

let seq = 0;
function body(): Buffer {
  const events = [];
  for (let i = 0; i < size; i++, seq++) {
    const properties: Record<string, unknown> = {
      $current_url: `https://example.com/p/${seq}`,
      $browser: 'Chrome',
      $os: 'Mac OS X',
    };
    if (geoip) properties['$ip'] = address((seq % ids) % addresses);
    for (let p = 0; p < props; p++) properties[`prop_${p}`] = p % 2 === 0 ? `value ${seq}` : seq;
    events.push({ event: '$pageview', distinct_id: `user-${seq % ids}`, properties });
  }
  return Buffer.from(JSON.stringify({ api_key: token, batch: events }));
}

async function run(n: number): Promise<number> {
  const bodies = Array.from({ length: n }, body);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const b = bodies[next++]!;
        await capture.capture({
          body: b,
          contentType: 'application/json',
          contentEncoding: '',
          compression: '',
          batchRoute: true,
          querySentAt: undefined,
          client: { peer: '127.0.0.1', forwarded: '', xForwardedFor: '' },
        });
      }
    }),
  );
  return performance.now() - started;
}

// First sight of every id (persons created), then the measured run over known ids.
await run(Math.ceil(ids / size));
const cpu = process.cpuUsage();
const elu = performance.eventLoopUtilization();
const ms = await run(batches);
const used = process.cpuUsage(cpu);
const loop = performance.eventLoopUtilization(elu);
const events = batches * size;
console.log(
  `${events} events in ${ms.toFixed(0)} ms: ${Math.round((events / ms) * 1000)} events/s, ` +
    `process CPU ${(((used.user + used.system) / 1000 / ms) * 100).toFixed(0)}% ` +
    `(${(((used.user + used.system) / events) * 1).toFixed(1)} µs CPU per event, all threads); ` +
    `main thread busy ${(loop.utilization * 100).toFixed(0)}% ` +
    `(${((loop.active * 1000) / events).toFixed(1)} µs per event)`,
);
const commits = (await metrics.storeCommitDuration.get()).values;
const sum = commits.find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;
const count = commits.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
console.log(
  `commits: ${count}, mean ${((sum / Math.max(1, count)) * 1000).toFixed(1)} ms (first sight included)`,
);
await ingest.drain();
await properties?.close();
await store.close();
await catalog.close();
rmSync(dataDir, { recursive: true, force: true });
