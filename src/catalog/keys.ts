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

/** The shape shown where a key's value may not be: prefix and last four characters. */
export function maskKey(value: string): string {
  return `${value.slice(0, 4)}…${value.slice(-4)}`;
}
