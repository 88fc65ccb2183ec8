import { continents, countries } from 'countries-list';

/**
 * A GeoIP record turned into PostHog's location fields (`city_name`, `country_code`, `subdivision_1_name`, …),
 * from either schema a database may have: MaxMind's own (GeoIP2/GeoLite2 City: nested objects with `names`
 * maps), or ip-location-db's flattened one (`{country_code, state1, state2, city, postcode, latitude,
 * longitude, timezone}`). A record's shape says which; records are foreign data, so nothing here throws.
 */
export type GeoipLocation = Readonly<Record<string, string | number>>;

type Fields = Record<string, string | number>;

export function locationOf(record: unknown): GeoipLocation {
  if (!isObject(record)) return {};
  return typeof record['country_code'] === 'string' ? fromFlattened(record) : fromMaxmind(record);
}

/** Keys in the order of PostHog's template, so events read the same. */
function fromMaxmind(record: Record<string, unknown>): Fields {
  const out: Fields = {};
  const city = record['city'];
  if (isObject(city)) put(out, 'city_name', englishName(city));
  const country = record['country'];
  if (isObject(country)) {
    put(out, 'country_name', englishName(country));
    put(out, 'country_code', country['iso_code']);
  }
  const continent = record['continent'];
  if (isObject(continent)) {
    put(out, 'continent_name', englishName(continent));
    put(out, 'continent_code', continent['code']);
  }
  const postal = record['postal'];
  if (isObject(postal)) put(out, 'postal_code', postal['code']);
  const location = record['location'];
  if (isObject(location)) {
    put(out, 'latitude', location['latitude']);
    put(out, 'longitude', location['longitude']);
    put(out, 'accuracy_radius', location['accuracy_radius']);
    put(out, 'time_zone', location['time_zone']);
  }
  const subdivisions = record['subdivisions'];
  if (Array.isArray(subdivisions)) {
    subdivisions.forEach((subdivision: unknown, i) => {
      if (!isObject(subdivision)) return;
      put(out, `subdivision_${i + 1}_code`, subdivision['iso_code']);
      put(out, `subdivision_${i + 1}_name`, englishName(subdivision));
    });
  }
  return out;
}

/**
 * The flattened file has no names but the city's and the states', and no continent: the country's English
 * name and its continent come from countries-list (its names are nearer MaxMind's than ICU's: 9 of 189
 * differ, against 17, and they do not change with the Node.js version). It has no accuracy radius nor subdivision codes.
 */
function fromFlattened(record: Record<string, unknown>): Fields {
  const out: Fields = {};
  put(out, 'city_name', record['city']);
  const country = countryOf(record['country_code']);
  if (country !== undefined) {
    put(out, 'country_name', country.name);
    put(out, 'country_code', country.code);
    put(out, 'continent_name', country.continentName);
    put(out, 'continent_code', country.continentCode);
  }
  put(out, 'postal_code', record['postcode']);
  put(out, 'latitude', degrees(record['latitude']));
  put(out, 'longitude', degrees(record['longitude']));
  put(out, 'time_zone', record['timezone']);
  put(out, 'subdivision_1_name', record['state1']);
  put(out, 'subdivision_2_name', record['state2']);
  return out;
}

interface Country {
  readonly code: string;
  readonly name: string | undefined;
  readonly continentCode: string | undefined;
  readonly continentName: string | undefined;
}

type ContinentCode = keyof typeof continents;

type CountryRecord = { readonly name: string; readonly continent: ContinentCode };
const COUNTRIES = countries as Partial<Record<string, CountryRecord>>;
/** Per country code, made once. */
const countryMemo = new Map<string, Country>();

function countryOf(code: unknown): Country | undefined {
  if (typeof code !== 'string') return undefined;
  let country = countryMemo.get(code);
  // Only well-formed codes are kept: at most 676 of them, whatever a damaged file holds.
  if (country === undefined && /^[A-Z]{2}$/.test(code)) {
    const continentCode = continentOf(code);
    const continentName = continentCode === undefined ? undefined : continents[continentCode];
    country = { code, name: COUNTRIES[code]?.name, continentCode, continentName };
    countryMemo.set(code, country);
  }
  return country;
}

/**
 * countries-list gives a transcontinental country its main continent; of those, MaxMind puts only Russia
 * elsewhere (Europe, where countries-list says Asia), checked against every country of a GeoLite2 City file.
 */
function continentOf(code: string): ContinentCode | undefined {
  if (code === 'RU') return 'EU';
  return COUNTRIES[code]?.continent;
}

/**
 * The flattened file stores coordinates as 32-bit floats (59.31 reads back as 59.310001373291016); MaxMind
 * publishes four decimals, which a float32 keeps, so rounding gives MaxMind's own value back.
 */
function degrees(value: unknown): number | undefined {
  return typeof value === 'number' ? Math.round(value * 1e4) / 1e4 : undefined;
}

function englishName(place: Record<string, unknown>): unknown {
  const names = place['names'];
  return isObject(names) ? names['en'] : undefined;
}

/** A missing or empty value is left out: the flattened file writes '' for what it does not know. */
function put(out: Fields, key: string, value: unknown): void {
  if ((typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value))) {
    out[key] = value;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
