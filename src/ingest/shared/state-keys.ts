/**
 * The keys of the shared person and group state in its KV bucket. KV keys allow `[-/_=.a-zA-Z0-9]` only, and
 * `.` separates tokens, so a distinct id or a group key (any text) is written as base64url behind a letter:
 * the letter keeps an empty one a valid token, and base64url keeps every other within the alphabet. Person ids
 * are UUIDs, valid as they are.
 *
 * - `p.<project>.<person uuid>`: a person (PersonRecord)
 * - `d.<project>.n<base64url(distinct id)>`: the link of a distinct id to a person (LinkRecord), made once
 * - `t.<project>`: the project's group types in index order
 * - `g.<project>.<type index>.n<base64url(group key)>`: a group
 */

/** The prefixes a watch follows, one per kind of record. */
export const PERSON_PREFIX = 'p';
export const LINK_PREFIX = 'd';
export const TYPES_PREFIX = 't';
export const GROUP_PREFIX = 'g';

export function encodeToken(text: string): string {
  return `n${Buffer.from(text, 'utf8').toString('base64url')}`;
}

export function decodeToken(token: string): string {
  if (!token.startsWith('n')) throw new Error(`not an encoded key token: ${token}`);
  return Buffer.from(token.slice(1), 'base64url').toString('utf8');
}

export function personKey(projectId: number, personId: string): string {
  return `${PERSON_PREFIX}.${projectId}.${personId}`;
}

export function linkKey(projectId: number, distinctId: string): string {
  return `${LINK_PREFIX}.${projectId}.${encodeToken(distinctId)}`;
}

export function typesKey(projectId: number): string {
  return `${TYPES_PREFIX}.${projectId}`;
}

export function groupKey(projectId: number, typeIndex: number, key: string): string {
  return `${GROUP_PREFIX}.${projectId}.${typeIndex}.${encodeToken(key)}`;
}

/** The project of any of these keys (its second token). */
export function projectOfKey(key: string): number {
  const a = key.indexOf('.');
  const b = key.indexOf('.', a + 1);
  return Number(b < 0 ? key.slice(a + 1) : key.slice(a + 1, b));
}

/** The person id of a `p.` key. */
export function personIdOfKey(key: string): string {
  return key.slice(key.indexOf('.', key.indexOf('.') + 1) + 1);
}
