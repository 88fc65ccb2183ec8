import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random key with a prefix (`phc_` project, `phx_` personal), 43 base62 characters (~256 bits). */
export function generateKey(prefix: 'phc_' | 'phx_'): string {
  const bytes = randomBytes(64);
  let out = prefix;
  for (let i = 0; out.length < prefix.length + 43; i++) {
    const b = bytes[i % bytes.length]!;
    if (b < 248) out += ALPHABET[b % 62];
    else if (i >= bytes.length) out += ALPHABET[b % 62];
  }
  return out;
}

/** Personal API keys are stored as SHA-256: a leaked catalog file does not leak working keys. */
export function hashKey(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** Hashes of the key values seen lately, for `hashKeyOfCaller`. */
const recentHashes = new Map<string, string>();
const RECENT_HASHES_MAX = 4096;

/**
 * `hashKey` for the key a request presents. Every API request hashes its key to find it, and a SHA-256 was
 * a tenth of a cached endpoint run's CPU; callers present the same few keys again and again, so their hashes
 * are remembered (at most 4096, all forgotten at once when full: random keys cannot grow it). Only the hash is
 * remembered, never what it finds: a revoked or deleted key is refused as before, from the catalog.
 */
export function hashKeyOfCaller(value: string): string {
  let hash = recentHashes.get(value);
  if (hash === undefined) {
    if (recentHashes.size >= RECENT_HASHES_MAX) recentHashes.clear();
    hash = hashKey(value);
    recentHashes.set(value, hash);
  }
  return hash;
}

/** The shape shown where a key's value may not be: prefix and last four characters. */
export function maskKey(value: string): string {
  return `${value.slice(0, 4)}…${value.slice(-4)}`;
}
