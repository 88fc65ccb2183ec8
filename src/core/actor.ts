/**
 * The actor runtime: an actor owns a mailbox and handles one message at a time, so whatever state its
 * handler keeps needs no locks and messages to one actor keep their order. Keyed actors give ordering per
 * key and concurrency across keys.
 *
 * A handler that throws fails only that message (its sender sees the error and retries, as a client does
 * after a 503); the actor goes on with the next message — the supervisor's "restart" here is simply to
 * continue, because an actor's durable state lives in the store, not in the failed call.
 */
export type Handler<M> = (message: M) => Promise<void> | void;

interface Envelope<M> {
  readonly message: M;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class Actor<M> {
  readonly #handler: Handler<M>;
  /** Handled slots are cleared at once: a busy actor's mailbox may go a long while between compactions. */
  #mailbox: (Envelope<M> | undefined)[] = [];
  #head = 0;
  #running = false;
  #idleWaiters: (() => void)[] = [];

  constructor(handler: Handler<M>) {
    this.#handler = handler;
  }

  /** Messages waiting or being handled. */
  get depth(): number {
    return this.#mailbox.length - this.#head + (this.#running ? 1 : 0);
  }

  /** Queues a message; resolves when the handler has finished with it. */
  send(message: M): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#mailbox.push({ message, resolve, reject });
      if (!this.#running) void this.#run();
    });
  }

  /** Resolves once the mailbox is empty and nothing is being handled. */
  idle(): Promise<void> {
    if (this.depth === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #run(): Promise<void> {
    this.#running = true;
    while (this.#head < this.#mailbox.length) {
      const envelope = this.#mailbox[this.#head]!;
      this.#mailbox[this.#head] = undefined;
      this.#head++;
      if (this.#head > 1024 && this.#head * 2 > this.#mailbox.length) {
        this.#mailbox = this.#mailbox.slice(this.#head);
        this.#head = 0;
      }
      try {
        await this.#handler(envelope.message);
        envelope.resolve();
      } catch (err) {
        envelope.reject(err);
      }
    }
    this.#mailbox = [];
    this.#head = 0;
    this.#running = false;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}

/** A fixed set of actors addressed by key (a partition number); one handler factory per actor. */
export class KeyedActors<M> {
  readonly #actors: Actor<M>[];

  constructor(count: number, handlerFor: (index: number) => Handler<M>) {
    this.#actors = Array.from({ length: count }, (_, i) => new Actor(handlerFor(i)));
  }

  get size(): number {
    return this.#actors.length;
  }

  /** Whether the actor of `key` has nothing waiting or under way. */
  isIdle(key: number): boolean {
    return this.#actorOf(key).depth === 0;
  }

  send(key: number, message: M): Promise<void> {
    return this.#actorOf(key).send(message);
  }

  #actorOf(key: number): Actor<M> {
    const actor = this.#actors[key % this.#actors.length];
    if (!actor) throw new RangeError(`no actor for key ${key}`);
    return actor;
  }

  async idle(): Promise<void> {
    await Promise.all(this.#actors.map((a) => a.idle()));
  }
}
