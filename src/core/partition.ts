/**
 * The partition of an event: a hash of `project:distinct_id`, so that one person's events always meet the
 * same keyed actor (and, on JetStream, the same subject) and keep their order. FNV-1a: fast, stable across
 * processes and versions, and well spread for short keys.
 */
export function partitionOf(projectId: number, distinctId: string, partitions: number): number {
  let h = 0x811c9dc5;
  const key = `${projectId}:${distinctId}`;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}
