import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../../core/logger.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { IngestBucket } from './ingest-bucket.ts';
import { LeaseView, leaseKey, memberKey, plan } from './lease-view.ts';

/** What holding a unit means: consuming its consumer (partition-consumers.ts). */
export interface LeaseHolder {
  /** Starts consuming `unit`, whose lease was just taken; rejects if it cannot. */
  acquire(unit: string): Promise<void>;
  /** Stops consuming `unit`: stops pulling, finishes and acknowledges what it has in flight. */
  release(unit: string): Promise<void>;
}

export interface PartitionLeasesConfig {
  /** How long a member's record may stand unchanged before its leases are free. */
  readonly leaseMs: number;
  /** Every unit to share, in a fixed order: `historical`, `live-0`, … */
  readonly units: readonly string[];
}

export interface PartitionLeasesDeps {
  readonly bucket: IngestBucket;
  readonly holder: LeaseHolder;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** How long the watch waits before it is started again after it failed. */
const REWATCH_MS = 500;

type UnitState = 'starting' | 'running' | 'stopping' | 'letting-go';

/**
 * This process's membership of the ingest group and the units (live partitions, the historical lane) it holds.
 *
 * Every `leaseMs / 5` the member writes its record, `members.<id>`; the record's changing is what keeps every
 * lease naming it. A lease is a record `leases.<unit>` = `{ owner }`, written only when it changes hands. Others
 * judge a member dead when its record has not changed for `leaseMs` as their own watch saw it. The member
 * itself stops handing batches on once `0.6 × leaseMs` have passed since it sent the last write the server
 * acknowledged: every copy of that write was received by others after it was sent, so it has stopped at
 * least `0.4 × leaseMs` before anyone may take its units.
 *
 * A lease is taken, and handed back, by a write conditional on the bucket's last sequence being the last one
 * this process has applied: it lands only if this process had seen every write to the bucket, the owner's last
 * heartbeat included, so two members cannot both take a unit, and no member takes one on a stale view. (The
 * condition on the bucket rather than the key is also what nats-server before 2.9.21 holds in a cluster.) A
 * write that loses is simply planned again when the watch has delivered what beat it.
 */
export class PartitionLeases {
  readonly #config: PartitionLeasesConfig;
  readonly #deps: PartitionLeasesDeps;
  readonly id = randomBytes(8).toString('hex');
  readonly #view = new LeaseView();
  readonly #units = new Map<string, UnitState>();
  /** Units being started (their consumers made again). */
  readonly #consuming = new Set<Promise<void>>();
  /** Units whose start failed, and when: not taken again for a beat. */
  readonly #failed = new Map<string, number>();
  #validUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopWatch: (() => void) | undefined;
  #serial: Promise<void> = Promise.resolve();
  #working = false;
  #wantBeat = false;
  #wantRound = false;
  #closed = false;

  constructor(config: PartitionLeasesConfig, deps: PartitionLeasesDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  /**
   * Joins: reads the bucket, writes the first heartbeat, and takes what it can of its share now (what is free:
   * units still leased to a live member, or to one not yet judged dead, come later, in the background).
   */
  async start(): Promise<void> {
    await this.#watch();
    await this.#beat();
    this.#timer = setInterval(() => this.#queue(true), Math.max(50, Math.floor(this.#config.leaseMs / 5)));
    this.#timer.unref();
    this.#queue(false);
    await this.#serial;
    await Promise.all(this.#consuming);
  }

  /** Whether `unit` may be handed on now: held, and the lease still renewed in time. */
  holds(unit: string): boolean {
    const state = this.#units.get(unit);
    return (state === 'running' || state === 'starting') && performance.now() < this.#validUntil;
  }

  /** Units held now. */
  held(): string[] {
    return [...this.#units].filter(([, s]) => s === 'running' || s === 'starting').map(([u]) => u);
  }

  /**
   * Leaves: hands every unit over (stops pulling, finishes what is in flight, acknowledges it), then deletes
   * the member record, which frees all its leases at once for the others.
   */
  async stop(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#serial;
    await Promise.all(this.held().map((u) => this.#release(u)));
    try {
      await this.#deps.bucket.write(memberKey(this.id), undefined);
    } catch (err) {
      this.#deps.logger.warn(
        { err },
        'ingest membership not withdrawn; its partitions are free once it expires',
      );
    }
    this.#stopWatch?.();
  }

  /**
   * Asks for a heartbeat (when `beat`) and a round of planning. One runs at a time, in turn, so that this
   * process's writes follow each other; asks made meanwhile are served once, by the next turn.
   */
  #queue(beat: boolean): void {
    if (this.#closed) return;
    if (beat) this.#wantBeat = true;
    this.#wantRound = true;
    if (this.#working) return;
    this.#working = true;
    this.#serial = (async () => {
      while (!this.#closed && (this.#wantBeat || this.#wantRound)) {
        if (this.#wantBeat) {
          this.#wantBeat = false;
          await this.#beat();
        }
        this.#wantRound = false;
        try {
          await this.#round();
        } catch (err) {
          this.#deps.logger.warn({ err }, 'partition leases not balanced this round');
        }
      }
      this.#working = false;
    })();
  }

  async #beat(): Promise<void> {
    const sentAt = performance.now();
    try {
      const seq = await this.#deps.bucket.write(
        memberKey(this.id),
        { host: hostname(), pid: process.pid },
        this.#config.leaseMs * 0.4,
      );
      this.#validUntil = sentAt + this.#config.leaseMs * 0.6;
      this.#own(memberKey(this.id), {}, seq);
    } catch (err) {
      this.#deps.logger.warn({ err }, 'ingest heartbeat not written');
    }
  }

  async #round(): Promise<void> {
    const now = performance.now();
    if (now >= this.#validUntil) return this.#suspend();
    const busy = new Set<string>();
    for (const [u, s] of this.#units) if (s === 'stopping' || s === 'letting-go') busy.add(u);
    for (const [u, at] of this.#failed) if (now - at < this.#config.leaseMs / 5) busy.add(u);
    const moves = plan(this.#view, {
      self: this.id,
      units: this.#config.units,
      held: new Set(this.held()),
      busy,
      now,
      leaseMs: this.#config.leaseMs,
    });
    for (const u of moves.lost) {
      this.#deps.logger.warn(
        { unit: u, owner: this.#view.ownerOf(u) },
        'partition lease lost to another process',
      );
      void this.#release(u);
    }
    for (const u of moves.release) void this.#handOver(u);
    for (const [u, s] of this.#units) if (s === 'letting-go' && !(await this.#unlease(u))) return;
    for (const u of moves.take) if (!(await this.#take(u))) return;
    await this.#sweep(now);
  }

  /** Takes `unit`'s lease and starts consuming it; false when another write came first. */
  async #take(unit: string): Promise<boolean> {
    if (performance.now() >= this.#validUntil) return false;
    const previous = this.#view.ownerOf(unit);
    const expired = previous !== undefined && previous !== this.id;
    const seq = await this.#deps.bucket.writeIf(leaseKey(unit), { owner: this.id }, this.#view.head);
    if (seq === undefined) return false;
    this.#own(leaseKey(unit), { owner: this.id }, seq);
    if (expired && this.#view.isExpired(previous, performance.now(), this.#config.leaseMs))
      this.#deps.metrics.busPartitionTakeovers.inc({ lane: laneOf(unit) });
    this.#units.set(unit, 'starting');
    this.#gauge();
    this.#deps.logger.info({ unit, from: previous }, 'partition lease taken');
    const consuming = this.#consume(unit);
    this.#consuming.add(consuming);
    void consuming.then(() => this.#consuming.delete(consuming));
    return true;
  }

  /** Starts consuming a unit just taken (in the background: the next takes and heartbeats need not wait). */
  async #consume(unit: string): Promise<void> {
    try {
      await this.#deps.holder.acquire(unit);
      if (this.#units.get(unit) === 'starting') this.#units.set(unit, 'running');
    } catch (err) {
      this.#deps.logger.warn({ err, unit }, 'partition not consumed; trying again');
      this.#failed.set(unit, performance.now());
      if (this.#units.get(unit) === 'starting') this.#units.delete(unit);
      this.#gauge();
    }
  }

  /** Stops consuming `unit` (lost, suspended, or leaving); its lease is left as it is. */
  async #release(unit: string): Promise<void> {
    this.#units.set(unit, 'stopping');
    this.#gauge();
    try {
      await this.#deps.holder.release(unit);
    } catch (err) {
      this.#deps.logger.warn({ err, unit }, 'partition consumer not stopped cleanly');
    } finally {
      if (this.#units.get(unit) === 'stopping') this.#units.delete(unit);
    }
  }

  /** Hands `unit` over to a member with less than its share: stops consuming it, then gives the lease back. */
  async #handOver(unit: string): Promise<void> {
    this.#deps.logger.info({ unit }, 'partition handed over (rebalancing)');
    await this.#release(unit);
    this.#units.set(unit, 'letting-go');
    this.#queue(false);
  }

  /** Deletes the lease of a unit let go, if it still names this process; false when another write came first. */
  async #unlease(unit: string): Promise<boolean> {
    if (this.#view.ownerOf(unit) !== this.id) {
      this.#units.delete(unit);
      return true;
    }
    const seq = await this.#deps.bucket.writeIf(leaseKey(unit), undefined, this.#view.head);
    if (seq === undefined) return false;
    this.#own(leaseKey(unit), undefined, seq);
    this.#units.delete(unit);
    return true;
  }

  /** Cannot renew in time: stops handing on every unit before another member may take it. */
  #suspend(): void {
    const held = this.held();
    if (held.length === 0) return;
    this.#deps.logger.warn({ units: held }, 'ingest heartbeat late: partitions stopped until it is renewed');
    for (const u of held) void this.#release(u);
  }

  /** The lowest member deletes records of members gone for three leases (processes that died). */
  async #sweep(now: number): Promise<void> {
    const members = this.#view.liveMembers(this.id, now, this.#config.leaseMs);
    if (members[0] !== this.id) return;
    for (const id of this.#view.staleMembers(now, this.#config.leaseMs * 3)) {
      if (id === this.id) continue;
      const seq = await this.#deps.bucket.write(memberKey(id), undefined);
      this.#own(memberKey(id), undefined, seq);
    }
  }

  /** Applies this process's own write at `seq` without waiting for the watch to deliver it. */
  #own(key: string, value: unknown, seq: number): void {
    this.#view.apply(key, value, seq, performance.now());
    this.#view.advance(seq);
  }

  #gauge(): void {
    const held = this.held();
    this.#deps.metrics.busPartitionsHeld.set({ lane: 'live' }, held.filter((u) => u !== 'historical').length);
    this.#deps.metrics.busPartitionsHeld.set({ lane: 'historical' }, held.includes('historical') ? 1 : 0);
  }

  /**
   * Watches the whole bucket and resolves once it has delivered what the bucket held when the watch began;
   * a watch that fails later is started again (it delivers every record anew).
   */
  async #watch(): Promise<void> {
    const kv = this.#deps.bucket.kv;
    const last = await this.#deps.bucket.lastSequence();
    const watcher = await kv.watch();
    this.#stopWatch = () => watcher.stop();
    let caughtUp!: () => void;
    let failed!: (err: unknown) => void;
    const initial = new Promise<void>((resolve, reject) => {
      caughtUp = resolve;
      failed = reject;
    });
    let ran = last === 0;
    if (ran) caughtUp();
    void (async () => {
      try {
        for await (const e of watcher) {
          this.#view.apply(
            e.key,
            e.operation === 'PUT' ? e.json() : undefined,
            e.revision,
            performance.now(),
          );
          this.#view.delivered(e.revision);
          if (e.revision >= last) {
            ran = true;
            caughtUp();
          }
          this.#queue(false);
        }
      } catch (err) {
        // Before the content is loaded, whoever started the watch fails; after, it is started again.
        if (!ran) return failed(err);
        this.#deps.logger.warn({ err }, 'ingest lease watch failed; watching again');
      }
      if (!ran) return failed(new Error('the ingest lease watch ended before it had read the bucket'));
      while (!this.#closed) {
        await new Promise((r) => setTimeout(r, REWATCH_MS));
        try {
          if (!this.#closed) await this.#watch();
          return;
        } catch {
          // NATS is still away: try again.
        }
      }
    })();
    await initial;
  }
}

/** The lane of a unit, for the metrics. */
function laneOf(unit: string): string {
  return unit === 'historical' ? 'historical' : 'live';
}
