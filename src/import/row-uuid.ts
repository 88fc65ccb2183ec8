import { createHash } from 'node:crypto';

/** The namespace of derived event uuids (a fixed random UUID): the same row always derives the same uuid. */
const NAMESPACE = Buffer.from('5f0c8f4e9b1a4d2c8e7a3b6d1c2e9f40', 'hex');

/**
 * The uuid of a row that carries none: a version-5 (SHA-1, name-based) UUID of the event's canonical JSON
 * and the row's number within its file. So an import run twice (or resumed after a crash) sends every event
 * with the same uuid, and the store, keyed by uuid, keeps it once. The row number is part of the name so that
 * two identical rows of one file — two clicks in one millisecond, as the export saw them — stay two events;
 * the file's name is not, so a renamed or recompressed export still derives the same uuids. The cost: rows
 * inserted into the middle of a file between two runs shift the numbers of the rows after them.
 */
export function deriveUuid(event: Record<string, unknown>, row: number): string {
  const hash = createHash('sha1').update(NAMESPACE).update(canonicalJson(event)).update(`\n${row}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** JSON with every object's keys sorted, so key order (which exporters do not keep alike) changes nothing. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(obj).sort()) {
      if (obj[key] !== undefined) parts.push(`${JSON.stringify(key)}:${canonicalJson(obj[key])}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
