import { randomUUID } from 'node:crypto';
import type { Row } from '../../src/core/ports.ts';
import { chTime } from '../../src/store/ch-time.ts';

/** `n` rows of the `events` table whose `event` is `tag`, each with a fresh uuid and an `i` property. */
export function eventRows(tag: string, n: number, offset = 0): Row[] {
  const now = chTime(Date.now());
  return Array.from({ length: n }, (_, k) => ({
    project_id: 1,
    uuid: randomUUID(),
    event: tag,
    distinct_id: `user-${offset + k}`,
    person_id: randomUUID(),
    timestamp: now,
    properties: JSON.stringify({ i: offset + k }),
    person_properties: '{}',
    person_mode: 'full',
    created_at: now,
  }));
}
