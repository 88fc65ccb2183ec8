/**
 * GeoIP enrichment as PostHog's GeoIP transformation (`template-geoip`) does it: the event's `$ip` looked up
 * in a MaxMind-format city database, the location written as `$geoip_*` event properties and, for the
 * person, `$set` / `$set_once` (`$initial_geoip_*`) — every field cleared first, so a move leaves no stale
 * value. Unlike the template, 127.0.0.1 is not swapped for a Swedish address: loopback finds nothing.
 */
import { isIP } from 'node:net';
import type { Reader, Response } from 'mmdb-lib';
import { locationOf, type GeoipLocation } from './geoip-formats.ts';
import { openDatabases, type GeoipDatabaseInfo, type GeoipSource } from './geoip-source.ts';

export type { GeoipLocation } from './geoip-formats.ts';
export {
  GEOIP_PACKAGE,
  loadGeoipSource,
  type GeoipDatabaseInfo,
  type GeoipOrigin,
  type GeoipSource,
  type GeoipSourceFile,
} from './geoip-source.ts';

export interface GeoipOptions {
  /**
   * At most this many addresses' answers are kept, the older half forgotten at once when full; 0 keeps none.
   * @default 10_000
   */
  readonly cacheSize?: number;
}

/** PostHog's fields, each cleared in `$set` and `$set_once` before the found ones are written. */
export const GEOIP_FIELDS = [
  'city_name',
  'city_confidence',
  'subdivision_2_name',
  'subdivision_2_code',
  'subdivision_1_name',
  'subdivision_1_code',
  'country_name',
  'country_code',
  'continent_name',
  'continent_code',
  'postal_code',
  'latitude',
  'longitude',
  'accuracy_radius',
  'time_zone',
] as const;

const GEOIP = '$geoip_';

/** Each location field's property names, made once rather than per lookup. */
const PROPERTY_NAMES = new Map<string, readonly [geoip: string, initial: string]>(
  GEOIP_FIELDS.map((field) => [field, [`${GEOIP}${field}`, `$initial_geoip_${field}`]]),
);

const CLEARED = GEOIP_FIELDS.map((field) => PROPERTY_NAMES.get(field)!);

function propertyNames(field: string): readonly [geoip: string, initial: string] {
  let names = PROPERTY_NAMES.get(field);
  if (names === undefined) {
    names = [`${GEOIP}${field}`, `$initial_geoip_${field}`];
    // Fields past these are further subdivisions: a few, in practice; the cap holds whatever a file says.
    if (PROPERTY_NAMES.size < 64) PROPERTY_NAMES.set(field, names);
  }
  return names;
}

/**
 * A location as `enrich` writes it, flat: `$geoip_` name, `$initial_geoip_` name, value, and again. Cached
 * answers survive young-generation GCs, which copy every surviving object: one array, rather than an array
 * per field, took a quarter off the cost of a cache miss.
 */
type Found = readonly (string | number)[];

/** Lookups and enrichment over a `GeoipSource`, on any thread. */
export class Geoip {
  readonly databases: readonly GeoipDatabaseInfo[];
  readonly #v4: Reader<Response> | undefined;
  readonly #v6: Reader<Response> | undefined;
  #recent = new Map<string, Found | null>();
  #older = new Map<string, Found | null>();
  readonly #generationSize: number;

  constructor(source: GeoipSource, options: GeoipOptions = {}) {
    const opened = openDatabases(source);
    this.#v4 = opened[4]?.reader;
    this.#v6 = opened[6]?.reader;
    this.databases = [opened[4], opened[6]].flatMap((db) => (db === undefined ? [] : [db.info]));
    this.#generationSize = Math.ceil((options.cacheSize ?? 10_000) / 2);
  }

  /** The location fields of an address; null when it is not an address or the database has no record. */
  lookup(ip: string): GeoipLocation | null {
    const found = this.#find(ip);
    if (found === null) return null;
    const location: Record<string, string | number> = {};
    for (let i = 0; i < found.length; i += 3) {
      location[(found[i] as string).slice(GEOIP.length)] = found[i + 2]!;
    }
    return location;
  }

  /** Adds the location of `properties.$ip` to the event's properties, as `template-geoip` does. */
  enrich(properties: Record<string, unknown>): void {
    if (properties['$geoip_disable']) return;
    const ip = properties['$ip'];
    if (typeof ip !== 'string' || ip === '') return;
    const found = this.#find(ip);
    if (found === null) return;
    const set = ownObject(properties, '$set');
    const setOnce = ownObject(properties, '$set_once');
    for (const [geoip, initial] of CLEARED) {
      set[geoip] = null;
      setOnce[initial] = null;
    }
    for (let i = 0; i < found.length; i += 3) {
      const value = found[i + 2];
      properties[found[i] as string] = value;
      set[found[i] as string] = value;
      setOnce[found[i + 1] as string] = value;
    }
  }

  /**
   * Two generations, each of half the size, the older dropped whole when the newer fills: Map's own oldest
   * entry (`keys().next()`) slows down as deleted entries pile up ahead of it, to a third of no cache at all
   * when every lookup misses.
   */
  #find(ip: string): Found | null {
    let found = this.#recent.get(ip);
    if (found !== undefined) return found;
    found = this.#older.get(ip);
    if (found === undefined) found = this.#read(ip);
    if (this.#generationSize > 0) {
      if (this.#recent.size >= this.#generationSize) {
        this.#older = this.#recent;
        this.#recent = new Map();
      }
      this.#recent.set(ip, found);
    }
    return found;
  }

  #read(ip: string): Found | null {
    let address = ip;
    let version = isIP(ip);
    if (version === 6) {
      const mapped = ipv4Mapped(ip);
      if (mapped !== undefined) [address, version] = [mapped, 4];
    }
    // An IPv6 tree holds IPv4 at ::/96; an IPv4 tree must never see an IPv6 address: mmdb-lib would walk it
    // with the address's first 32 bits and answer for an unrelated IPv4 network.
    const reader = version === 4 ? (this.#v4 ?? this.#v6) : version === 6 ? this.#v6 : undefined;
    if (reader === undefined) return null;
    let record: unknown;
    try {
      record = reader.get(address);
    } catch {
      return null;
    }
    if (record === null || record === undefined) return null;
    const found: (string | number)[] = [];
    for (const [field, value] of Object.entries(locationOf(record))) {
      found.push(...propertyNames(field), value);
    }
    return found;
  }
}

/** `$set` as it is when it is an object (the event's own values are kept), else a new one. */
function ownObject(properties: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = properties[key];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return value as Record<string, unknown>;
  }
  const fresh: Record<string, unknown> = {};
  properties[key] = fresh;
  return fresh;
}

/**
 * The IPv4 address of an IPv4-mapped IPv6 one (`::ffff:1.2.3.4`, `0:0:0:0:0:ffff:102:304`): ip-location-db's
 * IPv6 file has no such addresses, so they are looked up as what they are.
 */
function ipv4Mapped(ip: string): string | undefined {
  const lower = ip.toLowerCase();
  const at = lower.lastIndexOf(':ffff:');
  if (at === -1) return undefined;
  // Only zeros before `ffff`, and 32 bits after it: in a valid IPv6 address, `ffff` is then the sixth group.
  if (!/^[0:]*$/.test(lower.slice(0, at))) return undefined;
  const tail = lower.slice(at + 6);
  if (isIP(tail) === 4) return tail;
  const groups = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(tail);
  if (groups === null) return undefined;
  const [high, low] = [parseInt(groups[1]!, 16), parseInt(groups[2]!, 16)];
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}
