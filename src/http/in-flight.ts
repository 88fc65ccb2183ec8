/**
 * Counts requests in progress so a graceful shutdown can stop taking new ones and wait for the rest.
 */
export class InFlight {
  #count = 0;
  #accepting = true;
  #waiters: (() => void)[] = [];

  get accepting(): boolean {
    return this.#accepting;
  }

  get count(): number {
    return this.#count;
  }

  begin(): void {
    this.#count++;
  }

  end(): void {
    this.#count--;
    if (this.#count === 0 && !this.#accepting) this.#release();
  }

  /** Refuses new requests from now on; resolves when the last one in progress has finished. */
  drain(): Promise<void> {
    this.#accepting = false;
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #release(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
