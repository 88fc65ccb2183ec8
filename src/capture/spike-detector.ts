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
  #buckets = new Map<string, Bucket>();
  #lastSweep = 0;

  constructor(options: SpikeDetectorOptions) {
    this.#rate = options.ratePerSecond / 1000;
    this.#burst = options.burst;
  }

  /** Takes one token for the key; false means the event belongs on the overflow path. */
  allow(projectId: number, distinctId: string, now: number): boolean {
    if (now - this.#lastSweep > 60_000) this.#sweep(now);
    const key = `${projectId}:${distinctId}`;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: this.#burst, last: now };
      this.#buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.last) * this.#rate);
      bucket.last = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  get trackedKeys(): number {
    return this.#buckets.size;
  }

  #sweep(now: number): void {
    this.#lastSweep = now;
    const full = this.#burst / this.#rate;
    for (const [key, bucket] of this.#buckets) {
      if (now - bucket.last >= full) this.#buckets.delete(key);
    }
  }
}
