import { BlockList, isIP } from 'node:net';

const PEERS_REMEMBERED = 4096;

/**
 * The client's address of a request: the connection's peer, or, when that peer is a proxy Weir trusts, the
 * address the proxies say they forwarded for (RFC 7239 `Forwarded`, else `X-Forwarded-For`). Headers from a
 * peer that is not trusted are ignored, as anyone can send them.
 */
export class ClientAddresses {
  readonly #trusted: BlockList;
  readonly #any: boolean;
  readonly #peers = new Map<string, string>();

  /** `trusted`: CIDRs or addresses (`10.0.0.0/8`, `::1`); `parseTrustedProxies` checks them. */
  constructor(trusted: readonly string[]) {
    this.#trusted = new BlockList();
    this.#any = trusted.length > 0;
    for (const entry of trusted) {
      const { address, prefix, family } = parseEntry(entry);
      if (prefix === undefined) this.#trusted.addAddress(address, family);
      else this.#trusted.addSubnet(address, prefix, family);
    }
  }

  /**
   * The client's address: walking the forwarded chain from the nearest hop, the first address that is not a
   * trusted proxy (every hop trusted: the farthest). '' when the peer is unknown.
   */
  clientIp(peer: string, forwarded: string, xForwardedFor: string): string {
    const socket = this.#peer(peer);
    if (!this.#any || socket === '' || !this.isTrusted(socket)) return socket;
    const chain = forwarded !== '' ? forwardedFor(forwarded) : listedAddresses(xForwardedFor);
    let client = socket;
    for (let i = chain.length - 1; i >= 0; i--) {
      const hop = plainAddress(chain[i]!);
      // An obfuscated or unknown hop (`for=unknown`, `_hidden`) ends what can be known.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!this.isTrusted(hop)) break;
    }
    return client;
  }

  /** A peer as stored, remembered: a few peers (proxies, keep-alive clients) send most requests. */
  #peer(raw: string): string {
    let plain = this.#peers.get(raw);
    if (plain === undefined) {
      if (this.#peers.size >= PEERS_REMEMBERED) this.#peers.clear();
      plain = plainAddress(raw);
      this.#peers.set(raw, plain);
    }
    return plain;
  }

  isTrusted(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    return this.#trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/**
 * `WEIR_TRUSTED_PROXIES`: a comma-separated list of CIDRs or addresses, `none` for no proxy at all; throws a
 * sentence naming the entry that is neither.
 */
export function parseTrustedProxies(raw: string): string[] {
  const text = raw.trim();
  if (text === '' || text.toLowerCase() === 'none') return [];
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  for (const entry of entries) parseEntry(entry);
  return entries;
}

function parseEntry(entry: string): { address: string; prefix: number | undefined; family: 'ipv4' | 'ipv6' } {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const version = isIP(address);
  if (version === 0) throw new Error(`'${entry}' is not an IP address or a CIDR`);
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (slash === -1) return { address, prefix: undefined, family };
  const prefixText = entry.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > (version === 4 ? 32 : 128))
    throw new Error(`'${entry}' has no prefix length of 0 to ${version === 4 ? 32 : 128}`);
  return { address, prefix, family };
}

/** An address as it is stored: an IPv4-mapped IPv6 address as the IPv4 one, brackets and port taken off. */
export function plainAddress(raw: string): string {
  let text = raw.trim();
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) text = text.slice(1, -1);
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    text = end === -1 ? text.slice(1) : text.slice(1, end);
  } else if (text.indexOf(':') !== -1 && text.indexOf(':') === text.lastIndexOf(':')) {
    text = text.slice(0, text.indexOf(':')); // IPv4 with a port
  }
  if (text.includes('%')) text = text.slice(0, text.indexOf('%')); // a zone (`fe80::1%eth0`) says nothing of who
  if (isIP(text) !== 6) return text;
  // uWS writes every address in full (`0000:…:ffff:7f00:0001`); the URL parser writes RFC 5952's short form.
  const short = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(short);
  if (!mapped) return short;
  const high = parseInt(mapped[1]!, 16);
  const low = parseInt(mapped[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The addresses of `X-Forwarded-For: client, proxy1, proxy2`, nearest last. */
function listedAddresses(header: string): string[] {
  if (header === '') return [];
  return header.split(',').map((a) => a.trim());
}

/**
 * The `for=` of each element of `Forwarded: for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"`, nearest
 * last; an element without one is an unknown hop ('').
 */
function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(',')) {
    let found = '';
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === 'for') found = pair.slice(eq + 1).trim();
    }
    out.push(found);
  }
  return out;
}
