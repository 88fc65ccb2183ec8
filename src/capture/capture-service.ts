import { isSuppressed } from '../core/suppression.ts';
import type { CapturedEvent, EventBatch, IngestionWarning, Lane } from '../core/event.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics, Tally } from '../core/metrics.ts';
import type { Bus, ProjectKeys } from '../core/ports.ts';
import { ClientAddresses } from '../core/client-ip.ts';
import { AppError } from '../errors/app-error.ts';
import type { ClientSeen } from './client-address.ts';
import { decodeBody, type EncodedBody } from './decode.ts';
import { MAX_EVENT_BYTES } from './limits.ts';
import { cut } from '../core/well-formed.ts';
import { normalizeEvent, type DropReason, type PropertyEnricher } from './normalize.ts';
import { readPayload } from './payload.ts';
import { SpikeDetector } from './spike-detector.ts';

/**
 * Dropped events of one request written as a warning each; past these, one warning per reason counts the
 * rest. A warning is a row to build and store: a request of many nameless items would cost far more in
 * warnings than its bytes (every drop is still counted in `weir_capture_events_dropped_total`).
 */
export const MAX_DROP_WARNINGS = 100;

export interface CaptureRequest extends EncodedBody {
  /** True on `/batch/`, where the body must be a batch object. */
  readonly batchRoute: boolean;
  /** `?_=` client time in milliseconds (posthog-js), if any. */
  readonly querySentAt: string | undefined;
  /** The peer and forwarding headers, for `$ip`. */
  readonly client: ClientSeen;
}

export interface CaptureServiceConfig {
  readonly spikeRatePerSecond: number;
  readonly spikeBurst: number;
  /** Proxies whose forwarding headers name the client (`WEIR_TRUSTED_PROXIES`). */
  readonly trustedProxies: readonly string[];
}

export interface CaptureServiceDeps {
  readonly catalog: ProjectKeys;
  readonly bus: Bus;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** GeoIP, when it is on. */
  readonly geoip?: PropertyEnricher | undefined;
  readonly now?: () => number;
}

/** What a request handed to the bus, as counts; `published` settles when the bus has made it durable. */
interface Accepted {
  readonly published: Promise<void>;
  readonly byLane: [Lane, number][];
}

/**
 * Capture's whole job for one request, apart from HTTP: decode, find the project, validate and normalise
 * every event (one refusal refuses the request), route each to its lane, and hand them to the bus —
 * resolving only when the bus says they are durable.
 */
export class CaptureService {
  readonly #deps: CaptureServiceDeps;
  readonly #spikes: SpikeDetector;
  readonly #now: () => number;
  readonly #events: Readonly<Record<Lane, Tally>>;
  readonly #addresses: ClientAddresses;

  constructor(config: CaptureServiceConfig, deps: CaptureServiceDeps) {
    this.#deps = deps;
    this.#spikes = new SpikeDetector({ ratePerSecond: config.spikeRatePerSecond, burst: config.spikeBurst });
    this.#now = deps.now ?? Date.now;
    this.#addresses = new ClientAddresses(config.trustedProxies);
    const m = deps.metrics;
    this.#events = {
      live: m.tally(m.captureEvents, { lane: 'live' }),
      overflow: m.tally(m.captureEvents, { lane: 'overflow' }),
      historical: m.tally(m.captureEvents, { lane: 'historical' }),
    };
  }

  /** The client's address of a request: its peer, or whom a trusted proxy says it forwarded for. */
  clientIp(seen: ClientSeen): string {
    return this.#addresses.clientIp(seen.peer, seen.forwarded, seen.xForwardedFor);
  }

  /** GeoIP, when on (Capture V1 normalises its events itself). */
  get geoip(): PropertyEnricher | undefined {
    return this.#deps.geoip;
  }

  /**
   * Resolves when the bus has made the request's events durable. A request refused before anything of it
   * was taken (a bad body, an unknown key, back-pressure) throws at once — or, for a large gzip body
   * decoded on the thread pool, rejects.
   */
  capture(request: CaptureRequest): Promise<void> {
    const decoding = this.#decodeAndAccept(request);
    return decoding instanceof Promise
      ? decoding.then((accepted) => this.#counted(accepted))
      : this.#counted(decoding);
  }

  /**
   * `published`, counting the events by lane once it resolves. Only counts are kept while the bus makes
   * the events durable: the parsed request is let go as soon as it is handed over.
   */
  #counted(accepted: Accepted): Promise<void> {
    const byLane = accepted.byLane;
    if (byLane.length === 0) return accepted.published;
    return accepted.published.then(() => {
      for (const [lane, count] of byLane) this.#events[lane].add(count);
    });
  }

  /** Synchronous but for a large gzip body (see decodeBody): no promise in between for most requests. */
  #decodeAndAccept(request: CaptureRequest): Accepted | Promise<Accepted> {
    const now = this.#now();
    const decoded = decodeBody(request);
    return decoded instanceof Promise
      ? decoded.then((d) => this.#accept(d.value, d.decodedLength, request, now))
      : this.#accept(decoded.value, decoded.decodedLength, request, now);
  }

  /**
   * Validates and normalises every event (one refusal refuses the request), routes each to its lane and
   * hands them to the bus. Synchronous, so nothing it made is kept once it returns.
   */
  #accept(value: unknown, decodedLength: number, request: CaptureRequest, now: number): Accepted {
    const payload = readPayload(value, request.batchRoute, request.querySentAt);
    const project = this.#deps.catalog.projectByApiToken(payload.token);
    if (!project) throw new AppError('invalid_api_key', { attr: 'api_key' });

    const ctx = {
      projectId: project.id,
      now,
      sentAt: payload.sentAt,
      // `decodedLength` counts UTF-16 units, and one unit is up to 3 bytes of UTF-8 (a pair is 4 for 2).
      checkEventSize: decodedLength * 3 > MAX_EVENT_BYTES,
      // A project that keeps no IP never has one worked out, nor put on the bus.
      clientIp: project.anonymizeIps ? '' : this.clientIp(request.client),
      anonymizeIps: project.anonymizeIps,
      geoip: this.#deps.geoip,
    };
    const events: CapturedEvent[] = [];
    const warnings: IngestionWarning[] = [];
    // Only a request of several events can hold one uuid twice.
    const seen = payload.items.length > 1 ? new Set<string>() : undefined;
    const drops = { listed: 0, more: new Map<DropReason, { first: number; count: number }>() };
    for (let i = 0; i < payload.items.length; i++) {
      const item = payload.items[i]!;
      const result = normalizeEvent(item, i, ctx);
      if (result.kind === 'drop') {
        this.#deps.metrics.captureDropped.inc({ reason: result.reason });
        if (drops.listed < MAX_DROP_WARNINGS) {
          drops.listed++;
          warnings.push({
            projectId: project.id,
            type: `event_dropped_${result.reason}`,
            source: 'capture',
            details: {
              event: typeof item['event'] === 'string' ? cut(item['event'], 200) : null,
              index: i,
            },
            timestamp: now,
          });
        } else {
          const more = drops.more.get(result.reason);
          if (more) more.count++;
          else drops.more.set(result.reason, { first: i, count: 1 });
        }
        continue;
      }
      if (isSuppressed(project, result.event.distinctId)) {
        // Suppressed by an erasure: answered 200 and counted, with no warning (it would name the id).
        this.#deps.metrics.captureDropped.inc({ reason: 'suppressed' });
        continue;
      }
      if (result.warning)
        warnings.push({ ...result.warning, details: { ...result.warning.details, uuid: result.event.uuid } });
      // The same uuid twice in one request is one event.
      if (seen) {
        if (seen.has(result.event.uuid)) continue;
        seen.add(result.event.uuid);
      }
      events.push(result.event);
    }

    for (const [reason, { first, count }] of drops.more) {
      warnings.push({
        projectId: project.id,
        type: `event_dropped_${reason}`,
        source: 'capture',
        details: { more: count, from_index: first },
        timestamp: now,
      });
    }

    return this.#handOver(events, warnings, payload.historical, now);
  }

  /**
   * Hands events already validated and normalised (Capture V1's) to the bus as a v0 request's are: the same
   * lanes, spike detection and counts; resolves when the bus says they are durable.
   */
  publish(
    events: CapturedEvent[],
    warnings: IngestionWarning[],
    historical: boolean,
    now: number,
  ): Promise<void> {
    return this.#counted(this.#handOver(events, warnings, historical, now));
  }

  #handOver(
    events: CapturedEvent[],
    warnings: IngestionWarning[],
    historical: boolean,
    now: number,
  ): Accepted {
    const batches = this.#route(events, warnings, historical, now);
    const byLane: [Lane, number][] = [];
    for (const b of batches) if (b.events.length > 0) byLane.push([b.lane, b.events.length]);
    const published = batches.length > 0 ? this.#deps.bus.publish(batches) : Promise.resolve();
    return { published, byLane };
  }

  #route(
    events: CapturedEvent[],
    warnings: IngestionWarning[],
    historical: boolean,
    now: number,
  ): EventBatch[] {
    if (historical) return [{ lane: 'historical', events, warnings }];
    const byLane: Record<Exclude<Lane, 'historical'>, CapturedEvent[]> = { live: [], overflow: [] };
    for (const e of events)
      byLane[this.#spikes.allow(e.projectId, e.distinctId, now) ? 'live' : 'overflow'].push(e);
    const out: EventBatch[] = [];
    if (byLane.live.length > 0 || warnings.length > 0)
      out.push({ lane: 'live', events: byLane.live, warnings });
    if (byLane.overflow.length > 0) out.push({ lane: 'overflow', events: byLane.overflow, warnings: [] });
    return out;
  }
}
