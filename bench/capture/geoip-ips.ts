/**
 * Client addresses for the GeoIP bench (geoip.ts): pseudo-random public IPv4 and IPv6 addresses from a fixed
 * seed, so every run sends the same ones. Loopback finds nothing in a GeoIP database and one address is
 * looked up once and then cached: only many different public addresses make Weir do the lookups real
 * traffic makes it do.
 */

/** IPv4 ranges that are not public unicast (RFC 6890 and friends): never sent. */
const NOT_PUBLIC_V4: readonly (readonly [network: string, bits: number])[] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255
];

function v4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const RANGES_V4 = NOT_PUBLIC_V4.map(([network, bits]) => {
  const start = v4Number(network);
  return { start, end: start + 2 ** (32 - bits) - 1 };
});

/** Whether an IPv4 address (as a 32-bit unsigned number) is public unicast. */
export function isPublicV4(n: number): boolean {
  return !RANGES_V4.some((r) => n >= r.start && n <= r.end);
}

function v4Text(n: number): string {
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

/**
 * Three /16s of global unicast that registries have largely handed out (ARIN's 2601::/16, RIPE's 2a01::/16,
 * APNIC's 2410::/16), where IPv6 clients are: a random address of 2000::/3, or even of a registry's /12, mostly
 * falls in space no one has been given, which a database knows nothing of (6% of random addresses in the
 * registries' /12s had a record in GeoLite2 City; 30-47% of these /16s').
 */
const V6_PREFIXES: readonly number[] = [0x2601, 0x2a01, 0x2410];

/**
 * An IPv6 address in RFC 5952's short form (lower case, the longest run of zero groups as `::`), which is
 * how Weir stores addresses: URL's parser writes hosts that way.
 */
function v6Text(groups: readonly number[]): string {
  const full = groups.map((g) => g.toString(16)).join(':');
  return new URL(`http://[${full}]/`).hostname.slice(1, -1);
}

/** mulberry32: a small, fast 32-bit generator; the same seed gives the same addresses everywhere. */
function random32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

export interface AddressOptions {
  /** The generator's seed. @default 1 */
  readonly seed?: number;
  /** The share of the addresses that are IPv6, in [0, 1]. @default 0.1 */
  readonly ipv6Share?: number;
}

/**
 * `count` distinct public addresses, IPv4 and IPv6 interleaved (every 1/ipv6Share-th address is IPv6, so a
 * prefix of the list has the same mix as the whole), the same for the same count and options.
 */
export function publicAddresses(count: number, options: AddressOptions = {}): string[] {
  const next = random32(options.seed ?? 1);
  const ipv6Share = options.ipv6Share ?? 0.1;
  if (!(ipv6Share >= 0 && ipv6Share <= 1)) throw new Error(`ipv6Share must be in [0, 1], got ${ipv6Share}`);
  const seen = new Set<string>();
  const out: string[] = [];
  // Address i is IPv6 when i·share passes a whole number (a tolerance for 0.1's binary rounding).
  const v6Before = (i: number): number => Math.floor(i * ipv6Share + 1e-9);
  while (out.length < count) {
    const i = out.length;
    let address: string;
    if (v6Before(i + 1) > v6Before(i)) {
      const groups = [
        V6_PREFIXES[next() % V6_PREFIXES.length]!,
        ...Array.from({ length: 7 }, () => next() & 0xffff),
      ];
      address = v6Text(groups);
    } else {
      let n = next();
      while (!isPublicV4(n)) n = next();
      address = v4Text(n);
    }
    if (seen.has(address)) continue;
    seen.add(address);
    out.push(address);
  }
  return out;
}
