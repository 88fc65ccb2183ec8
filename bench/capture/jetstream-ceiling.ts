/**
 * The raw JetStream ceiling of the JetStream mode: a plain async publisher (`js.publish`, many in flight,
 * one connection) sending, to the same stream and subjects, exactly the messages Weir's capture publishes
 * for the generator's requests — built by Weir's own capture service and bus encoding — so Weir's events/s
 * can be given as a share of what JetStream itself takes on this machine. Nothing consumes the stream while
 * it runs; it is deleted afterwards, and Weir's roles create it afresh.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { busMessages, headersOf, type BusMessage } from '../../src/bus/jetstream/jetstream-bus.ts';
import { STREAM, ensureStream } from '../../src/bus/jetstream/streams.ts';
import { CaptureService } from '../../src/capture/capture-service.ts';
import { loadConfig } from '../../src/config/config.ts';
import type { EventBatch } from '../../src/core/event.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { Bus, ProjectKeys } from '../../src/core/ports.ts';
import { processCpuSeconds } from './child-processes.ts';
import { histogram, summarize, type LatencySummary } from '../../src/loadgen/load-generator.ts';
import { OtherLoadProbe } from './machine-load.ts';
import type { BenchContext } from './measure.ts';
import type { BenchNats } from './nats-server.ts';
import { buildBodies, type Mode } from '../../src/loadgen/payloads.ts';
import { API_KEY } from './bench-key.ts';

/** Publishes awaiting their ack at any time. */
export const CEILING_IN_FLIGHT = 256;
// Leave room for headers under the server's max_payload (1 MiB by default), as the bus does.
const MAX_MESSAGE_BYTES = 1024 * 1024 - 16 * 1024;
// As long as Weir's: a sha256 in base64url.
const MSG_ID_LENGTH = 43;

export interface CeilingMessages {
  readonly messages: readonly BusMessage[];
  /** Messages one request of this mode becomes, on average. */
  readonly messagesPerRequest: number;
  readonly eventsPerMessage: number;
  readonly meanMessageBytes: number;
}

export interface CeilingResult {
  readonly mode: Mode;
  readonly messagesPerRequest: number;
  readonly eventsPerMessage: number;
  readonly meanMessageBytes: number;
  readonly inFlight: number;
  readonly seconds: number;
  readonly acked: number;
  readonly failed: number;
  readonly publishesPerSecond: number;
  readonly megabytesPerSecond: number;
  readonly eventsPerSecond: number;
  /** From publish to ack, ms. */
  readonly ackLatency: LatencySummary;
  /** The publisher (this process) and nats-server, in cores. */
  readonly publisherCpuCores: number;
  readonly natsCpuCores: number | undefined;
  readonly otherCpuCores: number | undefined;
}

/** The messages Weir's capture publishes for one cycle of the generator's requests in `mode`. */
export async function ceilingMessages(mode: Mode): Promise<CeilingMessages> {
  const config = loadConfig({}, {});
  const published: EventBatch[][] = [];
  const bus: Bus = {
    publish(batches) {
      published.push([...batches]);
      return Promise.resolve();
    },
    isReady: () => true,
    close: () => Promise.resolve(),
  };
  const project = {
    id: 1,
    name: 'bench',
    apiToken: API_KEY,
    createdAt: new Date().toISOString(),
    anonymizeIps: false,
    eventRetentionDays: null,
    suppressedDistinctIds: [],
    dataDeletedAt: null,
  };
  const catalog: ProjectKeys = {
    projectByApiToken: (token) => (token === API_KEY ? project : undefined),
    close: () => Promise.resolve(),
  };
  const capture = new CaptureService(config, {
    catalog,
    bus,
    metrics: new Metrics({ defaultMetrics: false }),
    logger: createLogger('warn', process.stderr),
  });
  const bodies = buildBodies(mode, API_KEY);
  for (const body of bodies)
    await capture.capture({
      body: Buffer.from(body),
      contentType: 'application/json',
      contentEncoding: '',
      compression: '',
      batchRoute: mode === 'batch',
      querySentAt: undefined,
      client: { peer: '127.0.0.1', forwarded: '', xForwardedFor: '' },
    });
  const messages = published.flatMap((batches) =>
    busMessages(batches, config.busPartitions, MAX_MESSAGE_BYTES, config.busCompression),
  );
  const events = published.flat().reduce((n, b) => n + b.events.length, 0);
  return {
    messages,
    messagesPerRequest: messages.length / bodies.length,
    eventsPerMessage: events / messages.length,
    meanMessageBytes: messages.reduce((n, m) => n + m.data.byteLength, 0) / messages.length,
  };
}

/** Publishes `mode`'s messages for `durationMs` with CEILING_IN_FLIGHT in flight; the stream is deleted after. */
export async function measureCeiling(
  bench: BenchContext,
  nats: BenchNats,
  mode: Mode,
  durationMs: number,
  inFlight = CEILING_IN_FLIGHT,
): Promise<CeilingResult> {
  const built = await ceilingMessages(mode);
  const { messages } = built;
  const nc = await connect({ servers: nats.url, name: 'bench-ceiling' });
  try {
    const jsm = await jetstreamManager(nc);
    // The stream as Weir makes it (file storage, work queue, 2-minute duplicate window).
    await ensureStream(jsm, { replicas: 1, replicasConfigured: true, duplicateWindowMs: 120_000 });
    const js = jetstream(nc);
    const latency = histogram();
    const pids = [nats.pid, bench.generator.pid];
    await bench.quiet.wait(pids);
    const probe = new OtherLoadProbe(pids);
    const natsBefore = processCpuSeconds(nats.pid);
    const cpuBefore = process.cpuUsage();
    let next = 0;
    let acked = 0;
    let failed = 0;
    let bytes = 0;
    const t0 = performance.now();
    const end = t0 + durationMs;
    const publisher = async (): Promise<void> => {
      while (performance.now() < end) {
        const n = next++;
        const m = messages[n % messages.length]!;
        // Each publish its own id: repeated bytes, but never a duplicate for the server to drop.
        const msgID = String(n).padStart(MSG_ID_LENGTH, '0');
        const sent = performance.now();
        try {
          await js.publish(m.subject, m.data, { msgID, timeout: 10_000, headers: headersOf(m) });
          latency.recordValue(Math.max(1, Math.round((performance.now() - sent) * 1000)));
          acked++;
          bytes += m.data.byteLength;
        } catch {
          failed++;
        }
      }
    };
    await Promise.all(Array.from({ length: inFlight }, publisher));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const natsAfter = processCpuSeconds(nats.pid);
    const otherCpuCores = probe.otherCores();
    await jsm.streams.delete(STREAM);
    return {
      mode,
      messagesPerRequest: built.messagesPerRequest,
      eventsPerMessage: built.eventsPerMessage,
      meanMessageBytes: built.meanMessageBytes,
      inFlight,
      seconds,
      acked,
      failed,
      publishesPerSecond: acked / seconds,
      megabytesPerSecond: bytes / 1e6 / seconds,
      eventsPerSecond: (acked * built.eventsPerMessage) / seconds,
      ackLatency: summarize(latency),
      publisherCpuCores: (cpu.user + cpu.system) / 1e6 / seconds,
      natsCpuCores:
        natsBefore === undefined || natsAfter === undefined ? undefined : (natsAfter - natsBefore) / seconds,
      otherCpuCores,
    };
  } finally {
    await nc.close();
  }
}
