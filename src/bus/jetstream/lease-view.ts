/**
 * What one ingest process knows of the `weir_ingest` bucket (members' heartbeats, partitions' leases), as its
 * watch delivered it, and what it should do about its share (`plan`). No I/O and no clock of its own: the
 * caller passes the time, read from its monotonic clock, so whether a record is stale is judged by how long
 * this process has seen it unchanged, never by comparing clocks of two machines.
 */

/** A member's heartbeat record, by member id: `members.<id>`. */
export const memberKey = (id: string): string => `members.${id}`;
/** A unit's lease record (`live-<n>` or `historical`): `leases.<unit>`, holding `{ owner }`. */
export const leaseKey = (unit: string): string => `leases.${unit}`;

interface Seen {
  readonly revision: number;
  /** When this process last received the record (monotonic ms). */
  readonly seenAt: number;
}

interface Lease {
  readonly revision: number;
  readonly owner: string;
}

export class LeaseView {
  /** Every write to the bucket up to this sequence is applied. */
  head = 0;
  readonly #members = new Map<string, Seen>();
  readonly #leases = new Map<string, Lease>();

  /**
   * Applies a record as received (`value` undefined: deleted). Records come in sequence order, but this
   * process applies its own writes when their acks arrive, perhaps ahead of the watch: an older revision of a
   * key than the one held is ignored, except that a member's record received again counts as seen now.
   */
  apply(key: string, value: unknown, revision: number, now: number): void {
    if (key.startsWith('members.')) {
      const id = key.slice('members.'.length);
      const known = this.#members.get(id);
      if (known && known.revision > revision) return;
      if (value === undefined) this.#members.delete(id);
      else this.#members.set(id, { revision, seenAt: now });
    } else if (key.startsWith('leases.')) {
      const unit = key.slice('leases.'.length);
      const known = this.#leases.get(unit);
      if (known && known.revision >= revision) return;
      const owner = (value as { owner?: unknown } | undefined)?.owner;
      if (typeof owner === 'string') this.#leases.set(unit, { revision, owner });
      else this.#leases.delete(unit);
    }
  }

  /** Notes a sequence as applied: the head moves only over a write that directly follows it. */
  advance(revision: number): void {
    if (revision === this.head + 1) this.head = revision;
  }

  /** Moves the head to a sequence the watch delivered (everything before it has been delivered too). */
  delivered(revision: number): void {
    if (revision > this.head) this.head = revision;
  }

  ownerOf(unit: string): string | undefined {
    return this.#leases.get(unit)?.owner;
  }

  /** A member whose record this process has received within `leaseMs` (itself always counts). */
  isLive(id: string, self: string, now: number, leaseMs: number): boolean {
    if (id === self) return true;
    const seen = this.#members.get(id);
    return seen !== undefined && now - seen.seenAt <= leaseMs;
  }

  /** Whether `id` has a record that has stood unchanged for longer than `leaseMs` (it stopped beating). */
  isExpired(id: string, now: number, leaseMs: number): boolean {
    const seen = this.#members.get(id);
    return seen !== undefined && now - seen.seenAt > leaseMs;
  }

  /** The live members' ids, sorted (with `self`). */
  liveMembers(self: string, now: number, leaseMs: number): string[] {
    const ids = [...this.#members.keys()].filter((id) => this.isLive(id, self, now, leaseMs));
    if (!ids.includes(self)) ids.push(self);
    return ids.sort();
  }

  /** Members unseen for `afterMs` (their records are left behind by processes that died). */
  staleMembers(now: number, afterMs: number): string[] {
    return [...this.#members].filter(([, s]) => now - s.seenAt > afterMs).map(([id]) => id);
  }
}

export interface PlanInput {
  readonly self: string;
  /** Every unit there is to hold, in a fixed order. */
  readonly units: readonly string[];
  /** Units this process consumes or is starting to. */
  readonly held: ReadonlySet<string>;
  /** Units this process is stopping, has let go, or must not take again yet: never taken this round. */
  readonly busy: ReadonlySet<string>;
  readonly now: number;
  readonly leaseMs: number;
}

export interface Plan {
  /** Held units whose lease names another owner now: stop at once. */
  readonly lost: string[];
  /** Held units over this process's share: hand over. */
  readonly release: string[];
  /** Units to take (free, expired, or still leased to this process), best first. */
  readonly take: string[];
}

/**
 * This process's share of the units — `units / members`, the first `units mod members` members (by id) taking
 * one more, so that every member's view of the same members gives shares that add up — and the moves towards
 * it. A unit leased to another live member is never taken: that member hands it over when it sees it holds
 * more than its share. A unit whose owner has no record (it left) or a record unchanged for longer than the
 * lease is free.
 */
export function plan(view: LeaseView, input: PlanInput): Plan {
  const { self, units, held, busy, now, leaseMs } = input;
  const lost = [...held].filter((u) => view.ownerOf(u) !== self);
  const keep = [...held].filter((u) => view.ownerOf(u) === self);
  const members = view.liveMembers(self, now, leaseMs);
  const rank = members.indexOf(self);
  const share = Math.floor(units.length / members.length) + (rank < units.length % members.length ? 1 : 0);
  if (keep.length > share) {
    // The last units in the fixed order go first, so two members agree on what moves.
    const release = keep.sort((a, b) => units.indexOf(b) - units.indexOf(a)).slice(0, keep.length - share);
    return { lost, release, take: [] };
  }
  const mine: string[] = [];
  const free: string[] = [];
  // Members start looking at different places, so that several taking at once seldom want the same unit.
  const start = Math.floor((rank * units.length) / members.length);
  for (let i = 0; i < units.length; i++) {
    const unit = units[(start + i) % units.length]!;
    if (held.has(unit) || busy.has(unit)) continue;
    const owner = view.ownerOf(unit);
    if (owner === self) mine.push(unit);
    else if (owner === undefined || !view.isLive(owner, self, now, leaseMs)) free.push(unit);
  }
  return { lost, release: [], take: [...mine, ...free].slice(0, Math.max(0, share - keep.length)) };
}
