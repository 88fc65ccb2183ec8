import type { ReadKind } from '../../core/ports.ts';
import { asError } from '../../errors/app-error.ts';

/**
 * Who a chDB call is for: the store's own work (applying the commit log, ingest's person and group lookups,
 * schema statements), or a reader of the query API and endpoint runs.
 */
export type GatePriority = 'store' | 'reader';

/** A call given up unrun: it waited for its turn longer than it was allowed to. */
export class EngineWaitTimeout extends Error {
  override name = 'EngineWaitTimeout';
  readonly waitedMs: number;

  constructor(waitedMs: number, maxWaitMs: number) {
    super(
      `waited ${seconds(waitedMs)} s for the engine, busy with other work, longer than the ${seconds(maxWaitMs)} s allowed`,
    );
    this.waitedMs = waitedMs;
  }
}

/** Milliseconds as seconds to a tenth, without a trailing `.0`. */
function seconds(ms: number): number {
  return Number((ms / 1000).toFixed(1));
}

interface Waiting {
  readonly since: number;
  readonly maxWaitMs: number;
  /** Runs the call in the place just handed over. */
  readonly start: () => void;
  /** Gives the call up unrun. */
  readonly expire: (waitedMs: number) => void;
}

/**
 * The queue in front of chDB, which runs one statement at a time. Left to itself, chdb-node queues the calls
 * in arrival order: parameterised queries in one promise chain of its own, any other call on a thread of
 * Node's libuv pool, which it holds while it waits for the engine. So:
 * - ingest's person lookups, and the commit log's apply, queued behind every query of the query API and of
 *   endpoint runs that came before them, and capture, which answers once ingest has stored its events, waited
 *   for all of those queries, so a first-seen user's single event waited for every query queued before it.
 * - calls that are not parameterised take a pool thread each while they wait, and the pool has four: the
 *   file system's calls (the commit log's, before it had a thread of its own) then wait too: an fdatasync
 *   issued behind eight such queries finished seconds later.
 *
 * The gate lets `limit` calls (one: the engine would run no more at once) go to chDB and keeps the rest here,
 * where they hold no thread, and it lets the store's own work go before readers, so a query that is waiting
 * holds up ingest for no longer than the one statement that is running. Readers keep their arrival order
 * among themselves, and so does the store's work.
 *
 * The store's client (chdb-client.ts) now sends only its own calls here: reads run on connections of their
 * own behind ReaderGate (below), so none of them holds up ingest at all. `reader` stays for a caller with
 * one connection.
 *
 * A call that fails is followed by `clear` in its own turn, before the next call starts. chDB 3.4 answers a
 * statement that fails part-way with its error but leaves what it had written (a header of names and types,
 * rows) in the connection's output buffer, and the next statement that succeeds gets that buffer whole, its
 * own answer after the leftover: a query read another's column names and types as rows, and ingest's
 * lookups would have read them as rows too. With a limit above one, calls share the connection and `clear`
 * cannot keep them apart: the store runs with one.
 */
export class ChdbGate {
  readonly #limit: number;
  readonly #onWaiting: ((waiting: number) => void) | undefined;
  readonly #now: () => number;
  readonly #clear: (() => Promise<unknown>) | undefined;
  /** The last `clear` failed: what a failed call left may still be there, so the next call clears first. */
  #unclean = false;
  #running = 0;
  readonly #store: Waiting[] = [];
  readonly #readers: Waiting[] = [];

  /**
   * `onWaiting` hears how many calls wait, whenever that changes (for a metric); `now` is the clock, in ms;
   * `clear` is a call that succeeds and so takes what a failed call left on the connection.
   */
  constructor(
    options: {
      readonly limit?: number;
      readonly onWaiting?: (waiting: number) => void;
      readonly now?: () => number;
      readonly clear?: () => Promise<unknown>;
    } = {},
  ) {
    this.#limit = Math.max(1, options.limit ?? 1);
    this.#onWaiting = options.onWaiting;
    this.#now = options.now ?? (() => performance.now());
    this.#clear = options.clear;
  }

  /** Calls waiting for their turn. */
  get waiting(): number {
    return this.#store.length + this.#readers.length;
  }

  /**
   * Runs `work` (one chDB call) when its turn comes; settles as it does. A call still waiting after
   * `maxWaitMs` is given up when its turn comes, without running (EngineWaitTimeout): a reader whose caller
   * has had its answer (a timeout) by then would only hold up the calls behind it.
   */
  run<T>(priority: GatePriority, work: () => Promise<T>, maxWaitMs = Infinity): Promise<T> {
    if (this.#running < this.#limit) {
      this.#running++;
      return this.#execute(work);
    }
    return new Promise<T>((resolve, reject) => {
      (priority === 'store' ? this.#store : this.#readers).push({
        since: this.#now(),
        maxWaitMs,
        start: () => {
          this.#execute(work).then(resolve, reject);
        },
        expire: (waitedMs) => reject(new EngineWaitTimeout(waitedMs, maxWaitMs)),
      });
      this.#onWaiting?.(this.waiting);
    });
  }

  #execute<T>(work: () => Promise<T>): Promise<T> {
    return this.#turn(work).finally(() => this.#release());
  }

  /**
   * One turn: `work`, cleared after if it fails. The caller of a failed call hears its own error, not the
   * clear's. A call whose turn comes while a clear is still owed clears first, and fails with the clear's
   * error if it fails again: its answer would begin with another call's bytes.
   */
  async #turn<T>(work: () => Promise<T>): Promise<T> {
    if (this.#unclean) await this.#clearNow();
    try {
      return await work();
    } catch (err) {
      if (this.#clear) await this.#clearNow().catch(() => undefined);
      throw asError(err);
    }
  }

  async #clearNow(): Promise<void> {
    this.#unclean = true;
    await this.#clear?.();
    this.#unclean = false;
  }

  /**
   * Hands the finished call's place to the next in line (the store's work first), giving up on the way those
   * that waited too long; or frees the place.
   */
  #release(): void {
    let expired = false;
    for (;;) {
      const next = this.#store.shift() ?? this.#readers.shift();
      if (!next) {
        this.#running--;
        if (expired) this.#onWaiting?.(0);
        return;
      }
      const waited = this.#now() - next.since;
      if (waited > next.maxWaitMs) {
        next.expire(waited);
        expired = true;
        continue;
      }
      this.#onWaiting?.(this.waiting);
      next.start();
      return;
    }
  }
}

/** A read refused unrun: its project already has its limit of ad-hoc queries running or waiting. */
export class EngineThrottled extends Error {
  override name = 'EngineThrottled';

  constructor(project: number, limit: number) {
    super(
      `project ${project} already has ${limit} ad-hoc ${limit === 1 ? 'query' : 'queries'} running or waiting for the engine, its limit (WEIR_QUERY_ADHOC_CONCURRENCY)`,
    );
  }
}

/** One read for the reader gate: whose it is, what for, and how long it may wait. */
export interface GateRead {
  /** The project it reads (absent: a read of no project's, which queues as a project of its own). */
  readonly project?: number;
  readonly kind: ReadKind;
  readonly maxWaitMs?: number;
}

/** What the reader gate tells the metrics. */
export interface ReaderGateObserver {
  /** Reads waiting and running, by kind, whenever they change. */
  changed?(waiting: Readonly<Record<ReadKind, number>>, running: Readonly<Record<ReadKind, number>>): void;
  /** A read's wait for a connection, in ms, when it starts (or is given up). */
  waited?(kind: ReadKind, ms: number): void;
  /** A read refused: its project's ad-hoc limit, or its wait too long. */
  refused?(kind: ReadKind, reason: 'adhoc_limit' | 'wait_timeout'): void;
}

interface WaitingRead {
  readonly since: number;
  readonly maxWaitMs: number;
  readonly kind: ReadKind;
  /** Runs the read on the connection `slot`. */
  readonly startOn: (slot: number) => void;
  /** Gives the read up unrun. */
  readonly expire: (waitedMs: number) => void;
}

const NO_PROJECT = -1;

/**
 * The queue in front of the engine's reader connections (the query API, endpoint runs on raw data,
 * materialization refreshes). chDB runs statements side by side on separate connections to one data directory,
 * so reads run on `connections` connections of their own, apart from
 * the store's (ChdbGate): ingest's lookups and the commit log's apply never wait for a read.
 *
 * Fair between projects: each project's reads wait in a queue of their own, and a free connection goes to the
 * project served least recently, so a project with many reads waiting delays another's by at most one of its
 * reads. A project runs at most `perProject` reads at once, so with more connections
 * than that a heavy query of one project always leaves a connection to the others. A project has at most
 * `adhocPerProject` ad-hoc queries running or waiting; one more is refused at once (EngineThrottled).
 *
 * Each connection runs one statement at a time, and a connection whose call failed is cleared (`clear`, on
 * that connection) before its next: what a failed statement leaves on a connection stays on that connection
 * (see ChdbGate; the measurement above checked that other connections do not see it).
 */
export class ReaderGate {
  readonly #perProject: number;
  readonly #adhocPerProject: number;
  readonly #now: () => number;
  readonly #clear: ((slot: number) => Promise<unknown>) | undefined;
  readonly #observer: ReaderGateObserver;
  readonly #free: number[] = [];
  readonly #unclean: boolean[];
  /** Waiting reads by project, the projects in the order they first had one waiting. */
  readonly #queues = new Map<number, WaitingRead[]>();
  /** When each project with reads waiting or running was last served (a count of reads started). */
  readonly #served = new Map<number, number>();
  #turns = 0;
  readonly #running = new Map<number, number>();
  readonly #adhoc = new Map<number, number>();
  readonly #waitingByKind: Record<ReadKind, number> = { adhoc: 0, endpoint: 0, materialize: 0 };
  readonly #runningByKind: Record<ReadKind, number> = { adhoc: 0, endpoint: 0, materialize: 0 };

  constructor(options: {
    readonly connections: number;
    readonly perProject?: number;
    readonly adhocPerProject?: number;
    readonly now?: () => number;
    /** A call that succeeds on connection `slot`, and so takes what a failed call left there. */
    readonly clear?: (slot: number) => Promise<unknown>;
    readonly observer?: ReaderGateObserver;
  }) {
    const connections = Math.max(1, options.connections);
    for (let i = connections - 1; i >= 0; i--) this.#free.push(i);
    this.#unclean = new Array<boolean>(connections).fill(false);
    this.#perProject = Math.max(1, options.perProject ?? Infinity);
    this.#adhocPerProject = Math.max(1, options.adhocPerProject ?? Infinity);
    this.#now = options.now ?? (() => performance.now());
    this.#clear = options.clear;
    this.#observer = options.observer ?? {};
  }

  /** Reads waiting for a connection. */
  get waiting(): number {
    return this.#waitingByKind.adhoc + this.#waitingByKind.endpoint + this.#waitingByKind.materialize;
  }

  /**
   * Runs `work` (one read, on the connection `slot` it is given) when its turn comes; settles as it does.
   * An ad-hoc read past its project's limit is refused at once (EngineThrottled); a read still waiting after
   * `maxWaitMs` is given up when its turn comes, without running (EngineWaitTimeout).
   */
  run<T>(read: GateRead, work: (slot: number) => Promise<T>): Promise<T> {
    const project = read.project ?? NO_PROJECT;
    const { kind } = read;
    if (kind === 'adhoc') {
      const adhoc = this.#adhoc.get(project) ?? 0;
      if (adhoc >= this.#adhocPerProject) {
        this.#observer.refused?.(kind, 'adhoc_limit');
        return Promise.reject(new EngineThrottled(project, this.#adhocPerProject));
      }
      this.#adhoc.set(project, adhoc + 1);
    }
    const maxWaitMs = read.maxWaitMs ?? Infinity;
    const done = new Promise<T>((resolve, reject) => {
      const since = this.#now();
      const startOn = (slot: number): void => {
        this.#observer.waited?.(kind, this.#now() - since);
        this.#running.set(project, (this.#running.get(project) ?? 0) + 1);
        this.#runningByKind[kind]++;
        this.#turn(slot, work)
          .finally(() => {
            this.#runningByKind[kind]--;
            const n = (this.#running.get(project) ?? 1) - 1;
            if (n > 0) this.#running.set(project, n);
            else {
              this.#running.delete(project);
              if (!this.#queues.has(project)) this.#served.delete(project);
            }
            this.#free.push(slot);
            this.#dispatch();
          })
          .then(resolve, reject);
      };
      const waiting: WaitingRead = {
        since,
        maxWaitMs,
        kind,
        startOn,
        expire: (waitedMs) => {
          this.#observer.waited?.(kind, waitedMs);
          this.#observer.refused?.(kind, 'wait_timeout');
          reject(new EngineWaitTimeout(waitedMs, maxWaitMs));
        },
      };
      const queue = this.#queues.get(project);
      if (queue) queue.push(waiting);
      else this.#queues.set(project, [waiting]);
      this.#waitingByKind[kind]++;
      this.#dispatch();
    });
    if (kind !== 'adhoc') return done;
    const release = (): void => {
      const n = (this.#adhoc.get(project) ?? 1) - 1;
      if (n === 0) this.#adhoc.delete(project);
      else this.#adhoc.set(project, n);
    };
    done.then(release, release);
    return done;
  }

  /** Starts waiting reads on free connections, projects in turn; gives up those that waited too long. */
  #dispatch(): void {
    while (this.#free.length > 0) {
      const next = this.#next();
      if (!next) break;
      next.startOn(this.#free.pop()!);
    }
    this.#observer.changed?.(this.#waitingByKind, this.#runningByKind);
  }

  /**
   * The next read to start: the head of the queue of the project served least recently (never, first) among
   * those under their limit; of two alike, the one waiting longest.
   */
  #next(): WaitingRead | undefined {
    for (;;) {
      let project: number | undefined;
      let queue: WaitingRead[] | undefined;
      let served = Infinity;
      for (const [p, q] of this.#queues) {
        if ((this.#running.get(p) ?? 0) >= this.#perProject) continue;
        const s = this.#served.get(p) ?? -1;
        if (s < served) [project, queue, served] = [p, q, s];
      }
      if (project === undefined || !queue) return undefined;
      const read = queue.shift()!;
      if (queue.length === 0) this.#queues.delete(project);
      this.#waitingByKind[read.kind]--;
      const waited = this.#now() - read.since;
      if (waited > read.maxWaitMs) {
        read.expire(waited);
        continue;
      }
      this.#served.set(project, ++this.#turns);
      return read;
    }
  }

  /** One read on `slot`, cleared after if it fails; a connection still owing a clear clears first. */
  async #turn<T>(slot: number, work: (slot: number) => Promise<T>): Promise<T> {
    if (this.#unclean[slot]) await this.#clearNow(slot);
    try {
      return await work(slot);
    } catch (err) {
      if (this.#clear) await this.#clearNow(slot).catch(() => undefined);
      throw asError(err);
    }
  }

  async #clearNow(slot: number): Promise<void> {
    this.#unclean[slot] = true;
    await this.#clear?.(slot);
    this.#unclean[slot] = false;
  }
}
