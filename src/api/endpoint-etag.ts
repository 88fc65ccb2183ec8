import { createHash } from 'node:crypto';
import type { Endpoint } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';

/**
 * An endpoint's ETag: a hash of what a person changes of it (its fields, and each version's query, variables
 * and flags), not of what Weir changes by itself (a refresh's state and lease), so a refresh between a read
 * and a conditional change is no conflict. Strong: equal tags mean equal definitions.
 */
export function endpointEtag(e: Endpoint): string {
  const definition = [
    e.id,
    e.name,
    e.description,
    e.cacheAgeSeconds,
    e.isActive,
    e.syncFrequency,
    e.materializationBucket,
    e.versions.map((v) => [v.version, v.query, v.variables, v.isActive, v.isMaterialized]),
  ];
  return `"${createHash('sha256').update(JSON.stringify(definition)).digest('base64url').slice(0, 22)}"`;
}

/**
 * Refuses a change conditional on ETags (`If-Match`) none of which is the endpoint's now: 409
 * `endpoint_changed`. Called inside the catalog's change, on its newest state, so two nodes changing one
 * endpoint from the same read cannot both pass. `*` matches any endpoint that exists; no header, no condition.
 */
export function requireEtag(ifMatch: string, current: Endpoint): void {
  const wanted = ifMatch.trim();
  if (wanted === '' || wanted === '*') return;
  const tag = endpointEtag(current);
  const tags = wanted.split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (!tags.includes(tag))
    throw new AppError('endpoint_changed', {
      detail: `The endpoint changed since the ETag given in If-Match was read (it is now ${tag}); read it again and make the change anew.`,
      attr: 'If-Match',
    });
}
