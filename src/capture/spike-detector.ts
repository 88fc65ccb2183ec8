/**
 * Spike detection (SPEC §2): a token bucket per (project, distinct_id). Live events within the bucket stay
 * on the live path; a burst beyond it goes to overflow — processed later, never dropped — so one hot
 * distinct_id cannot hold up everyone else's partition. Buckets that have refilled are forgotten, so memory
 * follows the number of recently active ids, not all ids ever seen.
 */
export interface SpikeDetectorOptions {
  /** Sustained events per second per key. @default 100 */
  readonly ratePerSecond: number;
  /** Bucket size: how many events a key may send at once. @default 1000 */
  readonly burst: number;
}

interface Bucket {
  tokens: number;
  last: number;
}

export class SpikeDetector {
  readonly #rate: number;
  readonly #burst: number;
  /**
   * Per project, keyed by the event's own distinct_id string: a key made of both would be a new string for
   * every event, hashed anew at each lookup (the string the event carries keeps its hash once computed).
   */
  readonly #projects = new Map<number, Map<string, Bucket>>();
  #lastSweep = 0;

  constructor(options: SpikeDetectorOptions) {
    this.#rate = options.ratePerSecond / 1000;
    this.#burst = options.burst;
  }

  /** Takes one token for the key; false means the event belongs on the overflow path. */
  allow(projectId: number, distinctId: string, now: number): boolean {
    if (now - this.#lastSweep > 60_000) this.#sweep(now);
    let buckets = this.#projects.get(projectId);
    if (!buckets) {
      buckets = new Map();
      this.#projects.set(projectId, buckets);
    }
    let bucket = buckets.get(distinctId);
    if (!bucket) {
      bucket = { tokens: this.#burst, last: now };
      buckets.set(distinctId, bucket);
    } else {
      bucket.tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.last) * this.#rate);
      bucket.last = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  get trackedKeys(): number {
    let keys = 0;
    for (const buckets of this.#projects.values()) keys += buckets.size;
    return keys;
  }

  #sweep(now: number): void {
    this.#lastSweep = now;
    const full = this.#burst / this.#rate;
    for (const [projectId, buckets] of this.#projects) {
      for (const [distinctId, bucket] of buckets) {
        if (now - bucket.last >= full) buckets.delete(distinctId);
      }
      if (buckets.size === 0) this.#projects.delete(projectId);
    }
  }
}
