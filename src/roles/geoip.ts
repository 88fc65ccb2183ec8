import { loadGeoipSource, type GeoipSource } from '../capture/geoip.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../core/logger.ts';

/**
 * The GeoIP database when GeoIP is on (docs/geoip.md), read once per process into shared memory that its
 * capture threads read too; a database that cannot serve lookups stops the start, naming the file.
 */
export function openGeoip(config: Config, logger: Logger): GeoipSource | undefined {
  if (!config.geoip) return undefined;
  let source: GeoipSource;
  try {
    source = loadGeoipSource(
      config.geoipDb === undefined ? { kind: 'package' } : { kind: 'file', path: config.geoipDb },
    );
  } catch (err) {
    throw new ConfigError(`GeoIP: ${(err as Error).message}`);
  }
  const mb = source.files.reduce((sum, f) => sum + f.bytes.byteLength, 0) / 2 ** 20;
  logger.info({ geoip: source.files.map((f) => f.name), mb: Math.round(mb) }, 'GeoIP on');
  return source;
}
