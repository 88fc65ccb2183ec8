import type { PropertyType } from '../core/property-types.ts';

/**
 * How a definition held in memory and the store's row of it become one, when several processes record
 * property definitions into one store (the ClickHouse server store with many `weir ingest`, and query nodes
 * that set types through the API). Each process merges what the store holds into what it holds, and writes the
 * result back only when it differs from the stored row. The rule makes every process end on the same state
 * whatever the order of reads and writes, and a state all of them hold is never rewritten:
 *
 * - `events`: the stored names in their order, then the held names the row lacks, at most `maxEvents`. The
 *   store's order is kept so that processes adopt one list instead of trading orders.
 * - `firstSeenAt`: the earlier; `lastSeenAt`: the later.
 * - The type: a type set on purpose (`typeChangedAt` set) beats a detected one, and of two set on purpose the
 *   later one wins. Of two detected types the one whose definition was first seen earlier wins — the first type
 *   seen wins, as in one process — and one of them only when the other has none. Ties go to the type name that
 *   sorts first, so the choice never depends on who merges.
 */

/** A definition's recorded state: what a `property_definitions` row holds besides its key and version. */
export interface DefinitionState {
  readonly propertyType: PropertyType | null;
  readonly events: readonly string[];
  readonly firstSeenAt: number;
  readonly lastSeenAt: number;
  readonly typeChangedAt: number | null;
}

/** The state that `held` and `stored` make together (the rule above). */
export function mergeDefinition(
  held: DefinitionState,
  stored: DefinitionState,
  maxEvents: number,
): DefinitionState {
  const winner = typeWinner(held, stored);
  return {
    propertyType: winner.propertyType,
    typeChangedAt: winner.typeChangedAt,
    events: unionEvents(stored.events, held.events, maxEvents),
    firstSeenAt: Math.min(held.firstSeenAt, stored.firstSeenAt),
    lastSeenAt: Math.max(held.lastSeenAt, stored.lastSeenAt),
  };
}

/** True when the two would be written as the same row (apart from its version). */
export function sameDefinition(a: DefinitionState, b: DefinitionState): boolean {
  return (
    a.propertyType === b.propertyType &&
    a.typeChangedAt === b.typeChangedAt &&
    a.firstSeenAt === b.firstSeenAt &&
    a.lastSeenAt === b.lastSeenAt &&
    a.events.length === b.events.length &&
    a.events.every((e, i) => e === b.events[i])
  );
}

/** Which of the two gives the merged type (and its `typeChangedAt`). */
function typeWinner(a: DefinitionState, b: DefinitionState): DefinitionState {
  if (a.typeChangedAt !== null || b.typeChangedAt !== null) {
    if (b.typeChangedAt === null) return a;
    if (a.typeChangedAt === null) return b;
    if (a.typeChangedAt !== b.typeChangedAt) return a.typeChangedAt > b.typeChangedAt ? a : b;
    return firstByName(a, b);
  }
  if (a.propertyType === null) return b;
  if (b.propertyType === null) return a;
  if (a.firstSeenAt !== b.firstSeenAt) return a.firstSeenAt < b.firstSeenAt ? a : b;
  return firstByName(a, b);
}

function firstByName(a: DefinitionState, b: DefinitionState): DefinitionState {
  return (a.propertyType ?? '') <= (b.propertyType ?? '') ? a : b;
}

function unionEvents(
  stored: readonly string[],
  held: readonly string[],
  maxEvents: number,
): readonly string[] {
  if (stored.length >= maxEvents) return stored.slice(0, maxEvents);
  let out: string[] | undefined;
  for (const e of held) {
    if (stored.includes(e) || out?.includes(e)) continue;
    out ??= [...stored];
    out.push(e);
    if (out.length >= maxEvents) break;
  }
  return out ?? stored;
}
