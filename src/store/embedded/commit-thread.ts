import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

const ENTRY = join(import.meta.dirname, '../../../bin/commit-thread.js');

interface Reply {
  readonly id: number;
  readonly error: { readonly message: string; readonly code?: string } | null;
}

type Callback = (err: NodeJS.ErrnoException | null) => void;

/**
 * The commit log's file calls (its `LogIo`) on a thread of their own (bin/commit-thread.js), which writes and
 * syncs each commit with blocking calls and answers it once it is durable.
 *
 * Why not node:fs's callbacks: each call is a trip through libuv's pool, and a commit took two (write, then
 * fdatasync), each handed over by the main thread on one of its turns and answered on another, and on a VM a
 * thread woken from sleep costs steal besides its own CPU. Here a commit is one message each way; the thread
 * starts the next write as soon as a sync returns, without waiting for the main thread, and commits that
 * queued meanwhile share one write and one sync: commits are faster, cheaper and capture's tail lower than
 * through the pool.
 *
 * A commit's bytes are copied once, into a buffer handed over to the thread.
 */
export class CommitThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, Callback>();
  #nextId = 0;
  /** Set once the thread is gone: every commit fails with it from then on. */
  #dead: Error | undefined;

  /** `entry`: the thread's script; tests give one that fails. */
  constructor(entry: string = ENTRY) {
    // No execArgv: the thread needs no loader, and inheriting one (tsx, a test runner's) costs it seconds.
    this.#worker = new Worker(entry, { name: 'weir-commit-log', execArgv: [] });
    // Keeps the process alive only while a commit is under way: a log nobody closes must not hold it open.
    this.#worker.unref();
    this.#worker.on('message', (reply: Reply) => this.#answer(reply));
    this.#worker.on('error', (err) => this.#die(err));
    this.#worker.on('exit', (code) =>
      this.#die(new Error(`the commit log's thread stopped (exit code ${code})`)),
    );
  }

  commit(fd: number, parts: readonly Buffer[], position: number, sync: boolean, callback: Callback): void {
    if (this.#dead) {
      const err = this.#dead;
      queueMicrotask(() => callback(err));
      return;
    }
    let length = 0;
    for (const part of parts) length += part.length;
    const data = new Uint8Array(length);
    let at = 0;
    for (const part of parts) {
      data.set(part, at);
      at += part.length;
    }
    const id = this.#nextId++;
    if (this.#waiting.size === 0) this.#worker.ref();
    this.#waiting.set(id, callback);
    this.#worker.postMessage({ id, fd, position, sync, data: data.buffer }, [data.buffer]);
  }

  /** Stops the thread; commits still under way fail. */
  async close(): Promise<void> {
    this.#dead ??= new Error('the commit log is closed');
    await this.#worker.terminate();
  }

  #answer(reply: Reply): void {
    const callback = this.#waiting.get(reply.id);
    if (!callback) return;
    this.#waiting.delete(reply.id);
    if (this.#waiting.size === 0) this.#worker.unref();
    if (reply.error === null) callback(null);
    else callback(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
  }

  #die(err: Error): void {
    this.#dead ??= err;
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    this.#worker.unref();
    for (const callback of waiting) callback(this.#dead);
  }
}
