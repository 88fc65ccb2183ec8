import { randomFillSync } from 'node:crypto';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A client's uuid when it is a valid UUID (lower-cased), else a new UUIDv7 (SPEC §2). */
export function eventUuid(candidate: unknown): string {
  if (typeof candidate === 'string' && UUID_RE.test(candidate)) return candidate.toLowerCase();
  return uuidv7();
}

export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, version 7, the RFC variant, then random bits from a pool
 * the CSPRNG fills 4 KiB at a time (the `uuid` package's v7 asked it for 16 bytes a call: 7.5% of ingest's
 * CPU under batch load). The text is written as bytes into a scratch buffer and made a string in one step:
 * built from `randomUUID()` by slicing and concatenating, each uuid cost ~700 bytes of short-lived strings
 * (Node makes `randomUUID`'s text from 20 concatenated pieces), 18% of what capture allocated per event in
 * batch mode when the events came without uuids.
 */
export function uuidv7(now = Date.now()): string {
  if (now !== textMs) {
    // Many uuids share a millisecond under load: their time digits are written once.
    const ts = now.toString(16).padStart(12, '0');
    text.write(ts.slice(0, 8), 0, 'latin1');
    text.write(ts.slice(8, 12), 9, 'latin1');
    textMs = now;
  }
  if (poolAt + RANDOM_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  // 18 random hex digits and 2 bits of the variant digit: the 74 random bits of RFC 9562 (rand_a, rand_b).
  let at = poolAt;
  poolAt += RANDOM_BYTES;
  let digit = 0;
  for (const position of RANDOM_DIGITS) {
    const byte = pool[at]!;
    const nibble = (digit & 1) === 0 ? byte >> 4 : byte & 0xf;
    if ((digit & 1) === 1) at++;
    digit++;
    text[position] = position === 19 ? HEX_DIGITS[8 | (nibble & 3)]! : HEX_DIGITS[nibble]!;
  }
  return text.toString('latin1', 0, 36);
}

const RANDOM_BYTES = 10;
/** Where the random digits go in `xxxxxxxx-xxxx-7xxx-Vxxx-xxxxxxxxxxxx` (V: the variant digit, 19). */
const RANDOM_DIGITS = Uint8Array.from([
  15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
]);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
const text = Buffer.from('00000000-0000-7000-8000-000000000000', 'latin1');
let textMs = -1;
