/**
 * The GeoIP bench's in-process baseline (geoip.ts): what Weir's own `Geoip.enrich` costs per event over a
 * set's addresses, with no HTTP, ingest or store around it. Set beside the Weirs' events/s, it says how much
 * of GeoIP's cost is the lookup and how much what follows it (larger rows, person updates).
 */
import { Geoip, loadGeoipSource } from '../../src/capture/geoip.ts';

export interface LookupCost {
  readonly set: string;
  /** Events enriched in the measured pass (after an unmeasured one that fills the cache and the JIT). */
  readonly events: number;
  /** Microseconds of one thread per event. */
  readonly microsPerEvent: number;
  /** Mean length of an enriched event's properties as JSON, characters. */
  readonly enrichedChars: number;
}

const EVENTS = 200_000;

export function measureLookups(
  sets: readonly { readonly name: string; readonly ips: readonly string[] }[],
): LookupCost[] {
  const geoip = new Geoip(loadGeoipSource({ kind: 'package' }));
  return sets.map(({ name, ips }) => {
    let micros = 0;
    let chars = 0;
    let sampled = 0;
    for (let pass = 0; pass < 2; pass++) {
      const started = performance.now();
      for (let e = 0; e < EVENTS; e++) {
        // The generator's properties, as capture sees them before GeoIP.
        const properties: Record<string, unknown> = {
          $current_url: `https://example.com/p/${e % 10_000}`,
          $browser: 'Chrome',
          $ip: ips[e % ips.length],
        };
        geoip.enrich(properties);
        if (pass === 1 && e % 1000 === 0) {
          chars += JSON.stringify(properties).length;
          sampled++;
        }
      }
      micros = ((performance.now() - started) * 1000) / EVENTS;
    }
    return { set: name, events: EVENTS, microsPerEvent: micros, enrichedChars: Math.round(chars / sampled) };
  });
}
