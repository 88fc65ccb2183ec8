import { v7 as uuidv7 } from 'uuid';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A client's uuid when it is a valid UUID (lower-cased), else a new UUIDv7 (SPEC §2). */
export function eventUuid(candidate: unknown): string {
  if (typeof candidate === 'string' && UUID_RE.test(candidate)) return candidate.toLowerCase();
  return uuidv7();
}

export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

export { uuidv7 };
