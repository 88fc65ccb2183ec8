import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import { compareVersions } from '../../kv/cas-bucket.ts';

/**
 * Whether JetStream's acknowledgement means the events are on disk, checked as a role connects
 * (docs/operations.md, "Durability"). Capture answers 200 once JetStream acknowledges, and by default
 * nats-server acknowledges before it fsyncs (every `sync_interval`, 2 minutes): an OS crash or a power cut
 * then loses what it acknowledged since. Only `sync_interval: always` (nats-server 2.10 or later) syncs
 * first. The setting is visible only on the server's monitoring port (`/varz`), so it is read there when
 * `WEIR_NATS_MONITOR_URL` names it; the version comes with the connection.
 */

export interface BusDurabilityConfig {
  /** Monitoring URLs of the servers (`http://nats:8222`), comma-separated; unset: the setting is unknown. */
  readonly natsMonitorUrl?: string | undefined;
  /** Refuse to start unless every acknowledgement is known durable (WEIR_REQUIRE_DURABLE_BUS). @default false */
  readonly requireDurableBus?: boolean;
}

export interface ServerDurability {
  readonly server: string;
  readonly version: string;
  /** `always`, every N ms, or unknown (no monitoring URL, or it did not answer). */
  readonly sync: 'always' | 'interval' | 'unknown';
  readonly syncIntervalMs?: number;
  /** Why acknowledgements of this server are not known durable; empty when they are. */
  readonly problems: readonly string[];
}

/** Versions with a known loss of acknowledged data, and what was lost. */
const KNOWN_LOSS: readonly { readonly from: string; readonly to: string; readonly what: string }[] = [
  {
    from: '2.10.20',
    to: '2.10.22',
    what: 'whole streams lost after process crashes (Jepsen; fixed in 2.10.23)',
  },
];

/** The `/varz` fields read (nats-server's JetStreamConfig: sync_interval in nanoseconds). */
interface Varz {
  readonly version?: string;
  readonly jetstream?: {
    readonly config?: { readonly sync_always?: boolean; readonly sync_interval?: number };
  };
}

/** What a server's version and (if read) its `/varz` say of its acknowledgements. */
export function assessServer(server: string, version: string, varz: Varz | undefined): ServerDurability {
  const problems: string[] = [];
  for (const k of KNOWN_LOSS)
    if (compareVersions(version, k.from) >= 0 && compareVersions(version, k.to) <= 0)
      problems.push(`nats-server ${version} has a known data-loss bug: ${k.what}`);
  if (compareVersions(version, '2.10.0') < 0) {
    problems.push(
      `nats-server ${version} cannot sync before it acknowledges (sync_interval: always came in 2.10): ` +
        'an OS crash or power cut loses what it acknowledged since its last periodic sync',
    );
    return { server, version, sync: 'interval', problems };
  }
  const config = varz?.jetstream?.config;
  if (config === undefined) {
    problems.push(
      'JetStream sync_interval is unknown (set WEIR_NATS_MONITOR_URL to the monitoring port to check it): ' +
        "nats-server's default syncs every 2 minutes, after acknowledging",
    );
    return { server, version, sync: 'unknown', problems };
  }
  if (config.sync_always === true) return { server, version, sync: 'always', problems };
  const syncIntervalMs = Math.round((config.sync_interval ?? 120e9) / 1e6);
  problems.push(
    `JetStream syncs every ${syncIntervalMs / 1000} s, after acknowledging: an OS crash or power cut loses ` +
      'up to that much acknowledged data (set sync_interval: always)',
  );
  return { server, version, sync: 'interval', syncIntervalMs, problems };
}

async function readVarz(url: string): Promise<Varz | undefined> {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/varz`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) return undefined;
    return (await res.json()) as Varz;
  } catch {
    return undefined;
  }
}

export class NonDurableBusError extends Error {
  override name = 'NonDurableBusError';
}

/**
 * Checks every server it can see: the one connected to (its version), and each monitoring URL's (`/varz`).
 * Logs a warning and sets `weir_bus_acks_durable` 0 when any acknowledgement may not be durable; with
 * `requireDurableBus`, throws instead, so the role does not start.
 */
export async function checkBusDurability(
  nc: NatsConnection,
  config: BusDurabilityConfig,
  deps: { readonly logger: Logger; readonly metrics: Metrics },
): Promise<readonly ServerDurability[]> {
  const monitors = (config.natsMonitorUrl ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const found: ServerDurability[] = [];
  if (monitors.length === 0) {
    found.push(assessServer(nc.getServer(), nc.info?.version ?? '0.0.0', undefined));
  } else {
    for (const url of monitors) {
      const varz = await readVarz(url);
      if (varz === undefined) {
        found.push({
          server: url,
          version: 'unknown',
          sync: 'unknown',
          problems: [`the monitoring port at ${url} did not answer /varz`],
        });
        continue;
      }
      found.push(assessServer(url, varz.version ?? nc.info?.version ?? '0.0.0', varz));
    }
  }
  const problems = found.flatMap((s) => s.problems.map((p) => `${s.server}: ${p}`));
  deps.metrics.busAcksDurable.set(problems.length === 0 ? 1 : 0);
  for (const s of found)
    deps.metrics.busServerInfo.set({ server: s.server, version: s.version, sync: s.sync }, 1);
  if (problems.length === 0) {
    deps.logger.info({ servers: found.map((s) => s.server) }, 'JetStream syncs before it acknowledges');
    return found;
  }
  if (config.requireDurableBus === true)
    throw new NonDurableBusError(
      `WEIR_REQUIRE_DURABLE_BUS is set and JetStream's acknowledgements are not known durable: ${problems.join('; ')}`,
    );
  deps.logger.warn(
    { problems },
    "JetStream's acknowledgements may not be durable: capture's 200 can be lost to a crash of the server's machine",
  );
  return found;
}
