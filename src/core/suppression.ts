import { createHash } from 'node:crypto';
import type { Project } from './ports.ts';

/**
 * Suppressed distinct ids are kept as the first 128 bits of their SHA-256, scoped to their project: enough that
 * no two ids of a project meet by chance, and the catalog never holds an erased id itself.
 */
export function suppressionHash(distinctId: string): string {
  return createHash('sha256').update(distinctId).digest('hex').slice(0, 32);
}

/** Each project record's suppressions as a set, made once per record (a change makes a new record). */
const sets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** Whether capture drops this distinct id's events: free for a project that suppresses nobody. */
export function isSuppressed(project: Pick<Project, 'suppressedDistinctIds'>, distinctId: string): boolean {
  const hashes = project.suppressedDistinctIds;
  if (hashes.length === 0) return false;
  let set = sets.get(hashes);
  if (!set) {
    set = new Set(hashes);
    sets.set(hashes, set);
  }
  return set.has(suppressionHash(distinctId));
}
