import type { MessagePort } from 'node:worker_threads';
import type { EventBatch } from '../core/event.ts';
import type { Bus, Project } from '../core/ports.ts';
import { AppError, toAppError } from '../errors/app-error.ts';
import type { ErrorCode } from '../errors/codes.ts';

/**
 * The Bus of a capture thread: every publish goes to the main thread, which hands it to its own bus (embedded
 * or JetStream) and answers when that bus says the events are durable — or refuses them, with the error
 * capture answers. A turn's publishes travel as one message, and so do the answers of a turn on the way back:
 * under load the per-message cost is paid once for many requests.
 */
export class ThreadBus implements Bus {
  readonly #port: Pick<MessagePort, 'postMessage'>;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (err: unknown) => void }>();
  #outbox: PublishItem[] = [];
  #scheduled = false;
  #next = 1;

  constructor(port: Pick<MessagePort, 'postMessage'>) {
    this.#port = port;
  }

  publish(batches: readonly EventBatch[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      this.#waiting.set(id, { resolve, reject });
      this.#outbox.push({ id, batches });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** The main thread's answers to earlier publishes. */
  settle(results: readonly PublishResult[]): void {
    for (const r of results) {
      const w = this.#waiting.get(r.id);
      if (!w) continue;
      this.#waiting.delete(r.id);
      if (r.error) w.reject(fromWire(r.error));
      else w.resolve();
    }
  }

  /** Readiness is the main thread's to tell (it serves `/_ready`). */
  isReady(): boolean {
    return true;
  }

  async close(): Promise<void> {
    await Promise.resolve();
  }

  #flush(): void {
    this.#scheduled = false;
    const items = this.#outbox;
    this.#outbox = [];
    const message: ToMain = { type: 'publish', items };
    this.#port.postMessage(message);
  }
}

/** One request's publish, as it crosses to the main thread. */
export interface PublishItem {
  readonly id: number;
  readonly batches: readonly EventBatch[];
}

/** The main thread's answer to one publish: nothing on success, else the error capture answers with. */
export interface PublishResult {
  readonly id: number;
  readonly error?: WireError;
}

/** An AppError as plain data (what crosses between threads). */
export interface WireError {
  readonly code: ErrorCode;
  readonly detail: string;
  readonly attr: string | null;
  readonly retriable: boolean;
  readonly retryAfterSeconds: number | undefined;
}

export function toWire(err: unknown): WireError {
  const e = toAppError(err);
  // A cause stays on the main thread, where it is logged; its text never reaches a client anyway.
  return {
    code: e.code,
    detail: e.message,
    attr: e.attr,
    retriable: e.retriable,
    retryAfterSeconds: e.retryAfterSeconds,
  };
}

function fromWire(w: WireError): AppError {
  return new AppError(w.code, {
    detail: w.detail,
    attr: w.attr ?? undefined,
    retriable: w.retriable,
    retryAfterSeconds: w.retryAfterSeconds,
  });
}

/** Messages from a capture thread to the main thread. */
export type ToMain =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'publish'; readonly items: readonly PublishItem[] }
  | { readonly type: 'metrics'; readonly id: number; readonly metrics: unknown }
  | { readonly type: 'drained' }
  | { readonly type: 'failed'; readonly message: string };

/** Messages from the main thread to a capture thread. */
export type ToThread =
  | { readonly type: 'published'; readonly results: readonly PublishResult[] }
  | { readonly type: 'projects'; readonly projects: readonly ThreadProject[] }
  | { readonly type: 'metrics'; readonly id: number }
  | { readonly type: 'drain'; readonly timeoutMs: number }
  | { readonly type: 'stop' };

/**
 * What a capture thread knows of a project: the whole record (its key, its settings, its suppressions), which
 * is plain data and crosses to a thread as it is.
 */
export type ThreadProject = Project;
